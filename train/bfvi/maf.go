package bfvi

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// MAFConfig configures a multivariate Bernstein flow whose per-coordinate flow parameters come
// from a masked autoregressive network (NewMAF).
type MAFConfig struct {
	// Degree is the Bernstein degree M of every coordinate's flow (1 ≤ M ≤ MaxDegree).
	Degree int
	// Hidden lists the widths of the MADE's hidden layers; nil means the paper's two layers of 10
	// units ("a MAF with two hidden layers, each with 10 neurons").
	Hidden []int
	// InitLo and InitHi give every coordinate's initial flow θ = InitLo + (InitHi − InitLo)·σ(z)
	// (FlowParamsLinear); both zero means (−3, 3), FitBFVI's mean-field start.
	InitLo, InitHi float64
	// Seed seeds the hidden layers' initial weights (math/rand/v2 PCG).
	Seed uint64
}

// MAF is the multivariate Bernstein flow of paper 002, section III-B: a triangular map
// z ∈ R^D ↦ θ ∈ R^D, z ~ N(0, I), whose coordinate d is the 1-D Bernstein flow of degree M
// (see Flow) applied to z_d with raw parameters λ_d = (a₁′, b₁, ϑ₀, δ₁…δ_M, a₂′, b₂) that are
// outputs of a MADE (Germain et al. 2015; masked autoregressive flow, Papamakarios et al. 2017)
// of z₁…z_{d−1}. Coordinate 1's parameters are free (the MADE's output biases), as in the paper
// ("the weights w of the MAF are the variational parameters for all components … except the
// first"). Since the Jacobian ∂θ/∂z is triangular,
//
//	log q(θ(z)) = Σ_d [log N(z_d) − log|∂θ_d/∂z_d|],
//
// the sum of the per-coordinate flows' log densities given their parameters.
//
// Choices made here (the paper does not state them):
//
//   - The MADE's input is the base draw z_{<d}, following the paper's equation
//     θ_j = f_BP_j(z_{1:j}) with coefficients ϑ^j(z₁, …, z_{j−1}) and the reference code (its
//     tfp AutoregressiveNetwork is applied to z). So a draw θ ~ q needs one network pass, and
//     evaluating q at a given θ (LogDensity) inverts the coordinates one after the other.
//   - Hidden activation tanh (smooth, so the map is C^∞ in the weights and the finite-difference
//     checks are clean; the reference's tfp network defaults to no activation at all). The
//     output layer is linear.
//   - Initialisation: hidden weights Glorot-uniform (limit √(6/(fan_in + fan_out)) over the dense
//     shape), hidden biases zero, output weights zero and output biases equal to
//     FlowParamsLinear(M, InitLo, InitHi) for every coordinate. The initial q is therefore exactly
//     FitBFVI's mean-field start, and the gradient of the output weights is non-zero from the
//     first step because the hidden units are.
//   - MADE degrees: input z_d has degree d (1-based); hidden unit k of every layer has degree
//     1 + (k mod (D − 1)); a unit connects to a next-layer unit of degree ≥ its own, and to
//     coordinate d's outputs only if its degree is < d. Masked weights are stored (as zeros) but
//     never read or updated.
//
// A MAF caches its network activations and per-coordinate flows; it is not safe for concurrent
// use.
type MAF struct {
	dim, m, np int
	widths     []int       // layer sizes: dim, hidden…, dim·np
	degIn      [][]int     // MADE degree of every unit of layers 0…L−1 (inputs and hidden)
	w, b       [][]float64 // per connection layer l (widths[l] → widths[l+1]): row-major out×in, views into p
	mask       [][]bool    // per connection layer, out×in
	p          []float64   // flat parameters
	act        [][]float64 // activations per layer (act[0] = z, last = λ)
	delta      [][]float64 // back-propagated errors per layer
	flows      []*Flow
	dT         []float64 // ∂θ_d/∂λ_d for every coordinate, flat
	z, th, g   []float64
}

// NumMAFParams returns the length of a MAF's parameter vector for dimension dim, degree m and
// the given hidden widths.
func NumMAFParams(dim, m int, hidden []int) int {
	widths := append(append([]int{dim}, hidden...), dim*NumFlowParams(m))
	n := 0
	for l := 0; l+1 < len(widths); l++ {
		n += widths[l+1]*widths[l] + widths[l+1]
	}
	return n
}

// NewMAF returns a dim-dimensional MAF Bernstein flow initialised as MAFConfig describes.
func NewMAF(dim int, cfg MAFConfig) (*MAF, error) {
	if dim < 1 || dim > 10000 {
		return nil, fmt.Errorf("bfvi: MAF dimension %d out of range [1, 10000]", dim)
	}
	if cfg.Degree < 1 || cfg.Degree > MaxDegree {
		return nil, fmt.Errorf("bfvi: MAF flow degree %d out of range [1, %d]", cfg.Degree, MaxDegree)
	}
	hidden := cfg.Hidden
	if hidden == nil {
		hidden = []int{10, 10}
	}
	for i, h := range hidden {
		if h < 1 || h > 100000 {
			return nil, fmt.Errorf("bfvi: MAF hidden layer %d has width %d", i, h)
		}
	}
	lo, hi := cfg.InitLo, cfg.InitHi
	if lo == 0 && hi == 0 {
		lo, hi = -3, 3
	}
	init, err := FlowParamsLinear(cfg.Degree, lo, hi)
	if err != nil {
		return nil, fmt.Errorf("bfvi: MAF initial flow: %w", err)
	}
	np := NumFlowParams(cfg.Degree)
	q := &MAF{dim: dim, m: cfg.Degree, np: np,
		widths: append(append([]int{dim}, hidden...), dim*np)}
	nl := len(q.widths) - 1
	q.p = make([]float64, NumMAFParams(dim, cfg.Degree, hidden))
	q.w, q.b, q.mask = make([][]float64, nl), make([][]float64, nl), make([][]bool, nl)
	q.act, q.delta = make([][]float64, nl+1), make([][]float64, nl+1)
	for l := range q.act {
		q.act[l], q.delta[l] = make([]float64, q.widths[l]), make([]float64, q.widths[l])
	}
	// MADE degrees of the input and hidden units.
	q.degIn = make([][]int, nl)
	for l := 0; l < nl; l++ {
		q.degIn[l] = make([]int, q.widths[l])
		for k := range q.degIn[l] {
			if l == 0 {
				q.degIn[l][k] = k + 1
			} else {
				q.degIn[l][k] = 1 + k%max(dim-1, 1)
			}
		}
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x3ade))
	off := 0
	for l := 0; l < nl; l++ {
		in, out := q.widths[l], q.widths[l+1]
		q.w[l] = q.p[off : off+in*out]
		off += in * out
		q.b[l] = q.p[off : off+out]
		off += out
		q.mask[l] = make([]bool, in*out)
		last := l == nl-1
		limit := math.Sqrt(6 / float64(in+out))
		for i := 0; i < out; i++ {
			for j := 0; j < in; j++ {
				var ok bool
				if last {
					ok = q.degIn[l][j] < i/np+1
				} else {
					ok = 1+i%max(dim-1, 1) >= q.degIn[l][j]
				}
				q.mask[l][i*in+j] = ok
				if ok && !last {
					q.w[l][i*in+j] = limit * (2*rng.Float64() - 1)
				}
			}
			if last {
				q.b[l][i] = init[i%np]
			}
		}
	}
	q.flows = make([]*Flow, dim)
	for d := range q.flows {
		if q.flows[d], err = NewFlow(cfg.Degree, init); err != nil {
			return nil, err
		}
	}
	q.dT = make([]float64, dim*np)
	q.z, q.th, q.g = make([]float64, dim), make([]float64, dim), make([]float64, dim)
	return q, nil
}

// Dim returns D.
func (q *MAF) Dim() int { return q.dim }

// Degree returns M.
func (q *MAF) Degree() int { return q.m }

// NumParams returns the number of network parameters (masked weights included).
func (q *MAF) NumParams() int { return len(q.p) }

// Params returns a copy of the flat parameters: for every layer its weights (row-major,
// outputs × inputs) and then its biases.
func (q *MAF) Params() []float64 { return append([]float64(nil), q.p...) }

// SetParams replaces the flat parameters (length NumParams, finite). Masked weights are set to
// zero.
func (q *MAF) SetParams(p []float64) error {
	if len(p) != len(q.p) {
		return fmt.Errorf("bfvi: MAF needs %d parameters, got %d", len(q.p), len(p))
	}
	if !allFinite(p) {
		return fmt.Errorf("bfvi: MAF parameters must be finite")
	}
	copy(q.p, p)
	for l := range q.w {
		for k, ok := range q.mask[l] {
			if !ok {
				q.w[l][k] = 0
			}
		}
	}
	return nil
}

// Clone returns an independent copy.
func (q *MAF) Clone() *MAF {
	hidden := append([]int(nil), q.widths[1:len(q.widths)-1]...)
	c, _ := NewMAF(q.dim, MAFConfig{Degree: q.m, Hidden: hidden}) // q's shape was validated
	_ = c.SetParams(q.p)
	return c
}

// forward runs the network on q.act[0] and sets every coordinate's flow parameters from the
// outputs.
func (q *MAF) forward() error {
	nl := len(q.w)
	for l := 0; l < nl; l++ {
		in, out := q.widths[l], q.widths[l+1]
		x, y := q.act[l], q.act[l+1]
		w, mk := q.w[l], q.mask[l]
		for i := 0; i < out; i++ {
			s := q.b[l][i]
			row := w[i*in : (i+1)*in]
			mrow := mk[i*in : (i+1)*in]
			for j, v := range x {
				if mrow[j] {
					s += row[j] * v
				}
			}
			if l < nl-1 {
				s = math.Tanh(s)
			}
			y[i] = s
		}
	}
	lam := q.act[nl]
	for d, f := range q.flows {
		if err := f.SetParams(lam[d*q.np : (d+1)*q.np]); err != nil {
			return fmt.Errorf("bfvi: MAF coordinate %d: %w", d, err)
		}
	}
	return nil
}

// backward accumulates into grad the gradient of a scalar whose gradient with respect to the
// network outputs λ is q.delta[L] (set by the caller), for the activations of the last forward.
func (q *MAF) backward(grad []float64) {
	nl := len(q.w)
	off := len(q.p)
	for l := nl - 1; l >= 0; l-- {
		in, out := q.widths[l], q.widths[l+1]
		off -= in*out + out
		gw := grad[off : off+in*out]
		gb := grad[off+in*out : off+in*out+out]
		x, dy, dx := q.act[l], q.delta[l+1], q.delta[l]
		w, mk := q.w[l], q.mask[l]
		clear(dx)
		for i := 0; i < out; i++ {
			di := dy[i]
			if di == 0 {
				continue
			}
			gb[i] += di
			row, grow, mrow := w[i*in:(i+1)*in], gw[i*in:(i+1)*in], mk[i*in:(i+1)*in]
			for j, v := range x {
				if mrow[j] {
					grow[j] += di * v
					dx[j] += di * row[j]
				}
			}
		}
		if l > 0 { // through tanh: dy/ds = 1 − y²
			for j, y := range x {
				dx[j] *= 1 - y*y
			}
		}
	}
}

// Sample draws θ ~ q into theta (length Dim) and returns log q(θ). It implements Sampler.
func (q *MAF) Sample(rng *rand.Rand, theta []float64) (float64, error) {
	if len(theta) != q.dim {
		return 0, fmt.Errorf("bfvi: sample buffer has %d values for a %d-dimensional q", len(theta), q.dim)
	}
	for d := range q.z {
		q.z[d] = rng.NormFloat64()
	}
	return q.Transform(q.z, theta)
}

// Transform writes θ(z) into theta for a base point z (both length Dim) and returns
// log q(θ(z)).
func (q *MAF) Transform(z, theta []float64) (float64, error) {
	if len(z) != q.dim || len(theta) != q.dim {
		return 0, fmt.Errorf("bfvi: MAF transform of %d values into %d for dimension %d", len(z), len(theta), q.dim)
	}
	copy(q.act[0], z)
	if err := q.forward(); err != nil {
		return 0, err
	}
	lq := 0.0
	for d, f := range q.flows {
		th, ld := f.Eval(z[d], nil, nil)
		theta[d] = th
		lq += logNormal01(z[d]) - ld
	}
	return lq, nil
}

// LogDensity returns log q(θ) (−Inf outside the support). It inverts the coordinates in order:
// z₁ from coordinate 1's flow, then coordinate 2's flow parameters from z₁, and so on (D network
// passes).
func (q *MAF) LogDensity(theta []float64) (float64, error) {
	if len(theta) != q.dim {
		return 0, fmt.Errorf("bfvi: θ has %d values for a %d-dimensional q", len(theta), q.dim)
	}
	if !allFinite(theta) {
		return 0, fmt.Errorf("bfvi: MAF log density of non-finite θ")
	}
	clear(q.act[0])
	lq := 0.0
	for d := 0; d < q.dim; d++ {
		if err := q.forward(); err != nil {
			return 0, err
		}
		f := q.flows[d]
		z, err := f.Inverse(theta[d])
		if err != nil {
			return math.Inf(-1), nil
		}
		q.act[0][d] = z
		_, ld := f.Eval(z, nil, nil)
		lq += logNormal01(z) - ld
	}
	return lq, nil
}

// elboSample returns log p(y, θ(z)) − log q(θ(z)) for one base draw z and adds its gradient
// with respect to the network parameters to grad: with e the sample's value and λ_d coordinate
// d's flow parameters, ∂e/∂λ_d = ∂log p/∂θ_d · ∂θ_d/∂λ_d + ∂log|∂θ_d/∂z_d|/∂λ_d (Flow.Eval),
// then back-propagated through the MADE (z is fixed, so nothing flows into the inputs). A nil
// grad skips the gradient.
func (q *MAF) elboSample(m Model, z, grad []float64) (float64, error) {
	copy(q.act[0], z)
	if err := q.forward(); err != nil {
		return 0, err
	}
	nl := len(q.w)
	e := 0.0
	for d, f := range q.flows {
		lo, hi := d*q.np, (d+1)*q.np
		var th, ld float64
		if grad != nil {
			th, ld = f.Eval(z[d], q.dT[lo:hi], q.delta[nl][lo:hi])
		} else {
			th, ld = f.Eval(z[d], nil, nil)
		}
		q.th[d] = th
		e += ld - logNormal01(z[d])
	}
	var g []float64
	if grad != nil {
		g = q.g
	}
	e += m.LogJoint(q.th, g)
	if math.IsNaN(e) || math.IsInf(e, 0) {
		return 0, fmt.Errorf("log p(y, θ) − log q(θ) = %g at θ = %v", e, q.th)
	}
	if grad == nil {
		return e, nil
	}
	for d := range q.flows {
		gd := q.g[d]
		dst, dt := q.delta[nl][d*q.np:(d+1)*q.np], q.dT[d*q.np:(d+1)*q.np]
		for k := range dst {
			dst[k] += gd * dt[k]
		}
	}
	q.backward(grad)
	return e, nil
}

// FitMAF maximises the ELBO of q for model m in place with the pathwise gradient and the same
// RMSprop (and optional linear learning-rate schedule) as Fit, and returns the per-step ELBO
// estimates.
func FitMAF(m Model, q *MAF, cfg TrainConfig) ([]float64, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if m == nil || q == nil {
		return nil, fmt.Errorf("bfvi: MAF fit needs a model and a family")
	}
	if m.Dim() != q.dim {
		return nil, fmt.Errorf("bfvi: MAF has dimension %d, model %d", q.dim, m.Dim())
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x3af1))
	grad, v := make([]float64, len(q.p)), make([]float64, len(q.p))
	z := make([]float64, q.dim)
	trace := make([]float64, 0, cfg.Steps)
	for step := 0; step < cfg.Steps; step++ {
		clear(grad)
		elbo := 0.0
		for s := 0; s < cfg.Samples; s++ {
			for d := range z {
				z[d] = rng.NormFloat64()
			}
			e, err := q.elboSample(m, z, grad)
			if err != nil {
				return trace, fmt.Errorf("bfvi: MAF fit step %d: %w", step, err)
			}
			elbo += e
		}
		inv := 1 / float64(cfg.Samples)
		trace = append(trace, elbo*inv)
		lr := cfg.LR
		if cfg.LREnd > 0 && cfg.Steps > 1 {
			lr += (cfg.LREnd - cfg.LR) * float64(step) / float64(cfg.Steps-1)
		}
		for k, g := range grad {
			g *= inv
			v[k] = cfg.Rho*v[k] + (1-cfg.Rho)*g*g
			q.p[k] += lr * g / (math.Sqrt(v[k]) + cfg.Eps)
		}
		if !allFinite(q.p) {
			return trace, fmt.Errorf("bfvi: MAF fit step %d: parameters diverged", step)
		}
	}
	return trace, nil
}

// FitBFVIMAF fits BF-VI with the masked autoregressive Bernstein flow (NewMAF(m.Dim(), mc)); it
// returns the fitted family and the ELBO trace.
func FitBFVIMAF(m Model, mc MAFConfig, cfg TrainConfig) (*MAF, []float64, error) {
	if m == nil {
		return nil, nil, fmt.Errorf("bfvi: nil model")
	}
	q, err := NewMAF(m.Dim(), mc)
	if err != nil {
		return nil, nil, err
	}
	tr, err := FitMAF(m, q, cfg)
	return q, tr, err
}
