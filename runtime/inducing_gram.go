package runtime

import (
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// Local sampling for inducing convolutions: the gram path. A weight sample W = σ (λ E1 +
// R core C), core = u − λ Ū, Ū = Z_r E1 Z_cᵀ + L̂_r E2 D_c + D_r E3 L̂_cᵀ + D_r E4 D_c (MATH.md
// §1), applied to the im2col columns X̃ (dIn × P) of one input and never formed, sees its
// dOut × dIn normals E1 only through E1 Z_cᵀ (inside Ū) and E1 X̃. With Y = [Z_cᵀ X̃]
// (dIn × (mi + P)) the rows of E1 Y are independent N(0, YᵀY), so both are drawn from
// dOut·(mi + P) normals G as
//
//	[E1 Z_cᵀ  E1 X̃] = G Fᵀ,   F = [L_z 0; L_21 L_22],   F Fᵀ = YᵀY,
//
// with L_z = chol(Z_c Z_cᵀ) (load time, no jitter: it is E1's exact covariance), L_21 =
// X̃ᵀ Z_cᵀ L_z⁻ᵀ and L_22 a semi-definite Cholesky factor of the Schur complement
// X̃ᵀX̃ − L_21 L_21ᵀ = X̃ᵀ (I − P_Z) X̃ (singular where positions repeat or lie in Z_c's row
// space). One input's outputs, at every position, then have exactly the distribution they have
// when all of E1 is drawn: W stays shared by the positions of an image, which is what per-input
// sampling of a Linear layer (inducing.apply) cannot offer a convolution. Like that path it is
// the Local strategy's contract — exact per input, the same stream (u, G, E2…E4) for every
// input of a batch, so an input gets the same samples alone or batched — not the Weight
// strategy's, whose inputs share all of W. It pays when mi + P is much smaller than dIn (the late
// stages of a ResNet: a 3×3 convolution of 512 channels on 4×4 positions draws 40 960 normals
// instead of 2 359 808).

// gramMaxCols bounds the output positions of a convolution that samples along the gram path:
// its scratch grows with their square.
const gramMaxCols = 512

// gramPivotTol is the relative size below which a pivot of L_22 counts as zero: the Schur
// complement's diagonal entry against the column's own x̃ᵀx̃, above float32 rounding of the
// products that form it.
const gramPivotTol = 1e-5

// gramFactor returns chol(Z_c Z_cᵀ) and its inverse (mi × mi, lower, zero above the diagonal)
// for the gram path, or nils when Z_c has at least as many rows as columns or its rows are
// nearly dependent (a pivot² below 10⁻⁶ of the largest diagonal entry), where a float32 L_z⁻¹
// would lose too much.
func gramFactor(zc []float64, mi, dIn int) (lz, lzInv []float32) {
	if mi >= dIn {
		return nil, nil
	}
	g := gram(zc, mi, dIn, nil)
	top := 0.0
	for i := 0; i < mi; i++ {
		top = math.Max(top, g[i*mi+i])
	}
	if err := kernels.Cholesky(g, mi); err != nil || !(top > 0) {
		return nil, nil
	}
	for i := 0; i < mi; i++ {
		if p := g[i*mi+i]; !(p*p >= 1e-6*top) {
			return nil, nil
		}
		clear(g[i*mi+i+1 : (i+1)*mi])
	}
	inv := make([]float64, mi*mi)
	for i := 0; i < mi; i++ {
		inv[i*mi+i] = 1
	}
	kernels.SolveTriangular(kernels.Left, kernels.Lower, false, mi, mi, g, mi, inv, mi)
	return to32(g), to32(inv)
}

// gramOK reports whether a convolution with P = cols output positions can sample along the
// gram path.
func (l *inducing) gramOK(cols int) bool {
	return l.lz != nil && cols >= 1 && cols <= gramMaxCols
}

// gramCost is the price (in multiply-adds, a normal at normalCost; drawing u left out) of one
// sample of one input along the gram path for cols output positions.
func (l *inducing) gramCost(positions int) int64 {
	mo, mi, dOut, dIn, cols := int64(l.mo), int64(l.mi), int64(l.dOut), int64(l.dIn), int64(positions)
	m := mi + cols
	return normalCost*(dOut*m+4*mo*mi) + // G, E2, E3, E4
		2*mi*dIn*cols + dIn*cols*cols + // X̃ᵀ [Z_c; C]ᵀ and X̃ᵀX̃
		mi*mi*cols + mi*cols*cols + cols*cols*cols/3 + // L_21, the Schur complement, L_22
		dOut*m*m + mo*dOut*mi + // G Fᵀ, Z_r (E1 Z_cᵀ)
		cols*(mo*mi+dOut*mo) // core (C x̃), R (·)
}

// gramPost returns the layer's inducing posterior when, under strategy st and for batches of n,
// its samples are drawn per input along the gram path, else nil: where one input's gram sample
// costs less than a weight sample applied to it (Local: the choice must not depend on the batch,
// whose inputs get the samples they get alone) or to the whole batch (Auto). Weight never takes
// it. A test may force it on or off (inducing.gram).
func (d *dense) gramPost(st Strategy, n int) *inducing {
	l, ok := d.post.(*inducing)
	pos := d.out.h * d.out.w
	if !ok || !d.conv || !l.gramOK(pos) || st == Weight || l.gram < 0 {
		return nil
	}
	if l.gram > 0 {
		return l
	}
	if st == Local {
		n = 1
	}
	if int64(n)*l.gramCost(pos) < l.pathCost(d.factoredCols(n)) {
		return l
	}
	return nil
}

// gramScratch is the scratch forwardGram needs.
func (d *dense) gramScratch(l *inducing) int64 {
	cols := d.out.h * d.out.w
	m := l.mi + cols
	return prod(8, l.mo, l.mi) + prod(cols, 3*l.mi+cols+l.mo+1) + prod(m, m) + prod(2, l.dOut, m) + prod(l.k, cols)
}

// forwardGram draws sample fc.sample of the convolution's outputs for one input x (into y,
// dOut × P) along the gram path: the normals are u's, then G (dOut × (mi + P)), E2, E3, E4.
func (d *dense) forwardGram(fc *fwdCtx, l *inducing, x, y []float32) {
	mo, mi, dOut, k := l.mo, l.mi, l.dOut, l.k
	cols := d.out.h * d.out.w
	m := mi + cols
	s := fc.scratch
	take := func(size int) []float32 {
		v := s[:size:size]
		s = s[size:]
		return v
	}
	cs := take(8 * mo * mi) // sampleCore's layout
	p := take(2 * mi * cols)
	a := take(cols * cols)
	diag := take(cols)
	l21t := take(mi * cols)
	f := take(m * m)
	g := take(dOut * m)
	h := take(dOut * m)
	v := take(mo * cols)
	xc, buf := x, take(k*cols) // X̃ without its bias row (k × P): a pointwise convolution's input, else im2col
	if !d.pointwise() {
		xc = buf
		kernels.Im2Col(d.geom, x, xc)
	}
	// P = [Z_c; C] X̃ (2mi × P) and A = X̃ᵀX̃. Where |x̃|² overflows float32 (an input around
	// 1e19 or more), x̃ — its bias entry too — is scaled by an exact power of two 2^-e first and
	// the outputs by 2^e last: W x̃ is linear in x̃, and the same normals give the same sample.
	pz, pc := p[:mi*cols], p[mi*cols:]
	bias, e := float32(1), 0
	for {
		kernels.Gemm(false, false, mi, cols, k, 1, l.zc, l.dIn, xc, cols, 0, pz, cols)
		kernels.Gemm(false, false, mi, cols, k, 1, l.c, l.dIn, xc, cols, 0, pc, cols)
		kernels.Gemm(true, false, cols, cols, k, 1, xc, cols, xc, cols, 0, a, cols)
		if l.hasBias {
			addColumnTo(pz, l.zc, bias, mi, l.dIn, k, cols)
			addColumnTo(pc, l.c, bias, mi, l.dIn, k, cols)
			b2 := bias * bias // 0 once it underflows, against columns of 2^40 and more
			for i := range a {
				a[i] += b2
			}
		}
		finite := true
		for c := range diag {
			diag[c] = a[c*cols+c]
			finite = finite && diag[c] <= math.MaxFloat32
		}
		if finite {
			break
		}
		if e == 0 {
			if e = gramRescale(xc, buf); e > 0 {
				xc, bias = buf, float32(math.Ldexp(1, -e))
				continue
			}
		}
		// x̃ holds a NaN or an infinity (or still overflows rescaled, at 2^88 values a column):
		// so does W x̃.
		for i := range y {
			y[i] = float32(math.NaN())
		}
		return
	}
	// L_21ᵀ = L_z⁻¹ (Z_c X̃); the Schur complement A − L_21 L_21ᵀ and its factor L_22, in a.
	kernels.Gemm(false, false, mi, cols, mi, 1, l.lzInv, mi, p, cols, 0, l21t, cols)
	kernels.Gemm(true, false, cols, cols, mi, -1, l21t, cols, l21t, cols, 1, a, cols)
	psdCholesky(a, cols, diag)
	clear(f)
	for i := 0; i < mi; i++ {
		copy(f[i*m:i*m+i+1], l.lz[i*mi:i*mi+i+1])
	}
	for c := 0; c < cols; c++ {
		row := f[(mi+c)*m:]
		for i := 0; i < mi; i++ {
			row[i] = l21t[i*cols+c]
		}
		copy(row[mi:mi+c+1], a[c*cols:c*cols+c+1])
	}

	// The draw: u, G, then E2…E4 (finishCore). H = G Fᵀ = [E1 Z_cᵀ  E1 X̃].
	d2 := mo * mi
	fc.rng.Reset(fc.seed, uint32(fc.sample), d.id)
	l.sampleU(fc, &fc.rng, cs[:d2], cs[d2:3*d2])
	fc.rng.Normal(g)
	kernels.Gemm(false, true, dOut, m, m, 1, g, m, f, m, 0, h, m)
	ubar := cs[6*d2 : 7*d2]
	kernels.Gemm(false, false, mo, mi, dOut, 1, l.zr, dOut, h, m, 0, ubar, mi)
	core := l.finishCore(&fc.rng, cs[:d2], ubar, cs)
	// y = σλ E1 X̃ + σ R (core (C X̃)).
	kernels.Gemm(false, false, mo, cols, mi, 1, core, mi, p[mi*cols:], cols, 0, v, cols)
	sl := l.sigma * l.lamda
	for o := 0; o < dOut; o++ {
		dst := y[o*cols : (o+1)*cols]
		for j, e := range h[o*m+mi : (o+1)*m] {
			dst[j] = sl * e
		}
	}
	kernels.Gemm(false, false, dOut, cols, mo, l.sigma, l.r, mo, v, cols, 1, y, cols)
	scaleOutputs(y, e)
}

// gramMaxAbsExp is the binary exponent gramRescale brings the largest |x̃| down to: column
// sums of squares stay below 2^(2·gramMaxAbsExp) times d_in, far from float32's 2^128.
const gramMaxAbsExp = 20

// gramRescale writes x·2^-e into dst (which may be x) with e chosen to bring the largest |x|
// to [2^(gramMaxAbsExp-1), 2^gramMaxAbsExp), and returns e, or 0 (dst untouched) when x holds a
// NaN or an infinity or e would not be positive. Scaling by a power of two is exact but for
// values that become subnormal, 2^-149 and less of the largest: below float32 rounding of any
// sum.
func gramRescale(x, dst []float32) int {
	top := float32(0)
	for _, v := range x {
		a := float32(math.Abs(float64(v)))
		if !(a <= math.MaxFloat32) {
			return 0
		}
		top = max(top, a)
	}
	_, exp := math.Frexp(float64(top))
	e := exp - gramMaxAbsExp
	if e <= 0 {
		return 0
	}
	f := float32(math.Ldexp(1, -e))
	for i, v := range x {
		dst[i] = v * f
	}
	return e
}

// scaleOutputs multiplies y by 2^e (e ≥ 0), gramRescale's undoing.
func scaleOutputs(y []float32, e int) {
	if e == 0 {
		return
	}
	f := float32(math.Ldexp(1, e))
	for i := range y {
		y[i] *= f
	}
}

// psdCholesky overwrites the symmetric positive semi-definite n × n matrix a with a lower
// factor L, L Lᵀ = a, zero above the diagonal. A pivot at or below gramPivotTol·diag[j] (the
// column's scale before the Schur complement was taken; rounding, or a column that depends on
// the ones before it) makes column j zero: semi-definite matrices keep a factor, and a NaN
// pivot leaves a zero column where the NaN of the products it came from remains.
func psdCholesky(a []float32, n int, diag []float32) {
	for j := 0; j < n; j++ {
		rj := a[j*n : j*n+j]
		piv := float64(a[j*n+j])
		for _, v := range rj {
			piv -= float64(v) * float64(v)
		}
		if !(piv > gramPivotTol*float64(diag[j])) {
			for i := j; i < n; i++ {
				a[i*n+j] = 0
			}
			clear(a[j*n+j+1 : (j+1)*n])
			continue
		}
		ljj := math.Sqrt(piv)
		a[j*n+j] = float32(ljj)
		for i := j + 1; i < n; i++ {
			ri := a[i*n : i*n+j]
			s := float64(a[i*n+j])
			for t, v := range ri {
				s -= float64(v) * float64(rj[t])
			}
			a[i*n+j] = float32(s / ljj)
		}
		clear(a[j*n+j+1 : (j+1)*n])
	}
}
