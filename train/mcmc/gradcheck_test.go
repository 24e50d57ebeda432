package mcmc

import (
	"math"
	"testing"
)

// TestCheckGradient on log p(x) = 9 log θ + 16 log(1 − θ) − ½x₁²e^{x₀} with θ = σ(x₀): the
// correct gradient passes, a sign error in ∂/∂x₁ and a forgotten term of ∂/∂x₀ are caught.
func TestCheckGradient(t *testing.T) {
	good := func(x, g []float64) float64 {
		th := 1 / (1 + math.Exp(-x[0]))
		g[0] = 9*(1-th) - 16*th - 0.5*x[1]*x[1]*math.Exp(x[0])
		g[1] = -x[1] * math.Exp(x[0])
		return 9*math.Log(th) + 16*math.Log1p(-th) - 0.5*x[1]*x[1]*math.Exp(x[0])
	}
	wrong := func(x, g []float64) float64 {
		lp := good(x, g)
		g[1] = -g[1]
		return lp
	}
	missing := func(x, g []float64) float64 {
		lp := good(x, g)
		g[0] += 0.5 * x[1] * x[1] * math.Exp(x[0])
		return lp
	}
	x := []float64{0.3, -1.2}
	if e, err := CheckGradient(missing, x, 1e-5); err != nil || !(e > 0.1) {
		t.Errorf("gradient missing a term: error %g, %v; want > 0.1", e, err)
	}
	if e, err := CheckGradient(good, x, 1e-5); err != nil || !(e < 1e-6) {
		t.Errorf("correct gradient: error %g, %v; want < 1e-6", e, err)
	}
	if e, err := CheckGradient(wrong, x, 1e-5); err != nil || !(e > 0.1) {
		t.Errorf("wrong gradient: error %g, %v; want > 0.1", e, err)
	}
	nan := func(x, g []float64) float64 { return math.NaN() }
	if _, err := CheckGradient(nan, x, 1e-5); err == nil {
		t.Error("NaN density: no error")
	}
	if _, err := CheckGradient(good, x, 0); err == nil {
		t.Error("step 0: no error")
	}
}
