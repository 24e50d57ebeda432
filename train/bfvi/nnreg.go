package bfvi

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// NNRegression is a small Bayesian neural network for 1-D regression written as a log-joint
// (paper 002, section IV-C and appendix B-F, Listing 6): one hidden layer of H logistic-sigmoid
// units and a linear output giving the conditional mean,
//
//	μ(x) = b₂ + Σ_h w₂ₕ·σ(w₁ₕ·x + b₁ₕ),   y_i ~ N(μ(x_i), σ²) with σ fixed,
//
// and every weight and bias a priori N(0, PriorSD²). All weights are unconstrained parameters, in
// the order of the reference code: x = (w₁₁, b₁₁, w₁₂, b₁₂, …, w₁H, b₁H, w₂₁, …, w₂H, b₂), so
// Dim = 3H + 1. The posterior is invariant under permutations of the hidden units, so it has at
// least H! symmetric modes.
type NNRegression struct {
	x, y    []float64
	hidden  int
	sigma   float64
	priorSD float64
}

// paperNNX and paperNNY are the nine training points of paper 002, appendix B-F1 (the first nine
// of the sixteen drawn by the reference notebook: x uniform on [−6, −2] ∪ [2, 6], y = sin x + 0.2ε).
var (
	paperNNX = [9]float64{-5.41239, -4.142973, -5.100401, -4.588446, -2.0570369, -2.0035906, -3.7404475, -5.344997, 4.506781}
	paperNNY = [9]float64{0.973122, 0.96644104, 1.2311585, 0.5193988, -1.2059958, -0.9434611, 0.8041748, 0.82996416, -1.3704962}
)

// NewNNRegression returns the network for data (x, y) (equal length ≥ 1, finite), hidden ≥ 1
// units, observation noise sigma > 0 and prior standard deviation priorSD > 0.
func NewNNRegression(x, y []float64, hidden int, sigma, priorSD float64) (*NNRegression, error) {
	switch {
	case len(x) != len(y) || len(y) == 0:
		return nil, fmt.Errorf("bfvi: network regression has %d inputs and %d responses", len(x), len(y))
	case !allFinite(x) || !allFinite(y):
		return nil, fmt.Errorf("bfvi: network regression data must be finite")
	case hidden < 1:
		return nil, fmt.Errorf("bfvi: network regression needs at least one hidden unit, got %d", hidden)
	case !(sigma > 0) || math.IsInf(sigma, 0):
		return nil, fmt.Errorf("bfvi: network regression noise σ = %g must be positive and finite", sigma)
	case !(priorSD > 0) || math.IsInf(priorSD, 0):
		return nil, fmt.Errorf("bfvi: network regression prior sd %g must be positive and finite", priorSD)
	}
	return &NNRegression{x: append([]float64(nil), x...), y: append([]float64(nil), y...),
		hidden: hidden, sigma: sigma, priorSD: priorSD}, nil
}

// PaperNNRegression is paper 002's network experiment: the nine published points, three hidden
// units, σ = 0.2 (the reference code's fixed noise) and N(0, 1) priors: ten parameters.
func PaperNNRegression() *NNRegression {
	m, _ := NewNNRegression(paperNNX[:], paperNNY[:], 3, 0.2, 1)
	return m
}

// Dim returns 3H + 1.
func (m *NNRegression) Dim() int { return 3*m.hidden + 1 }

// Hidden returns H.
func (m *NNRegression) Hidden() int { return m.hidden }

// Sigma returns the fixed observation noise σ.
func (m *NNRegression) Sigma() float64 { return m.sigma }

// Data returns copies of the training inputs and responses.
func (m *NNRegression) Data() (x, y []float64) {
	return append([]float64(nil), m.x...), append([]float64(nil), m.y...)
}

// Names returns ["w1_1", "b1_1", …, "w2_1", …, "b2"].
func (m *NNRegression) Names() []string {
	var n []string
	for h := 1; h <= m.hidden; h++ {
		n = append(n, fmt.Sprintf("w1_%d", h), fmt.Sprintf("b1_%d", h))
	}
	for h := 1; h <= m.hidden; h++ {
		n = append(n, fmt.Sprintf("w2_%d", h))
	}
	return append(n, "b2")
}

// Constrain copies x: every weight is unconstrained.
func (m *NNRegression) Constrain(x, out []float64) { copy(out, x) }

// Mean returns the network output μ(x) for the weights theta (length Dim; NaN otherwise).
func (m *NNRegression) Mean(theta []float64, x float64) float64 {
	if len(theta) != m.Dim() {
		return math.NaN()
	}
	h := m.hidden
	mu := theta[3*h]
	for k := 0; k < h; k++ {
		mu += theta[2*h+k] * f64.Sigmoid(theta[2*k]*x+theta[2*k+1])
	}
	return mu
}

// LogJoint implements Model: Σ_j log N(θ_j; 0, PriorSD²) + Σ_i log N(y_i; μ(x_i), σ²).
func (m *NNRegression) LogJoint(x, grad []float64) float64 {
	d := m.Dim()
	if len(x) != d || (grad != nil && len(grad) != d) {
		return math.NaN()
	}
	h := m.hidden
	lp := logPriorGrad(x, grad, m.priorSD)
	inv := 1 / (m.sigma * m.sigma)
	c := -math.Log(m.sigma) - halfLog2Pi
	var s [16]float64 // hidden activations; larger networks allocate
	act := s[:0]
	if h > len(s) {
		act = make([]float64, h)
	} else {
		act = s[:h]
	}
	for i, xi := range m.x {
		mu := x[3*h]
		for k := 0; k < h; k++ {
			act[k] = f64.Sigmoid(x[2*k]*xi + x[2*k+1])
			mu += x[2*h+k] * act[k]
		}
		r := m.y[i] - mu
		lp += -0.5*r*r*inv + c
		if grad != nil {
			g := r * inv // ∂ log N / ∂μ
			for k := 0; k < h; k++ {
				a := act[k]
				da := g * x[2*h+k] * a * (1 - a)
				grad[2*k] += da * xi
				grad[2*k+1] += da
				grad[2*h+k] += g * a
			}
			grad[3*h] += g
		}
	}
	return lp
}
