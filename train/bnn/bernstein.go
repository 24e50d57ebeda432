package bnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// bernsteinLayer is a Linear or Conv2d layer with a mean-field Bernstein-flow posterior (kind
// "bernstein", train/bfvi, paper 002): each weight and bias has its own degree-M flow
// θ = flow(z; λ), z ~ N(0, 1), with raw parameters λ (M + 5 values) in <name>.bf_weight
// (weight shape × (M+5)) and <name>.bf_bias (out × (M+5)), the layout runtime.KindBernstein
// reads. The prior is N(0, σ²) with σ = PosteriorSpec.PriorSD for weights and Init.PriorBiasSD
// (0: PriorSD) for biases.
//
// A sampling pass draws one z per weight (a whole weight matrix per pass, no local
// reparameterisation: q is not Gaussian) and records θ on the tape as a custom op whose backward
// is ∂θ/∂λ from bfvi.Flow.Eval. A training pass also records the single-sample Monte-Carlo KL
// term log q(θ) − log p(θ) = log N(z) − log|dθ/dz| − log N(θ; 0, σ²), its gradient through
// ∂log|dθ/dz|/∂λ (Eval, custom op) and through θ; kl returns the average over the step's
// training passes (the ELBO's entropy and prior terms with the same reparameterised samples).
// In Mean mode the weights are each flow's mean as the runtime computes it (the trapezoid rule
// over its quantile table of PosteriorSpec.TableSize points), without gradient.
type bernsteinLayer[T Float] struct {
	affine
	m, g            int
	w, b            Param[T]
	priorSD, biasSD float64
	flows           []*bfvi.Flow // weight-matrix order (bias last column)
	rng             *rand.Rand   // for kl outside a training step
	pending         []*autodiff.Var[T]
	pendingTape     *autodiff.Tape[T]
	raw             []float64
	jac, jld        []float64 // per weight ∂θ/∂λ and ∂log|dθ/dz|/∂λ of the last sample
	theta           []T
}

// DefaultBernsteinDegree is the flows' degree M when PosteriorSpec.Degree is 0: the paper's
// choice for its multi-parameter models ("we did not tune the flexibility … M = 50").
const DefaultBernsteinDegree = 50

// DefaultBernsteinInitSD is the flows' initial standard deviation when Init.InitSD is 0 (as for
// a layer whose Init came from a deterministic spec, posterior bernstein_last).
const DefaultBernsteinInitSD = 0.05

func newBernstein[T Float](a affine, p *runtime.PosteriorSpec, in Init, rng *rand.Rand) (layer[T], error) {
	m := p.Degree
	if m < 1 || m > bfvi.MaxDegree {
		return nil, fmt.Errorf("bnn: layer %q: bernstein degree %d out of range [1, %d]", a.name, m, bfvi.MaxDegree)
	}
	g := p.TableSize
	if g == 0 {
		g = runtime.DefaultBernsteinTable
	}
	if in.PriorBiasSD == 0 {
		in.PriorBiasSD = p.PriorSD
	}
	if in.InitSD == 0 {
		in.InitSD = DefaultBernsteinInitSD
	}
	if !(p.PriorSD > 0) || !(in.PriorBiasSD > 0) {
		return nil, fmt.Errorf("bnn: layer %q: bernstein prior sd %g / bias prior sd %g must be positive", a.name, p.PriorSD, in.PriorBiasSD)
	}
	np := bfvi.NumFlowParams(m)
	l := &bernsteinLayer[T]{affine: a, m: m, g: g, priorSD: p.PriorSD, biasSD: in.PriorBiasSD,
		rng: rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())), raw: make([]float64, np)}
	// Initial flows: θ = lo + (hi − lo)·σ(z) (bfvi.FlowParamsLinear), centred at PyTorch's
	// initial weight with standard deviation ≈ 0.21·(hi − lo) = InitSD.
	width := in.InitSD / 0.21
	initFlows := func(centres []float64) ([]float64, error) {
		out := make([]float64, 0, len(centres)*np)
		for _, c := range centres {
			fp, err := bfvi.FlowParamsLinear(m, c-width/2, c+width/2)
			if err != nil {
				return nil, fmt.Errorf("bnn: layer %q: %w", a.name, err)
			}
			out = append(out, fp...)
		}
		return out, nil
	}
	wv, err := initFlows(torchInit(rng, a.dOut*a.k, a.k))
	if err != nil {
		return nil, err
	}
	d := declare[T](a.name, a.tensors)
	l.w = d.param("bf_weight", wv)
	if a.bias {
		bv, err := initFlows(torchInit(rng, a.dOut, a.k))
		if err != nil {
			return nil, err
		}
		l.b = d.param("bf_bias", bv)
	}
	if err := d.done(); err != nil {
		return nil, err
	}
	n := a.dOut * a.dIn
	l.flows = make([]*bfvi.Flow, n)
	for i := range l.flows {
		p0, _ := bfvi.FlowParamsLinear(m, 0, 1)
		if l.flows[i], err = bfvi.NewFlow(m, p0); err != nil {
			return nil, err
		}
	}
	l.jac, l.jld = make([]float64, n*np), make([]float64, n*np)
	l.theta = make([]T, n)
	return l, nil
}

func (l *bernsteinLayer[T]) name() string { return l.affine.name }

func (l *bernsteinLayer[T]) params() []Param[T] {
	if l.bias {
		return []Param[T]{l.w, l.b}
	}
	return []Param[T]{l.w}
}

// rawSlice returns weight i's raw flow parameters in p (bf_weight for weight columns, bf_bias
// for the bias column), for Value or Grad.
func (l *bernsteinLayer[T]) rawSlice(i int, w, b []T) []T {
	np := l.m + 5
	o, j := i/l.dIn, i%l.dIn
	if j < l.k {
		return w[(o*l.k+j)*np : (o*l.k+j+1)*np]
	}
	return b[o*np : (o+1)*np]
}

// sync loads the current parameter values into the flows.
func (l *bernsteinLayer[T]) sync() error {
	var bv []T
	if l.bias {
		bv = l.b.Value
	}
	for i, f := range l.flows {
		for k, v := range l.rawSlice(i, l.w.Value, bv) {
			l.raw[k] = float64(v)
		}
		if err := f.SetParams(l.raw); err != nil {
			return fmt.Errorf("bnn: layer %q: flow of weight %d: %w", l.affine.name, i, err)
		}
	}
	return nil
}

// CheckFlows loads every Bernstein-flow layer's current parameters into its flows, as a
// sampling pass does, and returns the first failure (wrapping bfvi.ErrParamRange for parameters
// that are not finite or whose scales underflow): nil when every flow is usable, or the network
// has none. The trainer calls it after an epoch's last update, which no later pass checks
// before evaluation and the checkpoint.
func (n *Net[T]) CheckFlows() error {
	for _, l := range leaves(n.layers) {
		if b, ok := l.(*bernsteinLayer[T]); ok {
			if err := b.sync(); err != nil {
				return err
			}
		}
	}
	return nil
}

// priorVar returns σ² of weight i's prior.
func (l *bernsteinLayer[T]) priorVar(i int) float64 {
	if i%l.dIn == l.k && l.bias {
		return l.biasSD * l.biasSD
	}
	return l.priorSD * l.priorSD
}

// sample records one weight matrix θ(z) (dOut × dIn) on the tape and, when kl is set, the
// Monte-Carlo KL term of the same sample.
func (l *bernsteinLayer[T]) sample(tp *autodiff.Tape[T], z []T, kl bool) (W, klv *autodiff.Var[T]) {
	if err := l.sync(); err != nil {
		return tp.Fail(err), nil
	}
	np := l.m + 5
	logq := 0.0
	for i, f := range l.flows {
		zi := float64(z[i])
		th, ld := f.Eval(zi, l.jac[i*np:(i+1)*np], l.jld[i*np:(i+1)*np])
		l.theta[i] = T(th)
		logq += -0.5*zi*zi - 0.5*math.Log(2*math.Pi) - ld
	}
	ins := []*autodiff.Var[T]{tp.Param(l.w.Param)}
	if l.bias {
		ins = append(ins, tp.Param(l.b.Param))
	}
	// Each backward closure reads the Jacobians of this sample: copy them.
	jac := append([]float64(nil), l.jac...)
	scatter := func(gs [][]T, i int, scale float64, j []float64) {
		var gb []T
		if l.bias {
			gb = gs[1]
		}
		if gs[0] == nil {
			return
		}
		dst := l.rawSlice(i, gs[0], gb)
		for k := range dst {
			dst[k] += T(scale * j[i*np+k])
		}
	}
	W = tp.Custom("BernsteinFlow", []int{l.dOut, l.dIn}, l.theta, func(g []T, gs [][]T) {
		for i, gi := range g {
			if gi != 0 {
				scatter(gs, i, float64(gi), jac)
			}
		}
	}, ins...)
	if !kl {
		return W, nil
	}
	jld := append([]float64(nil), l.jld...)
	lq := tp.Custom("BernsteinLogQ", nil, []T{T(logq)}, func(g []T, gs [][]T) {
		for i := range l.flows {
			scatter(gs, i, -float64(g[0]), jld)
		}
	}, ins...)
	// −log p(θ) = Σ θ²/(2σ²) + Σ ½ log(2πσ²).
	inv := make([]T, len(l.flows))
	c := 0.0
	for i := range inv {
		v := l.priorVar(i)
		inv[i] = T(1 / (2 * v))
		c += 0.5 * math.Log(2*math.Pi*v)
	}
	nlp := tp.AddScalar(tp.Sum(tp.Mul(tp.Square(W), tp.Const(inv, l.dOut, l.dIn))), T(c))
	return W, tp.Add(lq, nlp)
}

func (l *bernsteinLayer[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	if c.Mean {
		mw, err := l.meanWeights()
		if err != nil {
			return tp.Fail(err)
		}
		return applyMatrix(tp, &l.affine, x, tp.Const(mw, l.dOut, l.dIn))
	}
	W, klv := l.sample(tp, c.normal(l.dOut*l.dIn), c.Train)
	if klv != nil {
		if l.pendingTape != tp {
			l.pending, l.pendingTape = l.pending[:0], tp
		}
		l.pending = append(l.pending, klv)
	}
	return applyMatrix(tp, &l.affine, x, W)
}

// begin forgets the previous step's KL terms (Net.Begin).
func (l *bernsteinLayer[T]) begin() { l.pending, l.pendingTape = l.pending[:0], nil }

// kl returns the Monte-Carlo KL estimate averaged over this step's training passes, or, outside
// a training step, over 16 fresh samples.
func (l *bernsteinLayer[T]) kl(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	terms := l.pending
	if l.pendingTape != tp || len(terms) == 0 {
		terms = nil
		z := make([]T, l.dOut*l.dIn)
		for s := 0; s < 16; s++ {
			for i := range z {
				z[i] = T(l.rng.NormFloat64())
			}
			_, k := l.sample(tp, z, true)
			terms = append(terms, k)
		}
	}
	sum := terms[0]
	for _, k := range terms[1:] {
		sum = tp.Add(sum, k)
	}
	l.pending, l.pendingTape = l.pending[:0], nil
	return tp.Scale(sum, T(1/float64(len(terms))))
}

// meanWeights returns each flow's mean as the runtime computes it: the mean of the
// piecewise-linear quantile function through θ(Φ⁻¹(i/(G−1))), i = 0 … G−1.
func (l *bernsteinLayer[T]) meanWeights() ([]T, error) {
	if err := l.sync(); err != nil {
		return nil, err
	}
	g := l.g
	out := make([]T, len(l.flows))
	for i, f := range l.flows {
		lo, hi := f.Support()
		prev, s := lo, 0.0
		for j := 1; j < g; j++ {
			q := hi
			if j < g-1 {
				q = f.Forward(-math.Sqrt2 * math.Erfcinv(2*float64(j)/float64(g-1)))
			}
			s += (prev + q) / 2
			prev = q
		}
		out[i] = T(s / float64(g-1))
	}
	return out, nil
}
