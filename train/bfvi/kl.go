package bfvi

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// LogDensity1D is a normalised 1-D log density, e.g. an exact posterior.
type LogDensity1D func(x float64) float64

// KLMonteCarlo estimates KL(q‖p) = E_q[log q(θ) − log p(θ)] from n draws of q (seeded), returning
// the estimate and its Monte Carlo standard error. logP must be normalised.
func KLMonteCarlo(q Marginal, logP LogDensity1D, n int, seed uint64) (kl, se float64, err error) {
	if n < 2 {
		return 0, 0, fmt.Errorf("bfvi: KL Monte Carlo needs at least 2 draws, got %d", n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6b6c))
	var s, s2 float64
	for i := 0; i < n; i++ {
		z := rng.NormFloat64()
		th, ld := q.Eval(z, nil, nil)
		v := logNormal01(z) - ld - logP(th)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, 0, fmt.Errorf("bfvi: KL Monte Carlo: log q − log p = %g at θ = %g", v, th)
		}
		s += v
		s2 += v * v
	}
	mean := s / float64(n)
	v := (s2 - float64(n)*mean*mean) / float64(n-1)
	return mean, math.Sqrt(math.Max(v, 0) / float64(n)), nil
}

// KLQuadrature computes KL(q‖p) = ∫ N(z) [log N(z) − log|dθ/dz| − log p(θ(z))] dz by composite
// Simpson quadrature over the base variable z ∈ [−10, 10] with n intervals (n ≥ 2, rounded up to
// even; 4000 is plenty for smooth integrands). Integrating over z rather than θ needs no inverse
// map and follows q's mass wherever it sits. The base mass outside ±10 is below 2e-23.
func KLQuadrature(q Marginal, logP LogDensity1D, n int) (float64, error) {
	if n < 2 {
		return 0, fmt.Errorf("bfvi: KL quadrature needs at least 2 intervals, got %d", n)
	}
	if n%2 == 1 {
		n++
	}
	const lo, hi = -10.0, 10.0
	h := (hi - lo) / float64(n)
	s := 0.0
	for i := 0; i <= n; i++ {
		z := lo + float64(i)*h
		th, ld := q.Eval(z, nil, nil)
		lz := logNormal01(z)
		v := math.Exp(lz) * (lz - ld - logP(th))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0, fmt.Errorf("bfvi: KL quadrature: integrand %g at z = %g (θ = %g)", v, z, th)
		}
		s += simpsonWeight(i, n) * v
	}
	return s * h / 3, nil
}

// GridPosterior is the posterior of a 1-D model normalised by quadrature of exp(LogJoint) on a
// grid: log p(x | y) = LogJoint(x) − LogEvidence.
type GridPosterior struct {
	model Model
	// LogEvidence is log ∫ p(y, x) dx over the grid.
	LogEvidence float64
}

// NewGridPosterior normalises a 1-D model's posterior by composite Simpson quadrature on [lo, hi]
// with n intervals (n ≥ 2, rounded up to even). The interval must hold essentially all the
// posterior mass (it is not checked).
func NewGridPosterior(m Model, lo, hi float64, n int) (*GridPosterior, error) {
	if m.Dim() != 1 {
		return nil, fmt.Errorf("bfvi: grid posterior needs a 1-D model, got dimension %d", m.Dim())
	}
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || n < 2 {
		return nil, fmt.Errorf("bfvi: grid posterior on [%g, %g] with %d intervals", lo, hi, n)
	}
	if n%2 == 1 {
		n++
	}
	h := (hi - lo) / float64(n)
	lj := make([]float64, n+1)
	mx := math.Inf(-1)
	x := []float64{0}
	for i := range lj {
		x[0] = lo + float64(i)*h
		lj[i] = m.LogJoint(x, nil)
		if math.IsNaN(lj[i]) || math.IsInf(lj[i], 1) {
			return nil, fmt.Errorf("bfvi: grid posterior: log joint %g at x = %g", lj[i], x[0])
		}
		mx = math.Max(mx, lj[i])
	}
	s := 0.0
	for i, v := range lj {
		s += simpsonWeight(i, n) * math.Exp(v-mx)
	}
	return &GridPosterior{model: m, LogEvidence: mx + math.Log(s*h/3)}, nil
}

// LogDensity returns the normalised log posterior at x.
func (g *GridPosterior) LogDensity(x float64) float64 {
	return g.model.LogJoint([]float64{x}, nil) - g.LogEvidence
}
