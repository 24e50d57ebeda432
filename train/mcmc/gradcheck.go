package mcmc

import (
	"fmt"
	"math"
)

// CheckGradient compares f's gradient at x with central finite differences of step h·max(1, |xᵢ|)
// and returns the largest error |gᵢ − ĝᵢ| / max(1, |ĝᵢ|) over the coordinates i. A correct
// gradient gives an error of order h² (about 1e-8 with h = 1e-4 on smooth densities); a wrong
// one, an error of order 1. It returns an error if h is not finite and positive or if f is not
// finite at x or at a perturbed point.
func CheckGradient(f LogDensity, x []float64, h float64) (float64, error) {
	if !finitePositive(h) {
		return 0, fmt.Errorf("mcmc: CheckGradient: step %v must be finite and positive", h)
	}
	n := len(x)
	g := make([]float64, n)
	scratch := make([]float64, n)
	xp := append([]float64(nil), x...)
	if lp := f(xp, g); math.IsNaN(lp) || math.IsInf(lp, 0) {
		return 0, fmt.Errorf("mcmc: CheckGradient: log density %v at x", lp)
	}
	worst := 0.0
	for i := range xp {
		step := h * math.Max(1, math.Abs(x[i]))
		xp[i] = x[i] + step
		up := f(xp, scratch)
		xp[i] = x[i] - step
		down := f(xp, scratch)
		xp[i] = x[i]
		if math.IsNaN(up+down) || math.IsInf(up+down, 0) {
			return 0, fmt.Errorf("mcmc: CheckGradient: log density not finite at x ± %g along coordinate %d", step, i)
		}
		fd := (up - down) / (2 * step)
		worst = math.Max(worst, math.Abs(g[i]-fd)/math.Max(1, math.Abs(fd)))
	}
	if math.IsNaN(worst) {
		return 0, fmt.Errorf("mcmc: CheckGradient: gradient at x is not finite")
	}
	return worst, nil
}
