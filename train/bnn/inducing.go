package bnn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// jitter is bayesianize's relative Cholesky jitter (EPS in inducing.py).
const jitter = 1e-4

// inducing is bayesianize's InducingMixin (MATH.md §1) as an autodiff graph.
type inducing[T Float] struct {
	affine
	mo, mi   int
	sigma    float64
	maxLamda float64 // +Inf when unclamped; 0: W given U is a point estimate (pointW)
	maxSDU   float64 // +Inf when unclamped; 0 (diagonal q): U is a point estimate (pointU)
	q        string
	whitened bool
	ensemble int
	// jit is the relative Cholesky jitter (bayesianize's EPS); tests set it to zero so that
	// finite differences see the same function as the (detached-jitter) gradient.
	jit     float64
	zRow    Param[T]
	zCol    Param[T]
	dRow    Param[T]
	dCol    Param[T]
	lamda   Param[T]
	mean    Param[T]
	sd      Param[T] // diagonal
	tril    Param[T] // full
	rowTril Param[T] // matrix
	colTril Param[T] // matrix
	guRow   int      // global: the layer's first row in U_{1:L}
	// beta multiplies the conditional KL R(λ) in kl: 1 for bayesianize's ELBO (paper 003 eq. 9),
	// min(1, N/d_in) for the function-space-weighted objective (appendix G, eq. 45;
	// Net.UseFunctionSpaceKL).
	beta float64
}

func newInducing[T Float](a affine, p *runtime.PosteriorSpec, in Init, rng *rand.Rand) (layer[T], error) {
	mo, mi := p.InducingRows, p.InducingCols
	errf := func(format string, args ...any) error {
		return fmt.Errorf("bnn: layer %q (inducing): %s", a.name, fmt.Sprintf(format, args...))
	}
	if mo < 1 || mi < 1 || mo > 4096 || mi > 4096 {
		return nil, errf("inducing_rows %d / inducing_cols %d out of range", mo, mi)
	}
	if !(p.PriorSD > 0) || math.IsInf(p.PriorSD, 0) {
		return nil, errf("prior_sd %g must be positive and finite", p.PriorSD)
	}
	if !(in.InitLamda > 0) {
		return nil, errf("init_lamda %g must be positive", in.InitLamda)
	}
	l := &inducing[T]{affine: a, mo: mo, mi: mi, sigma: p.PriorSD, q: p.QInducing, whitened: p.WhitenedU,
		maxLamda: math.Inf(1), maxSDU: math.Inf(1), jit: jitter, beta: 1}
	if p.MaxLamda != nil {
		l.maxLamda = *p.MaxLamda
	}
	if p.MaxSDU != nil {
		l.maxSDU = *p.MaxSDU
	}
	dc := declare[T](a.name, a.tensors)
	// Same order of random draws as bayesianize's constructor: z_row, z_col, then q(U).
	l.zRow = dc.param("z_row", randn(rng, mo*a.dOut, 1/math.Sqrt(float64(mo))))
	l.zCol = dc.param("z_col", randn(rng, mi*a.dIn, 1/math.Sqrt(float64(mi))))
	d := mo * mi
	small := f64.SoftplusInv(1e-3)
	// q(U)'s initial scale: bayesianize's softplus⁻¹(1e-3) unless in.InitSDU is set (the
	// matrix form's row and column factors multiply, so each gets the square root).
	sdU, sdRowCol := small, small
	if in.InitSDU > 0 {
		if l.q == runtime.QEnsemble {
			return nil, errf("init_sd_u %g: an ensemble q(U) has no variance", in.InitSDU)
		}
		sdU, sdRowCol = f64.SoftplusInv(in.InitSDU), f64.SoftplusInv(math.Sqrt(in.InitSDU))
	}
	switch l.q {
	case runtime.QFull:
		if d > 4096 {
			return nil, errf("q_inducing full needs a %d×%d covariance factor; use fewer inducing rows/cols", d, d)
		}
		l.mean = dc.param("inducing_mean", randn(rng, d, 1))
		l.tril = dc.param("_inducing_scale_tril", append(full(d, sdU), make([]float64, d*(d-1)/2)...))
	case runtime.QMatrix:
		l.mean = dc.param("inducing_mean", randn(rng, d, 1))
		l.rowTril = dc.param("_inducing_row_scale_tril", append(full(mo, sdRowCol), make([]float64, mo*(mo-1)/2)...))
		l.colTril = dc.param("_inducing_col_scale_tril", append(full(mi, sdRowCol), make([]float64, mi*(mi-1)/2)...))
	case runtime.QDiagonal:
		l.mean = dc.param("inducing_mean", randn(rng, d, 1))
		l.sd = dc.param("_inducing_sd", full(d, sdU))
	case runtime.QGlobal:
		// U is the layer's block of the global U_{1:L} (Net.global): no q(U) tensors.
		if !l.whitened {
			return nil, errf("q_inducing global needs whitened_u")
		}
		if in.InitSDU > 0 {
			return nil, errf("init_sd_u %g: a global-U layer has no q(U) of its own (the global_u posterior's init sets it)", in.InitSDU)
		}
	case runtime.QEnsemble:
		k := p.EnsembleSize
		if k < 1 || k > 1024 {
			return nil, errf("ensemble_size %d out of range", k)
		}
		l.ensemble = k
		base := randn(rng, d, 1)
		m := randn(rng, k*d, 0.1)
		for i := range m {
			m[i] += base[i%d]
		}
		l.mean = dc.param("inducing_mean", m)
	default:
		return nil, errf("q_inducing %q is not diagonal, full, matrix or ensemble", l.q)
	}
	l.lamda = dc.param("_lamda", []float64{f64.SoftplusInv(in.InitLamda)})
	l.lamda.Trainable = in.LearnLamda
	l.dRow = dc.param("_d_row", full(mo, small))
	l.dCol = dc.param("_d_col", full(mi, small))
	return l, dc.done()
}

func (l *inducing[T]) name() string { return l.affine.name }

func (l *inducing[T]) params() []Param[T] {
	ps := []Param[T]{l.zRow, l.zCol}
	for _, p := range []Param[T]{l.mean, l.sd, l.tril, l.rowTril, l.colTril} {
		if p.Param != nil {
			ps = append(ps, p)
		}
	}
	return append(ps, l.lamda, l.dRow, l.dCol)
}

// factors returns the jittered Cholesky factors of Ψ_r = Z_r Z_rᵀ + D_r² and Ψ_c, and the
// diagonals of D_r and D_c.
func (l *inducing[T]) factors(tp *autodiff.Tape[T]) (lr, lc, dr, dc *autodiff.Var[T]) {
	zr, zc := tp.Param(l.zRow.Param), tp.Param(l.zCol.Param)
	dr, dc = tp.Softplus(tp.Param(l.dRow.Param)), tp.Softplus(tp.Param(l.dCol.Param))
	lr = tp.JitteredCholesky(tp.Add(tp.MatMulTrans(zr, zr, false, true), tp.DiagEmbed(tp.Square(dr))), T(l.jit))
	lc = tp.JitteredCholesky(tp.Add(tp.MatMulTrans(zc, zc, false, true), tp.DiagEmbed(tp.Square(dc))), T(l.jit))
	return lr, lc, dr, dc
}

// pointW reports whether max_lamda = 0: q(W|U) is then the delta measure at p(W|U)'s mean
// (paper 003, appendix J: λ_max = 0 is a point estimate of W given U), so λ is exactly 0 and the
// conditional KL R(λ), infinite for a delta, is left out of the objective.
func (l *inducing[T]) pointW() bool { return l.maxLamda == 0 }

// pointU reports whether max_sd_u = 0 with a diagonal q(U): q(U) is then the delta measure at its
// mean (paper 003, appendix J: σ_max = 0 is a MAP estimate of U), and kl uses −log p(U) at the
// mean in place of KL[q(U) ‖ p(U)], which is infinite for a delta.
func (l *inducing[T]) pointU() bool { return l.maxSDU == 0 && l.q == runtime.QDiagonal }

// lam returns λ = clamp(softplus(_lamda), 0, max_lamda) as a scalar (the constant 0 when
// max_lamda = 0, so that no gradient flows through log λ).
func (l *inducing[T]) lam(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	if l.pointW() {
		return tp.Scalar(0)
	}
	var raw *autodiff.Var[T]
	if l.lamda.Trainable {
		raw = tp.Param(l.lamda.Param)
	} else {
		raw = tp.Const(l.lamda.Value)
	}
	lam := tp.Softplus(tp.Reshape(raw))
	if !math.IsInf(l.maxLamda, 1) {
		lam = tp.Clamp(lam, 0, T(l.maxLamda))
	}
	return lam
}

// sdU returns clamp(softplus(_inducing_sd), 0, max_sd_u).
func (l *inducing[T]) sdU(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	s := tp.Softplus(tp.Param(l.sd.Param))
	if !math.IsInf(l.maxSDU, 1) {
		s = tp.Clamp(s, 0, T(l.maxSDU))
	}
	return s
}

// sampleU draws u ~ q(U) as an mo × mi matrix (member for ensembles), before whitening.
func (l *inducing[T]) sampleU(tp *autodiff.Tape[T], c *Context[T]) *autodiff.Var[T] {
	mo, mi, d := l.mo, l.mi, l.mo*l.mi
	if l.q == runtime.QGlobal {
		return tp.Slice(c.globalU, 0, l.guRow, l.guRow+mo)
	}
	mean := tp.Param(l.mean.Param)
	switch l.q {
	case runtime.QEnsemble:
		return tp.Reshape(tp.Slice(mean, 0, c.Member, c.Member+1), mo, mi)
	case runtime.QDiagonal:
		eps := tp.Const(c.normal(d), mo, mi)
		return tp.Add(mean, tp.Mul(l.sdU(tp), eps))
	case runtime.QFull:
		L := tp.VecToChol(tp.Param(l.tril.Param))
		eps := tp.Const(c.normal(d), d, 1)
		return tp.Reshape(tp.Add(tp.Reshape(mean, d, 1), tp.MatMul(L, eps)), mo, mi)
	default: // matrix: mean + L_row ε L_colᵀ
		lrow := tp.VecToChol(tp.Param(l.rowTril.Param))
		lcol := tp.VecToChol(tp.Param(l.colTril.Param))
		eps := tp.Const(c.normal(d), mo, mi)
		return tp.Add(mean, tp.MatMulTrans(tp.MatMul(lrow, eps), lcol, false, true))
	}
}

// weight samples W (dOut × dIn) with the extended Matheron rule in its cheap form (MATH.md §1):
// W = σ (λ E1 + Z_rᵀ Ψ_r⁻¹ (u − λŪ) Ψ_c⁻¹ Z_c),
// Ū = Z_r E1 Z_cᵀ + L̂_r E2 D_c + D_r E3 L̂_cᵀ + D_r E4 D_c.
func (l *inducing[T]) weight(tp *autodiff.Tape[T], c *Context[T]) *autodiff.Var[T] {
	mo, mi, d := l.mo, l.mi, l.mo*l.mi
	zr, zc := tp.Param(l.zRow.Param), tp.Param(l.zCol.Param)
	lr, lc, dr, dc := l.factors(tp)
	lam := l.lam(tp)
	u := l.sampleU(tp, c)
	if l.whitened {
		u = tp.MatMulTrans(tp.MatMul(lr, u), lc, false, true)
	}
	e1 := tp.Const(c.normal(l.dOut*l.dIn), l.dOut, l.dIn)
	e2 := tp.Const(c.normal(d), mo, mi)
	e3 := tp.Const(c.normal(d), mo, mi)
	e4 := tp.Const(c.normal(d), mo, mi)
	lhr := tp.JitteredCholesky(tp.MatMulTrans(zr, zr, false, true), T(l.jit))
	lhc := tp.JitteredCholesky(tp.MatMulTrans(zc, zc, false, true), T(l.jit))
	drCol := tp.Reshape(dr, mo, 1)
	ubar := tp.MatMulTrans(tp.MatMul(zr, e1), zc, false, true)
	ubar = tp.Add(ubar, tp.Mul(tp.MatMul(lhr, e2), dc))
	ubar = tp.Add(ubar, tp.Mul(tp.MatMulTrans(e3, lhc, false, true), drCol))
	ubar = tp.Add(ubar, tp.Mul(tp.Mul(e4, dc), drCol))
	core := tp.Sub(u, tp.Mul(lam, ubar))
	core = tp.CholeskySolve(lr, core)                             // Ψ_r⁻¹ (·)
	core = tp.Transpose(tp.CholeskySolve(lc, tp.Transpose(core))) // (·) Ψ_c⁻¹
	w := tp.MatMul(tp.MatMulTrans(zr, core, true, false), zc)
	return tp.Scale(tp.Add(tp.Mul(lam, e1), w), T(l.sigma))
}

func (l *inducing[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	return applyMatrix(tp, &l.affine, x, l.weight(tp, c))
}

// kl is KL[q(U) ‖ p(U)] + β·R(λ) with R(λ) = KL[q(W|U) ‖ p(W|U)] = d_in·d_out·(λ²/2 − log λ − ½)
// (bayesianize's kl_divergence when β = 1). The prior is N(0, I) for whitened U, else the matrix
// normal MN(0, Ψ_r, Ψ_c) with jittered factors. Ensemble-U has no U term. The point estimates of
// paper 003's ablation change two terms: with max_lamda = 0 R(λ) is zero (pointW), and with
// max_sd_u = 0 the U term is −log p(U) at q(U)'s mean, ½(vec(μ)ᵀ Σ_p⁻¹ vec(μ) + log|Σ_p| +
// M_r·M_c·log 2π) (pointU: maximum a posteriori).
func (l *inducing[T]) kl(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	cond := tp.Scalar(0)
	if !l.pointW() {
		lam := l.lam(tp)
		cond = tp.Scale(tp.Sub(tp.AddScalar(tp.Scale(tp.Square(lam), 0.5), -0.5), tp.Log(lam)), T(l.beta*float64(l.dIn*l.dOut)))
	}
	if l.q == runtime.QEnsemble || l.q == runtime.QGlobal {
		return cond // no q(U) of its own: the global U's KL is the global posterior's (Net.KL)
	}
	mo, mi, d := l.mo, l.mi, l.mo*l.mi
	mean := tp.Reshape(tp.Param(l.mean.Param), mo, mi)
	var (
		tr, maha, logDetQ *autodiff.Var[T]
		logDetP           = tp.Scalar(0)
	)
	var lr, lc *autodiff.Var[T]
	if !l.whitened {
		lr, lc, _, _ = l.factors(tp)
		logDetP = tp.Add(tp.Scale(tp.LogDetChol(lr), T(mi)), tp.Scale(tp.LogDetChol(lc), T(mo)))
	}
	// whiten maps an (mo, n·mi)-shaped stack X to L_r⁻¹ X (L_c⁻¹)ᵀ blockwise: with n = 1 it is
	// the prior's whitening of one mo × mi matrix.
	whiten := func(x *autodiff.Var[T]) *autodiff.Var[T] {
		x = tp.SolveTriangular(lr, x, true, true, false)
		return tp.SolveTriangular(lc, x, false, true, true)
	}
	sumSq := func(v *autodiff.Var[T]) *autodiff.Var[T] { return tp.Sum(tp.Square(v)) }
	if l.whitened {
		maha = sumSq(mean)
	} else {
		maha = sumSq(whiten(mean))
	}
	if l.pointU() {
		nlp := tp.AddScalar(tp.Add(maha, logDetP), T(float64(d)*math.Log(2*math.Pi)))
		return tp.Add(tp.Scale(nlp, 0.5), cond)
	}
	switch l.q {
	case runtime.QDiagonal:
		s := l.sdU(tp)
		logDetQ = tp.Scale(tp.Sum(tp.Log(s)), 2)
		if l.whitened {
			tr = sumSq(s)
		} else {
			// tr(Σ_p⁻¹ diag(s²)) = Σ_ij s_ij² (Ψ_r⁻¹)_ii (Ψ_c⁻¹)_jj, diag(Ψ⁻¹) = column sums of (L⁻¹)².
			ar := tp.SumAxis(tp.Square(tp.SolveTriangular(lr, eye(tp, mo), true, true, false)), 0, false)
			ac := tp.SumAxis(tp.Square(tp.SolveTriangular(lc, eye(tp, mi), true, true, false)), 0, false)
			tr = tp.Sum(tp.Mul(tp.Mul(tp.Square(s), tp.Reshape(ar, mo, 1)), ac))
		}
	case runtime.QFull:
		L := tp.VecToChol(tp.Param(l.tril.Param)) // rows indexed by (i, j) of u, row-major
		logDetQ = tp.LogDetChol(L)
		if l.whitened {
			tr = sumSq(L)
		} else {
			// Each column of L is an mo × mi matrix M; tr(Σ_p⁻¹ L Lᵀ) = Σ_cols ‖L_r⁻¹ M L_c⁻ᵀ‖².
			x := tp.SolveTriangular(lr, tp.Reshape(L, mo, mi*d), true, true, false) // (mo, mi·d)
			x = tp.Reshape(tp.Permute(tp.Reshape(x, mo, mi, d), 1, 0, 2), mi, mo*d)
			tr = sumSq(tp.SolveTriangular(lc, x, true, true, false))
		}
	default: // matrix
		lrow := tp.VecToChol(tp.Param(l.rowTril.Param))
		lcol := tp.VecToChol(tp.Param(l.colTril.Param))
		logDetQ = tp.Add(tp.Scale(tp.LogDetChol(lrow), T(mi)), tp.Scale(tp.LogDetChol(lcol), T(mo)))
		if l.whitened {
			tr = tp.Mul(sumSq(lrow), sumSq(lcol))
		} else {
			tr = tp.Mul(sumSq(tp.SolveTriangular(lr, lrow, true, true, false)),
				sumSq(tp.SolveTriangular(lc, lcol, true, true, false)))
		}
	}
	klU := tp.Scale(tp.Sub(tp.Add(tp.AddScalar(tp.Add(tr, maha), -T(d)), logDetP), logDetQ), 0.5)
	return tp.Add(klU, cond)
}

func eye[T Float](tp *autodiff.Tape[T], n int) *autodiff.Var[T] {
	v := make([]T, n*n)
	for i := 0; i < n; i++ {
		v[i*n+i] = 1
	}
	return tp.Const(v, n, n)
}
