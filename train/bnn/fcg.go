package bnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// fcg is bayesianize's FCGMixin (FCG-W): one multivariate Gaussian q(θ) = N(μ, L Lᵀ) over the
// layer's parameters θ = (weight row-major, then bias), D = len(θ) ≤ runtime.MaxFCGDim, with
// L = diag(softplus(_scale_diag)) + tril(_scale_tril, −1) and the prior N(0, diag s²), s the
// spec's prior_sd for weights and prior_bias_sd for biases. Every forward pass draws one
// θ = μ + L ε shared by the batch (bayesianize samples the parameters, not the outputs).
// Parameters: mean (D, PyTorch's default initialisation of the weight then the bias),
// _scale_diag (D, softplus⁻¹(init_sd)) and _scale_tril (D × D, zeros; only its strict lower
// triangle is used and receives gradients), as bayesianize's state_dict.
type fcg[T Float] struct {
	affine
	dim              int
	mean, diag, tril Param[T]
	mask             []T // D × D: 1 on the strict lower triangle
	invVar           []T // D: 1/s_r²
	logPrior         float64
}

func newFCG[T Float](a affine, p *runtime.PosteriorSpec, in Init, rng *rand.Rand) (layer[T], error) {
	D := a.dOut * a.dIn
	if D > runtime.MaxFCGDim {
		return nil, fmt.Errorf("bnn: layer %q (fcg): a full covariance over its %d parameters exceeds runtime.MaxFCGDim = %d", a.name, D, runtime.MaxFCGDim)
	}
	if in.PriorMean != 0 {
		return nil, fmt.Errorf("bnn: layer %q (fcg): prior_mean %g is not supported (the prior is N(0, s²))", a.name, in.PriorMean)
	}
	if !(in.InitSD > 0) || math.IsInf(in.InitSD, 0) {
		return nil, fmt.Errorf("bnn: layer %q (fcg): init_sd %g must be positive and finite", a.name, in.InitSD)
	}
	bsd := p.PriorBiasSD
	if bsd == 0 {
		bsd = p.PriorSD
	}
	if !(p.PriorSD > 0) || !(bsd > 0) || math.IsInf(p.PriorSD, 0) || math.IsInf(bsd, 0) {
		return nil, fmt.Errorf("bnn: layer %q (fcg): prior sds %g (weights), %g (biases) must be positive and finite", a.name, p.PriorSD, bsd)
	}
	l := &fcg[T]{affine: a, dim: D}
	nw := a.dOut * a.k
	mean := torchInit(rng, nw, a.k)
	if a.bias {
		mean = append(mean, torchInit(rng, a.dOut, a.k)...)
	}
	d := declare[T](a.name, a.tensors)
	l.mean = d.param("mean", mean)
	l.diag = d.param("_scale_diag", full(D, f64.SoftplusInv(in.InitSD)))
	l.tril = d.param("_scale_tril", make([]float64, D*D))
	if err := d.done(); err != nil {
		return nil, err
	}
	l.mask = make([]T, D*D)
	for r := 0; r < D; r++ {
		for c := 0; c < r; c++ {
			l.mask[r*D+c] = 1
		}
	}
	l.invVar = make([]T, D)
	for r := range l.invVar {
		s := p.PriorSD
		if r >= nw {
			s = bsd
		}
		l.invVar[r] = T(1 / (s * s))
		l.logPrior += math.Log(s)
	}
	return l, nil
}

func (l *fcg[T]) params() []Param[T] { return []Param[T]{l.mean, l.diag, l.tril} }
func (l *fcg[T]) name() string       { return l.affine.name }

// chol returns L (D × D) and its diagonal softplus(_scale_diag).
func (l *fcg[T]) chol(tp *autodiff.Tape[T]) (L, diag *autodiff.Var[T]) {
	diag = tp.Softplus(tp.Param(l.diag.Param))
	L = tp.Add(tp.DiagEmbed(diag), tp.Mul(tp.Param(l.tril.Param), tp.Const(l.mask, l.dim, l.dim)))
	return L, diag
}

// theta returns the pass's parameter vector: μ in Mean mode, else μ + L ε.
func (l *fcg[T]) theta(tp *autodiff.Tape[T], c *Context[T]) *autodiff.Var[T] {
	mean := tp.Param(l.mean.Param)
	if c.Mean {
		return mean
	}
	L, _ := l.chol(tp)
	eps := tp.Const(c.normal(l.dim), l.dim, 1)
	return tp.Add(mean, tp.Reshape(tp.MatMul(L, eps), l.dim))
}

func (l *fcg[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	th := l.theta(tp, c)
	nw := l.dOut * l.k
	w := tp.Reshape(tp.Slice(th, 0, 0, nw), l.wshape...)
	var b *autodiff.Var[T]
	if l.bias {
		b = tp.Slice(th, 0, nw, l.dim)
	}
	return applyAffine(tp, &l.affine, x, w, b)
}

// kl is KL[N(μ, L Lᵀ) ‖ N(0, diag s²)] =
// ½ (Σ_rc L_rc²/s_r² + Σ_r μ_r²/s_r² − D + 2 Σ_r log s_r − 2 Σ_r log L_rr).
func (l *fcg[T]) kl(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	L, diag := l.chol(tp)
	iv := tp.Const(l.invVar, l.dim)
	tr := tp.Sum(tp.Mul(tp.Square(L), tp.Reshape(iv, l.dim, 1)))
	maha := tp.Sum(tp.Mul(tp.Square(tp.Param(l.mean.Param)), iv))
	logDetQ := tp.Scale(tp.Sum(tp.Log(diag)), 2)
	k := tp.Sub(tp.AddScalar(tp.Add(tr, maha), T(2*l.logPrior-float64(l.dim))), logDetQ)
	return tp.Scale(k, 0.5)
}
