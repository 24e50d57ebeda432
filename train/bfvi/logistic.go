package bfvi

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// Logistic is a Bayesian logistic regression with one covariate and an optional fixed offset per
// observation, the interpretable part of paper 002's semi-structured Melanoma models:
//
//	y_i ~ Bernoulli(σ(o_i + μ₀ + β·x_i))   (with intercept: paper's M2, o_i = 0)
//	y_i ~ Bernoulli(σ(o_i + β·x_i))        (without: paper's M3 given the image part o_i = μ₀(B_i))
//
// with independent N(0, PriorSD²) priors on μ₀ and β. The parameters are unconstrained:
// x = (μ₀, β) with an intercept, x = (β) without.
type Logistic struct {
	x, off    []float64
	y         []bool
	intercept bool
	priorSD   float64
}

// NewLogistic returns the model for covariate values x, labels y (0 or 1), offsets off (nil for
// none; otherwise one per observation), with or without an intercept, and prior standard
// deviation priorSD > 0. All inputs must be finite and of equal length ≥ 1.
func NewLogistic(x []float64, y []int, off []float64, intercept bool, priorSD float64) (*Logistic, error) {
	switch {
	case len(x) == 0 || len(x) != len(y):
		return nil, fmt.Errorf("bfvi: logistic regression has %d covariate values and %d labels", len(x), len(y))
	case off != nil && len(off) != len(x):
		return nil, fmt.Errorf("bfvi: logistic regression has %d offsets for %d observations", len(off), len(x))
	case !allFinite(x) || !allFinite(off):
		return nil, fmt.Errorf("bfvi: logistic regression covariate and offsets must be finite")
	case !(priorSD > 0) || math.IsInf(priorSD, 0):
		return nil, fmt.Errorf("bfvi: logistic regression prior sd %g must be positive and finite", priorSD)
	}
	m := &Logistic{x: append([]float64(nil), x...), y: make([]bool, len(y)), intercept: intercept, priorSD: priorSD}
	for i, v := range y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("bfvi: logistic regression label %d is %d, not 0 or 1", i, v)
		}
		m.y[i] = v == 1
	}
	if off != nil {
		m.off = append([]float64(nil), off...)
	}
	return m, nil
}

// Dim returns 2 with an intercept, 1 without.
func (m *Logistic) Dim() int {
	if m.intercept {
		return 2
	}
	return 1
}

// Names returns ["mu0", "beta"] or ["beta"].
func (m *Logistic) Names() []string {
	if m.intercept {
		return []string{"mu0", "beta"}
	}
	return []string{"beta"}
}

// Constrain copies x: both parameters are unconstrained.
func (m *Logistic) Constrain(x, out []float64) { copy(out, x) }

// Linear returns the linear predictor o_i + μ₀ + β·x_i of observation i for parameters theta
// (length Dim).
func (m *Logistic) Linear(theta []float64, i int) float64 {
	eta := theta[len(theta)-1] * m.x[i]
	if m.intercept {
		eta += theta[0]
	}
	if m.off != nil {
		eta += m.off[i]
	}
	return eta
}

// LogJoint implements Model: Σ_θ log N(θ; 0, PriorSD²) + Σ_i [y_i·η_i − softplus(η_i)], whose
// gradient is −θ/PriorSD² + Σ_i (y_i − σ(η_i))·(1, x_i).
func (m *Logistic) LogJoint(x, grad []float64) float64 {
	d := m.Dim()
	if len(x) != d || (grad != nil && len(grad) != d) {
		return math.NaN()
	}
	lp := logPriorGrad(x, grad, m.priorSD)
	var g0, g1 float64
	for i, xi := range m.x {
		eta := m.Linear(x, i)
		r := -f64.Sigmoid(eta)
		if m.y[i] {
			lp += -f64.Softplus(-eta)
			r++
		} else {
			lp += -f64.Softplus(eta)
		}
		g0 += r
		g1 += r * xi
	}
	if grad != nil {
		grad[d-1] += g1
		if m.intercept {
			grad[0] += g0
		}
	}
	return lp
}
