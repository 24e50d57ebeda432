// Package fsvi implements tractable function-space variational inference (FSVI; Rudner, Chen,
// Teh & Gal, NeurIPS 2022, paper 004 eq. 11) for the trainer's mean-field Gaussian (ffg)
// networks: q(θ) = N(μ, diag σ²) over every ffg tensor, and in place of the parameter-space KL
// the KL between the Gaussians that q and the prior N(μ₀, diag σ₀²) induce on the outputs at
// context points X_C when the network is linearised at μ:
//
//	q̃ = N(f(X_C; μ), J diag(σ²) Jᵀ + εI),  p̃ = N(f(X_C; μ) + J(μ₀ − μ), J diag(σ₀²) Jᵀ + εI),
//
// J = ∂f(X_C; θ)/∂θ at θ = μ, a D×P matrix with D = |X_C|·Q (Q outputs per input). The mean
// f(X_C; μ) cancels, so
//
//	KL = ½ [tr(K_p⁻¹K_q) + δᵀK_p⁻¹δ − D + log|K_p| − log|K_q|],  δ = J(μ − μ₀).
//
// J is computed by reverse mode, one vector-Jacobian product per output (Jacobian), and held
// fixed while the KL is differentiated (the linearisation point is μ without a gradient through
// J: see docs/FSVI.md); the KL and its gradient with respect to μ and the raw σ are computed in
// float64 whatever the network's element type (AddKLGrad). Context inputs are drawn by Sampler.
package fsvi

import (
	"errors"
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// DefaultJitter is ε, added to the diagonal of both output covariances (the reference code's
// cov_jitter).
const DefaultJitter = 1e-6

// Linearization is the Jacobian of the network's outputs at the context points with respect to
// the means of its ffg tensors, at the current means.
type Linearization struct {
	// Points is |X_C| and Outputs is Q; D = Points·Outputs rows, row n·Q + q for output q of
	// context point n.
	Points, Outputs int
	// Blocks holds one D×P_t row-major block per tensor (in the order of the tensors given to
	// Jacobian), in float64.
	Blocks [][]float64
	// priorBlocks, when set (tests), is a different J for the prior side (K_p and δ) of the
	// direct path.
	priorBlocks [][]float64
	// factors, when not nil, is J in factored form (Linearize) and Blocks is nil: see Dense.
	factors []denseFactor
}

// D returns the dimension of the output Gaussians, |X_C|·Q.
func (l *Linearization) D() int { return l.Points * l.Outputs }

// Jacobian linearises net at its posterior means (every noise draw zero, BatchNorm with its
// running statistics: bnn.Net.ForwardMean) at the m context inputs x (m examples of the given
// shape, row-major): for each point one forward pass, then one reverse pass per output, seeded
// with that output's unit vector. It uses tp (Reset first and on return) and overwrites the
// gradients of every parameter of net: call it before the training step's gradients are
// computed.
func Jacobian[T bnn.Float](tp *autodiff.Tape[T], net *bnn.Net[T], ts []bnn.FFGTensor[T], x []T, m int, shape []int) (*Linearization, error) {
	dim := 1
	for _, s := range shape {
		dim *= s
	}
	if m < 1 || len(x) != m*dim {
		return nil, fmt.Errorf("fsvi: %d context values for %d points of shape %v", len(x), m, shape)
	}
	if len(ts) == 0 {
		return nil, errors.New("fsvi: the network has no mean-field Gaussian tensors")
	}
	defer func() {
		tp.Reset()
		for _, p := range net.Params() {
			clear(p.Grad)
		}
	}()
	lin := &Linearization{Points: m, Blocks: make([][]float64, len(ts))}
	one := append([]int{1}, shape...)
	for n := 0; n < m; n++ {
		tp.Reset()
		net.Begin()
		out := net.ForwardMean(tp, tp.Const(x[n*dim:(n+1)*dim], one...))
		if err := tp.Err(); err != nil {
			return nil, fmt.Errorf("fsvi: linearisation forward pass: %w", err)
		}
		q := out.Len()
		if n == 0 {
			lin.Outputs = q
			for i, t := range ts {
				lin.Blocks[i] = make([]float64, m*q*len(t.Mean.Value))
			}
		}
		seed := make([]T, q)
		for j := 0; j < q; j++ {
			tp.ZeroGrads()
			clear(seed)
			seed[j] = 1
			if err := tp.BackwardFrom(out, seed); err != nil {
				return nil, fmt.Errorf("fsvi: linearisation reverse pass: %w", err)
			}
			row := n*q + j
			for i, t := range ts {
				p := len(t.Mean.Value)
				dst := lin.Blocks[i][row*p : (row+1)*p]
				for k, g := range t.Mean.Grad {
					dst[k] = float64(g)
				}
			}
		}
	}
	return lin, nil
}

// Gaussian is q or the prior over one tensor as float64 tape values: the mean and σ (flat, P_t).
type Gaussian struct {
	Mean, SD *autodiff.Var[float64]
}

// KL records KL(q̃ ‖ p̃) on tp for the linearisation lin: q[t] and prior[t] give tensor t's
// means and standard deviations (flat Vars of P_t values; gradients flow to whichever require
// them), jitter is ε. When perOutput is set the output covariances keep only the blocks of equal
// output index (outputs independent a priori and a posteriori, as the reference code computes
// one |X_C|-dimensional KL per class), otherwise the Gaussians are joint over all D = |X_C|·Q
// outputs (eq. 11 as written).
func KL(tp *autodiff.Tape[float64], lin *Linearization, q, prior []Gaussian, jitter float64, perOutput bool) *autodiff.Var[float64] {
	D := lin.D()
	var kq, kp, delta *autodiff.Var[float64]
	acc := func(s, x *autodiff.Var[float64]) *autodiff.Var[float64] {
		if s == nil {
			return x
		}
		return tp.Add(s, x)
	}
	for t, blk := range lin.Blocks {
		p := len(blk) / D
		j := tp.Const(blk, D, p)
		a := tp.Mul(j, tp.Reshape(q[t].SD, p))
		kq = acc(kq, tp.MatMulTrans(a, a, false, true))
		a0 := tp.Mul(j, tp.Reshape(prior[t].SD, p))
		kp = acc(kp, tp.MatMulTrans(a0, a0, false, true))
		d := tp.Reshape(tp.Sub(q[t].Mean, prior[t].Mean), p, 1)
		delta = acc(delta, tp.MatMul(j, d))
	}
	if perOutput && lin.Outputs > 1 {
		mask := make([]float64, D*D)
		for r := 0; r < D; r++ {
			for c := 0; c < D; c++ {
				if r%lin.Outputs == c%lin.Outputs {
					mask[r*D+c] = 1
				}
			}
		}
		m := tp.Const(mask, D, D)
		kq, kp = tp.Mul(kq, m), tp.Mul(kp, m)
	}
	eye := make([]float64, D*D)
	for i := 0; i < D; i++ {
		eye[i*D+i] = jitter
	}
	e := tp.Const(eye, D, D)
	lq := tp.Cholesky(tp.Add(kq, e))
	lp := tp.Cholesky(tp.Add(kp, e))
	x := tp.SolveTriangular(lp, lq, true, true, false) // L_p⁻¹L_q: tr(K_p⁻¹K_q) = ‖x‖²_F
	z := tp.SolveTriangular(lp, delta, true, true, false)
	s := tp.Add(tp.Sum(tp.Square(x)), tp.Sum(tp.Square(z)))
	s = tp.Add(s, tp.Sub(tp.LogDetChol(lp), tp.LogDetChol(lq)))
	return tp.Scale(tp.AddScalar(s, -float64(D)), 0.5)
}

// Options configure AddKLGrad.
type Options struct {
	// Jitter is ε (0: DefaultJitter).
	Jitter float64
	// PerOutput makes the output Gaussians independent across outputs (see KL).
	PerOutput bool
	// Tape evaluates the KL with KL on the autodiff tape and differentiates it by reverse mode:
	// the reference path (several times slower than the direct one, kept for tests and the
	// step-cost benchmark).
	Tape bool
	// Workspace holds the direct path's buffers between calls (nil: allocated per call).
	Workspace *Workspace
	// JacobianGrad, when not nil (one D×P_t block per tensor, like Linearization.Blocks),
	// receives ∂KL/∂J (direct path only), for the part of the gradient that flows through the
	// linearisation point (JacobianVJP): through the J of q̃'s covariance only, the prior side
	// (K_p and δ) held fixed as the reference code stops its prior's gradient, or with
	// JacobianGradPriorSide through every J (the exact derivative of the linearised KL).
	JacobianGrad          [][]float64
	JacobianGradPriorSide bool
	// JacobianRows, for a factored linearisation (Linearize), receives ∂KL/∂J as rows formed on
	// demand instead of D×P_t blocks; JacobianVJP reads either.
	JacobianRows *FactoredRows
}

// AddKLGrad evaluates the function-space KL of the network's ffg tensors ts at lin and adds
// scale·∂KL/∂μ to each tensor's Mean.Grad and scale·∂KL/∂ρ to its RawSD.Grad (σ = softplus(ρ),
// clamped at MaxSD as the layers do). J is a constant: the gradient does not flow through the
// linearisation point. By default it computes the KL and the gradient directly in float64
// (directKL: Gram products and closed-form gradients; tp is not used); with o.Tape it records KL
// on tp (Reset first) in float64 and runs reverse mode. It returns the KL.
func AddKLGrad[T bnn.Float](tp *autodiff.Tape[float64], ts []bnn.FFGTensor[T], lin *Linearization, scale float64, o Options) (float64, error) {
	if lin.factors != nil && o.Tape {
		dense := *lin
		dense.Blocks, dense.factors = lin.Dense(), nil
		lin = &dense
	}
	if o.JacobianRows != nil && lin.factors == nil {
		return 0, errors.New("fsvi: JacobianRows needs a factored linearisation (Linearize of a network of Linear layers)")
	}
	nt := len(lin.Blocks)
	for _, f := range lin.factors {
		nt = max(nt, f.w+1, f.b+1)
	}
	if len(ts) != nt {
		return 0, fmt.Errorf("fsvi: %d tensors for a linearisation of %d", len(ts), nt)
	}
	jitter := o.Jitter
	if jitter == 0 {
		jitter = DefaultJitter
	}
	sizes := make([]int, len(ts))
	for i := range lin.Blocks {
		sizes[i] = len(lin.Blocks[i]) / max(lin.D(), 1)
	}
	for _, f := range lin.factors {
		sizes[f.w] = f.dOut * f.dIn
		if f.b >= 0 {
			sizes[f.b] = f.dOut
		}
	}
	for i, t := range ts {
		p := len(t.Mean.Value)
		if sizes[i] != p || (lin.Blocks != nil && len(lin.Blocks[i]) != lin.D()*p) || len(t.RawSD.Value) != p || len(t.PriorMean.Value) != p || len(t.PriorSD.Value) != p {
			return 0, fmt.Errorf("fsvi: tensor %d (layer %q): sizes do not match the linearisation", i, t.Layer)
		}
	}
	if o.JacobianGrad != nil {
		if o.Tape {
			return 0, errors.New("fsvi: JacobianGrad needs the direct path (Options.Tape unset)")
		}
		if len(o.JacobianGrad) != len(ts) {
			return 0, fmt.Errorf("fsvi: JacobianGrad has %d blocks for a linearisation of %d", len(o.JacobianGrad), len(ts))
		}
		for i, b := range o.JacobianGrad {
			if len(b) != lin.D()*sizes[i] {
				return 0, fmt.Errorf("fsvi: JacobianGrad block %d has %d values, want %d", i, len(b), lin.D()*sizes[i])
			}
		}
	}
	var v float64
	gmu := make([][]float64, len(ts))
	grho := make([][]float64, len(ts))
	if o.Tape {
		tp.Reset()
		q := make([]Gaussian, len(ts))
		prior := make([]Gaussian, len(ts))
		means := make([]*autodiff.Var[float64], len(ts))
		raws := make([]*autodiff.Var[float64], len(ts))
		for i, t := range ts {
			p := len(t.Mean.Value)
			means[i] = tp.Leaf(f64.From(t.Mean.Value), p)
			raws[i] = tp.Leaf(f64.From(t.RawSD.Value), p)
			sd := tp.Softplus(raws[i])
			if t.HasMax {
				sd = tp.Clamp(sd, 0, t.MaxSD)
			}
			q[i] = Gaussian{Mean: means[i], SD: sd}
			prior[i] = Gaussian{Mean: tp.Const(f64.From(t.PriorMean.Value), p), SD: tp.Const(f64.From(t.PriorSD.Value), p)}
		}
		kl := KL(tp, lin, q, prior, jitter, o.PerOutput)
		if err := tp.Backward(kl); err != nil {
			return 0, fmt.Errorf("fsvi: KL: %w", err)
		}
		v = kl.Item()
		for i := range ts {
			gmu[i], grho[i] = means[i].Grad(), raws[i].Grad()
		}
	} else {
		ws := o.Workspace
		if ws == nil {
			ws = &Workspace{}
		}
		views := make([]tensorView, len(ts))
		for i, t := range ts {
			views[i] = tensorView{mean: f64.From(t.Mean.Value), rawSD: f64.From(t.RawSD.Value), priorMean: f64.From(t.PriorMean.Value),
				priorSD: f64.From(t.PriorSD.Value), hasMax: t.HasMax, maxSD: t.MaxSD}
			gmu[i], grho[i] = make([]float64, len(t.Mean.Value)), make([]float64, len(t.Mean.Value))
		}
		var err error
		if lin.factors != nil {
			v, err = factoredKL(ws, views, lin, jitter, o.PerOutput, gmu, grho, o.JacobianGrad, o.JacobianRows, o.JacobianGradPriorSide)
		} else {
			v, err = directKL(ws, views, lin, jitter, o.PerOutput, gmu, grho, o.JacobianGrad, o.JacobianGradPriorSide)
		}
		if err != nil {
			return 0, err
		}
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("fsvi: the function-space KL is %v", v)
	}
	for i, t := range ts {
		for k, g := range gmu[i] {
			t.Mean.Grad[k] += T(scale * g)
		}
		for k, g := range grho[i] {
			t.RawSD.Grad[k] += T(scale * g)
		}
	}
	return v, nil
}

// DefaultVJPStep is the largest change of any mean in JacobianVJP's finite differences.
const DefaultVJPStep = 1e-3

// maxAbs is max |v| over every slice, NaN if any is NaN (plain comparisons: the max builtin's
// NaN and signed-zero rules cost several times more in this loop over all P parameters per
// output).
func maxAbs(bufs [][]float64) float64 {
	m := 0.0
	for _, g := range bufs {
		for _, v := range g {
			if a := math.Abs(v); a > m {
				m = a
			} else if a != a {
				return a
			}
		}
	}
	return m
}

// RowSource gives ∂KL/∂J one row at a time, one P_t slice per tensor: *FactoredRows, or
// BlockRows for D×P_t blocks (Options.JacobianGrad).
type RowSource interface {
	Row(r int, dst [][]float64)
}

// BlockRows is ∂KL/∂J held as one D×P_t block per tensor.
type BlockRows [][]float64

// Row copies row r of every block into dst.
func (b BlockRows) Row(r int, dst [][]float64) {
	for i, blk := range b {
		p := len(dst[i])
		copy(dst[i], blk[r*p:(r+1)*p])
	}
}

// JacobianVJP adds to out (one P_t slice per tensor) the part of ∂KL/∂μ that flows through the
// linearisation point, Σ_r ∇²_μ f_r(μ) g_r, for the context inputs x of Jacobian and dJ = ∂KL/∂J
// (Options.JacobianGrad as BlockRows, or Options.JacobianRows; g_r its row r). Each
// Hessian-vector product is a central difference of the reverse-mode gradient of output r along
// g_r: ∇f_r(μ + h g_r) − ∇f_r(μ − h g_r) over 2h, with h = step/max|g_r| (step 0:
// DefaultVJPStep), i.e. two forward and two reverse passes of one example per output dimension,
// twice the work of Jacobian's reverse passes. The means are restored exactly; tp is Reset and
// every parameter's gradient cleared on return.
func JacobianVJP[T bnn.Float](tp *autodiff.Tape[T], net *bnn.Net[T], ts []bnn.FFGTensor[T], x []T, m int, shape []int,
	dJ RowSource, out [][]float64, step float64) error {
	dim := 1
	for _, s := range shape {
		dim *= s
	}
	if m < 1 || len(x) != m*dim {
		return fmt.Errorf("fsvi: %d context values for %d points of shape %v", len(x), m, shape)
	}
	if len(out) != len(ts) || dJ == nil {
		return fmt.Errorf("fsvi: JacobianVJP: %d outputs for %d tensors (and a gradient: %v)", len(out), len(ts), dJ != nil)
	}
	if step == 0 {
		step = DefaultVJPStep
	}
	saved := make([][]T, len(ts))
	rowBuf := make([][]float64, len(ts))
	for i, t := range ts {
		saved[i] = append([]T(nil), t.Mean.Value...)
		rowBuf[i] = make([]float64, len(t.Mean.Value))
		if len(out[i]) != len(t.Mean.Value) {
			return fmt.Errorf("fsvi: JacobianVJP: tensor %d (layer %q): sizes do not match", i, t.Layer)
		}
	}
	one := append([]int{1}, shape...)
	tp.Reset()
	net.Begin()
	Q := net.ForwardMean(tp, tp.Const(x[:dim], one...)).Len()
	if err := tp.Err(); err != nil {
		return fmt.Errorf("fsvi: JacobianVJP forward pass: %w", err)
	}
	if b, ok := dJ.(BlockRows); ok {
		if len(b) != len(ts) {
			return fmt.Errorf("fsvi: JacobianVJP: %d gradient blocks for %d tensors", len(b), len(ts))
		}
		for i, blk := range b {
			if len(blk) != m*Q*len(ts[i].Mean.Value) {
				return fmt.Errorf("fsvi: JacobianVJP: tensor %d (layer %q): %d gradient values, want %d×%d", i, ts[i].Layer, len(blk), m*Q, len(ts[i].Mean.Value))
			}
		}
	}
	defer func() {
		tp.Reset()
		for i, t := range ts {
			copy(t.Mean.Value, saved[i])
		}
		for _, p := range net.Params() {
			clear(p.Grad)
		}
	}()
	seed := make([]T, Q)
	// grad runs output q of point n at μ + s·g (g = rowBuf) and adds sign·∇f_r / (2h) to out.
	grad := func(n, q int, s, sign float64) error {
		for i, t := range ts {
			g := rowBuf[i]
			for k := range t.Mean.Value {
				t.Mean.Value[k] = saved[i][k] + T(s*g[k])
			}
		}
		tp.Reset()
		net.Begin()
		o := net.ForwardMean(tp, tp.Const(x[n*dim:(n+1)*dim], one...))
		if err := tp.Err(); err != nil {
			return fmt.Errorf("fsvi: Hessian-vector product forward pass: %w", err)
		}
		if o.Len() != Q {
			return fmt.Errorf("fsvi: JacobianVJP: %d outputs, the linearisation has %d", o.Len(), Q)
		}
		tp.ZeroGrads()
		clear(seed)
		seed[q] = 1
		if err := tp.BackwardFrom(o, seed); err != nil {
			return fmt.Errorf("fsvi: Hessian-vector product reverse pass: %w", err)
		}
		for i, t := range ts {
			for k, v := range t.Mean.Grad {
				out[i][k] += sign * float64(v)
			}
		}
		return nil
	}
	for n := 0; n < m; n++ {
		for q := 0; q < Q; q++ {
			dJ.Row(n*Q+q, rowBuf)
			gmax := maxAbs(rowBuf)
			if math.IsNaN(gmax) || math.IsInf(gmax, 0) {
				return fmt.Errorf("fsvi: JacobianVJP: row %d of ∂KL/∂J is not finite", n*Q+q)
			}
			if gmax == 0 {
				continue
			}
			h := step / gmax
			if err := grad(n, q, h, 1/(2*h)); err != nil {
				return err
			}
			if err := grad(n, q, -h, -1/(2*h)); err != nil {
				return err
			}
		}
	}
	return nil
}
