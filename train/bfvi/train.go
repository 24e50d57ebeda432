package bfvi

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// TrainConfig configures Fit.
type TrainConfig struct {
	// Steps is the number of optimizer steps (≥ 1).
	Steps int
	// Samples is S, the number of reparameterised draws per ELBO estimate (≥ 1).
	Samples int
	// LR is RMSprop's learning rate. The paper used TensorFlow's RMSprop "with default setting",
	// i.e. 0.001 (DefaultTrainConfig); small problems converge in far fewer steps with 0.01–0.05.
	LR float64
	// LREnd, if positive, makes the learning rate fall linearly from LR at step 0 to LREnd at the
	// last step (the reference Cauchy notebook uses such a linear schedule); 0 keeps LR constant.
	LREnd float64
	// Rho is RMSprop's decay of the squared-gradient average (Keras default 0.9).
	Rho float64
	// Eps is RMSprop's denominator offset (Keras default 1e-7).
	Eps float64
	// Seed seeds the base draws (math/rand/v2 PCG).
	Seed uint64
}

// DefaultTrainConfig returns the paper's optimizer settings (RMSprop, lr 0.001, ρ 0.9, ε 1e-7)
// with S = 10 draws (the paper's 8-schools setting) and 15000 steps.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{Steps: 15000, Samples: 10, LR: 1e-3, Rho: 0.9, Eps: 1e-7, Seed: 1}
}

func (c TrainConfig) validate() error {
	switch {
	case c.Steps < 1:
		return fmt.Errorf("bfvi: train steps %d < 1", c.Steps)
	case c.Samples < 1:
		return fmt.Errorf("bfvi: ELBO samples %d < 1", c.Samples)
	case !(c.LR > 0) || math.IsInf(c.LR, 0):
		return fmt.Errorf("bfvi: learning rate %g must be positive and finite", c.LR)
	case !(c.LREnd >= 0) || math.IsInf(c.LREnd, 0):
		return fmt.Errorf("bfvi: final learning rate %g must be ≥ 0 and finite", c.LREnd)
	case !(c.Rho >= 0 && c.Rho < 1):
		return fmt.Errorf("bfvi: RMSprop rho %g outside [0, 1)", c.Rho)
	case !(c.Eps > 0) || math.IsInf(c.Eps, 0):
		return fmt.Errorf("bfvi: RMSprop epsilon %g must be positive and finite", c.Eps)
	}
	return nil
}

// elboState holds the per-coordinate buffers of ELBO gradient estimation.
type elboState struct {
	q          *MeanField
	off        []int // offset of coordinate d's parameters in the flat vector
	dT, dL     [][]float64
	theta, g   []float64
	grad, flat []float64
}

func newELBOState(m Model, q *MeanField) (*elboState, error) {
	if q == nil || q.Dim() != m.Dim() {
		return nil, fmt.Errorf("bfvi: variational family has dimension %d, model %d", q.Dim(), m.Dim())
	}
	s := &elboState{q: q, off: make([]int, q.Dim()+1), dT: make([][]float64, q.Dim()), dL: make([][]float64, q.Dim()),
		theta: make([]float64, q.Dim()), g: make([]float64, q.Dim())}
	for d, c := range q.Coords {
		if c == nil {
			return nil, fmt.Errorf("bfvi: variational coordinate %d is nil", d)
		}
		n := c.NumParams()
		s.off[d+1] = s.off[d] + n
		s.dT[d], s.dL[d] = make([]float64, n), make([]float64, n)
		s.flat = append(s.flat, c.Params()...)
	}
	s.grad = make([]float64, len(s.flat))
	return s, nil
}

// estimate returns the S-sample ELBO estimate and writes its gradient into s.grad.
func (s *elboState) estimate(m Model, rng *rand.Rand, samples int) (float64, error) {
	clear(s.grad)
	elbo := 0.0
	for i := 0; i < samples; i++ {
		e := 0.0
		for d, c := range s.q.Coords {
			z := rng.NormFloat64()
			th, ld := c.Eval(z, s.dT[d], s.dL[d])
			s.theta[d] = th
			e += ld - logNormal01(z)
		}
		lj := m.LogJoint(s.theta, s.g)
		e += lj
		if math.IsNaN(e) || math.IsInf(e, 0) {
			return 0, fmt.Errorf("log p(y, θ) − log q(θ) = %g at θ = %v", e, s.theta)
		}
		elbo += e
		for d := range s.q.Coords {
			gd := s.g[d]
			dst := s.grad[s.off[d]:s.off[d+1]]
			for k := range dst {
				dst[k] += gd*s.dT[d][k] + s.dL[d][k]
			}
		}
	}
	inv := 1 / float64(samples)
	for k := range s.grad {
		s.grad[k] *= inv
	}
	return elbo * inv, nil
}

// Fit maximises the ELBO of the mean-field family q for model m in place with RMSprop and returns
// the per-step ELBO estimates. The gradient is the pathwise one: for θ = T_λ(z),
// ∇_λ[log p(y, θ) − log q(θ)] = ∇_θ log p(y, θ)·∂θ/∂λ + ∂log|dθ/dz|/∂λ at fixed z.
func Fit(m Model, q *MeanField, cfg TrainConfig) ([]float64, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("bfvi: nil model")
	}
	st, err := newELBOState(m, q)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xbf71))
	v := make([]float64, len(st.flat))
	trace := make([]float64, 0, cfg.Steps)
	for step := 0; step < cfg.Steps; step++ {
		elbo, err := st.estimate(m, rng, cfg.Samples)
		if err != nil {
			return trace, fmt.Errorf("bfvi: fit step %d: %w", step, err)
		}
		trace = append(trace, elbo)
		lr := cfg.LR
		if cfg.LREnd > 0 && cfg.Steps > 1 {
			lr += (cfg.LREnd - cfg.LR) * float64(step) / float64(cfg.Steps-1)
		}
		for k, g := range st.grad {
			v[k] = cfg.Rho*v[k] + (1-cfg.Rho)*g*g
			st.flat[k] += lr * g / (math.Sqrt(v[k]) + cfg.Eps)
		}
		for d, c := range q.Coords {
			if err := c.SetParams(st.flat[st.off[d]:st.off[d+1]]); err != nil {
				return trace, fmt.Errorf("bfvi: fit step %d, coordinate %d: %w", step, d, err)
			}
		}
	}
	return trace, nil
}

// FitBFVI fits mean-field BF-VI of degree M: every coordinate starts as the flow
// θ = −3 + 6σ(z) (FlowParamsLinear(M, −3, 3)); it returns the fitted family and the ELBO trace.
func FitBFVI(m Model, degree int, cfg TrainConfig) (*MeanField, []float64, error) {
	if m == nil {
		return nil, nil, fmt.Errorf("bfvi: nil model")
	}
	q, err := NewFlowMeanField(m.Dim(), degree, -3, 3)
	if err != nil {
		return nil, nil, err
	}
	tr, err := Fit(m, q, cfg)
	return q, tr, err
}

// FitGaussianVI fits mean-field Gaussian VI (every coordinate starts at N(0, 1)) with the same
// optimizer; it returns the fitted family and the ELBO trace.
func FitGaussianVI(m Model, cfg TrainConfig) (*MeanField, []float64, error) {
	if m == nil {
		return nil, nil, fmt.Errorf("bfvi: nil model")
	}
	q, err := NewGaussianMeanField(m.Dim(), 0, 1)
	if err != nil {
		return nil, nil, err
	}
	tr, err := Fit(m, q, cfg)
	return q, tr, err
}
