package bnn

import (
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// affine is what Linear and Conv2d layers share: the geometry of W (dOut × dIn, the bias as the
// last column when present) and how to apply a weight and bias to an input batch.
type affine struct {
	name         string
	dOut, k, dIn int
	bias, conv   bool
	wshape       []int
	opt          autodiff.Conv2DOptions
	// tensors is the runtime's declaration of the layer's tensors (runtime.LayerTensors), from
	// which its parameters are made (declared).
	tensors []runtime.TensorDecl
}

// apply computes the layer's output for x with weight w (wshape) and bias b (dOut, or nil).
func applyAffine[T Float](tp *autodiff.Tape[T], a *affine, x, w, b *autodiff.Var[T]) *autodiff.Var[T] {
	if a.conv {
		return tp.Conv2D(x, w, b, a.opt)
	}
	return tp.Linear(x, w, b)
}

// applyMatrix applies a sampled dOut × dIn matrix W (bias as the last column).
func applyMatrix[T Float](tp *autodiff.Tape[T], a *affine, x, W *autodiff.Var[T]) *autodiff.Var[T] {
	w := W
	var b *autodiff.Var[T]
	if a.bias {
		w = tp.Slice(W, 1, 0, a.k)
		b = tp.Reshape(tp.Slice(W, 1, a.k, a.k+1), a.dOut)
	}
	if a.conv {
		w = tp.Reshape(w, a.wshape...)
	}
	return applyAffine(tp, a, x, w, b)
}

// torchInit returns PyTorch's default Linear/Conv2d initialisation (kaiming_uniform with a = √5,
// i.e. U(−1/√fan_in, 1/√fan_in) for the weight, and the same bound for the bias).
func torchInit(rng *rand.Rand, n, fanIn int) []float64 {
	bound := 1 / math.Sqrt(float64(fanIn))
	out := make([]float64, n)
	for i := range out {
		out[i] = (2*rng.Float64() - 1) * bound
	}
	return out
}

// deterministic is a plain Linear or Conv2d layer: <name>.weight and <name>.bias.
type deterministic[T Float] struct {
	affine
	w, b Param[T]
}

func newDeterministic[T Float](a affine, rng *rand.Rand) (layer[T], error) {
	l := &deterministic[T]{affine: a}
	d := declare[T](a.name, a.tensors)
	l.w = d.param("weight", torchInit(rng, a.dOut*a.k, a.k))
	if a.bias {
		l.b = d.param("bias", torchInit(rng, a.dOut, a.k))
	}
	return l, d.done()
}

func (l *deterministic[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], _ *Context[T]) *autodiff.Var[T] {
	var b *autodiff.Var[T]
	if l.bias {
		b = tp.Param(l.b.Param)
	}
	return applyAffine(tp, &l.affine, x, tp.Param(l.w.Param), b)
}

func (l *deterministic[T]) params() []Param[T] {
	if l.bias {
		return []Param[T]{l.w, l.b}
	}
	return []Param[T]{l.w}
}

func (l *deterministic[T]) kl(*autodiff.Tape[T]) *autodiff.Var[T] { return nil }
func (l *deterministic[T]) name() string                          { return l.affine.name }

// ffg is bayesianize's FFGMixin: W ~ N(weight_mean, softplus(_weight_sd)²) elementwise (sd
// clamped at max_sd), likewise the bias, with prior buffers prior_{weight,bias}_{mean,sd}. In
// training it samples outputs with the local reparameterisation (mean x·M, variance x²·S² +
// 1e-6) unless whole is set (Init.WholeWeights: bayesianize's local_reparameterization false),
// otherwise whole weights, one W and b per pass. (bayesianize's layer with the default
// local_reparameterization true samples outputs in evaluation too: each output has the same
// distribution either way; only outputs of different inputs of one batch are independent
// there and share W here.)
type ffg[T Float] struct {
	affine
	maxSD              float64
	wm, ws, bm, bs     Param[T]
	pwm, pws, pbm, pbs Param[T]
	hasMax, whole      bool
	// spcw and spcb hold the last raw sds their softplus was computed for, with its values and
	// derivatives: most raw sds do not change by an ulp in an optimizer step, and none between
	// the passes of one step (the fsvi_kl last_layer features sample the network again).
	spcw, spcb autodiff.SoftplusCache
}

// sd returns clamp(softplus(raw), 0, max_sd), the softplus taken from cache where raw's bits
// have not changed (l.spcw for the weights, l.spcb for the biases).
func (l *ffg[T]) sd(tp *autodiff.Tape[T], raw Param[T], cache *autodiff.SoftplusCache) *autodiff.Var[T] {
	s := tp.SoftplusCached(tp.Param(raw.Param), cache)
	if l.hasMax {
		s = tp.Clamp(s, 0, T(l.maxSD))
	}
	return s
}

func newFFG[T Float](a affine, p *runtime.PosteriorSpec, in Init, rng *rand.Rand) (layer[T], error) {
	l := &ffg[T]{affine: a, whole: in.WholeWeights}
	if p.MaxSD != nil {
		l.maxSD, l.hasMax = *p.MaxSD, true
	}
	nw := a.dOut * a.k
	rho := f64.SoftplusInv(in.InitSD)
	d := declare[T](a.name, a.tensors)
	l.wm = d.param("weight_mean", torchInit(rng, nw, a.k))
	l.ws = d.param("_weight_sd", full(nw, rho))
	l.pwm = d.param("prior_weight_mean", full(nw, in.PriorMean))
	l.pws = d.param("prior_weight_sd", full(nw, p.PriorSD))
	if a.bias {
		l.bm = d.param("bias_mean", torchInit(rng, a.dOut, a.k))
		l.bs = d.param("_bias_sd", full(a.dOut, rho))
		l.pbm = d.param("prior_bias_mean", full(a.dOut, in.PriorMean))
		l.pbs = d.param("prior_bias_sd", full(a.dOut, in.PriorBiasSD))
	}
	return l, d.done()
}

func (l *ffg[T]) params() []Param[T] {
	if l.bias {
		return []Param[T]{l.wm, l.ws, l.bm, l.bs, l.pwm, l.pws, l.pbm, l.pbs}
	}
	return []Param[T]{l.wm, l.ws, l.pwm, l.pws}
}

func (l *ffg[T]) name() string { return l.affine.name }

func (l *ffg[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	if c.Mean {
		// ForwardMean: every noise draw is zero, so w = μ exactly; σ (a softplus of every raw
		// value) is not needed, and neither are its zero gradients.
		var bm *autodiff.Var[T]
		if l.bias {
			bm = tp.Param(l.bm.Param)
		}
		out := applyAffine(tp, &l.affine, x, tp.Param(l.wm.Param), bm)
		if c.taps != nil {
			*c.taps = append(*c.taps, LayerTap[T]{Layer: l.affine.name, In: x, Out: out, Conv: l.affine.conv})
		}
		return out
	}
	wm, ws := tp.Param(l.wm.Param), l.sd(tp, l.ws, &l.spcw)
	var bm, bs *autodiff.Var[T]
	if l.bias {
		bm, bs = tp.Param(l.bm.Param), l.sd(tp, l.bs, &l.spcb)
	}
	if c.Train && !l.whole {
		mean := applyAffine(tp, &l.affine, x, wm, bm)
		var b2 *autodiff.Var[T]
		if l.bias {
			b2 = tp.Square(bs)
		}
		v := applyAffine(tp, &l.affine, tp.Square(x), tp.Square(ws), b2)
		return tp.NoisyMean(mean, v, 1e-6, c.normal(mean.Len()))
	}
	w := tp.AddMul(wm, ws, tp.Const(c.normal(len(l.wm.Value)), l.wshape...))
	var b *autodiff.Var[T]
	if l.bias {
		b = tp.AddMul(bm, bs, tp.Const(c.normal(l.dOut), l.dOut))
	}
	return applyAffine(tp, &l.affine, x, w, b)
}

// kl is Σ log(σ_p/σ) + (σ² + (μ−μ_p)²)/(2σ_p²) − ½ over weights and biases.
func (l *ffg[T]) kl(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	term := func(m, raw, pm, ps Param[T], cache *autodiff.SoftplusCache) *autodiff.Var[T] {
		s := l.sd(tp, raw, cache)
		psv := tp.Param(ps.Param)
		d := tp.Sub(tp.Param(m.Param), tp.Param(pm.Param))
		q := tp.Div(tp.Add(tp.Square(s), tp.Square(d)), tp.Scale(tp.Square(psv), 2))
		return tp.Sum(tp.AddScalar(tp.Add(tp.Sub(tp.Log(psv), tp.Log(s)), q), -0.5))
	}
	k := term(l.wm, l.ws, l.pwm, l.pws, &l.spcw)
	if l.bias {
		k = tp.Add(k, term(l.bm, l.bs, l.pbm, l.pbs, &l.spcb))
	}
	return k
}

// paramless is embedded by the layers without parameters (activations, flatten, pooling,
// dropout): no parameters, no KL term, and the layer's name.
type paramless[T Float] struct{ n string }

func (paramless[T]) params() []Param[T]                    { return nil }
func (paramless[T]) kl(*autodiff.Tape[T]) *autodiff.Var[T] { return nil }
func (l paramless[T]) name() string                        { return l.n }

// activation is an elementwise nonlinearity.
type activation[T Float] struct {
	paramless[T]
	op runtime.Op
}

func (a *activation[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], _ *Context[T]) *autodiff.Var[T] {
	switch a.op {
	case runtime.OpReLU:
		return tp.ReLU(x)
	case runtime.OpTanh:
		return tp.Tanh(x)
	case runtime.OpSigmoid:
		return tp.Sigmoid(x)
	default:
		return tp.GELU(x)
	}
}

// flatten reshapes (N, ...) to (N, size).
type flatten[T Float] struct {
	paramless[T]
	size int
}

func (f *flatten[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], _ *Context[T]) *autodiff.Var[T] {
	return tp.Reshape(x, x.Shape()[0], f.size)
}

// pool is MaxPool2d or AvgPool2d.
type pool[T Float] struct {
	paramless[T]
	max bool
	opt autodiff.Pool2DOptions
}

func (p *pool[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], _ *Context[T]) *autodiff.Var[T] {
	if p.max {
		return tp.MaxPool2D(x, p.opt)
	}
	return tp.AvgPool2D(x, p.opt)
}
