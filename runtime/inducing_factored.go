package runtime

import "github.com/edgebnn/edgebnn/kernels"

// A weight sample of an inducing layer is W = σ (λ E1 + R core C) (sampleWeight), a dense
// dOut × dIn noise matrix plus a rank-mo product. Forming it costs two products of mo·mi·dIn and
// dOut·mo·dIn multiply-adds on top of the Z_r E1 Z_cᵀ that the rule needs anyway; applied to few
// input columns x̃ (the inputs of a Linear layer, or the im2col columns of a convolution: P per
// input, P the output positions), the factored form
//
//	W x̃ = σλ E1 x̃ + σ R (core (C x̃))
//
// costs dOut·dIn + mi·dIn + mo·mi + dOut·mo per column instead. The sample is the same one —
// the same normals drawn in the same order, so the same W up to float32 rounding — only the order
// of the sums differs.

// weightPath is how a weight sample of an inducing layer meets the input columns of a batch.
type weightPath int8

const (
	pathAuto     weightPath = iota // the cheaper for the batch (pathCosts)
	pathFormed                     // W formed (sampleWeight), then applied
	pathFactored                   // σλ E1 x̃ + σ R (core (C x̃)): the formed path's normals, W never formed
)

// pathCosts returns the price, in multiply-adds with a normal at normalCost, of one weight sample
// applied to cols input columns when it is formed and in factored form. Drawing u is the same
// on both and left out.
func (l *inducing) pathCosts(cols int64) (formed, factored int64) {
	mo, mi, dOut, dIn := int64(l.mo), int64(l.mi), int64(l.dOut), int64(l.dIn)
	// E1…E4 and Z_r E1 Z_cᵀ, the same on both paths.
	rule := normalCost*(dOut*dIn+4*mo*mi) + mo*dOut*dIn + mo*mi*dIn
	formed = rule + mo*mi*dIn + dOut*mo*dIn + cols*dOut*dIn
	factored = rule + cols*(dOut*dIn+mi*dIn+mo*mi+dOut*mo)
	return formed, factored
}

// choosePath returns the path a weight sample applied to cols input columns takes: the forced
// one (tests), else the cheaper by pathCosts.
func (l *inducing) choosePath(cols int64) weightPath {
	if l.path != pathAuto {
		return l.path
	}
	if formed, factored := l.pathCosts(cols); factored < formed {
		return pathFactored
	}
	return pathFormed
}

// pathCost is the price (pathCosts) of the path choosePath takes.
func (l *inducing) pathCost(cols int64) int64 {
	formed, factored := l.pathCosts(cols)
	if l.choosePath(cols) == pathFactored {
		return factored
	}
	return formed
}

// meanPath returns the path the posterior-mean weight W̄ = σ R ū C (meanWeight) applied to cols
// input columns takes: the forced one (tests), else the cheaper of forming W̄ (mo·mi·dIn +
// dOut·mo·dIn, then dOut·dIn per column) and the factored σ R (ū (C x̃)) (mi·dIn + mo·mi + dOut·mo
// per column). For a ResNet-18 3×3 convolution with 512 channels at 4 × 4 positions the factored
// form is 39× cheaper; for one with 3 input channels at 32 × 32 positions forming is 5× cheaper.
// The factored form costs more per column whenever it is not cheaper for every batch, so if one
// input's columns do not take it, no batch does.
func (l *inducing) meanPath(cols int64) weightPath {
	if l.path != pathAuto {
		return l.path
	}
	mo, mi, dOut, dIn := int64(l.mo), int64(l.mi), int64(l.dOut), int64(l.dIn)
	formed := mo*mi*dIn + dOut*mo*dIn + cols*dOut*dIn
	factored := cols * (mi*dIn + mo*mi + dOut*mo)
	if factored < formed {
		return pathFactored
	}
	return pathFormed
}

// meanScratch is the scratch forwardMeanFactored needs: an input's im2col matrix and its C x̃ and
// ū C x̃ columns.
func (d *dense) meanScratch(l *inducing) int64 {
	cols := 1
	if d.conv {
		cols = d.out.h * d.out.w
	}
	return int64(d.colSize()) + prod(cols, l.mi+l.mo)
}

// forwardMeanFactored applies the posterior-mean weight σ R ū C to n inputs without forming it,
// input by input: y = σ R (ū (C x̃)).
func (d *dense) forwardMeanFactored(fc *fwdCtx, l *inducing, in, out []float32, n int) {
	mo, mi, dOut, dIn, k := l.mo, l.mi, l.dOut, l.dIn, l.k
	c := l.c
	cols, inSize := 1, k
	if d.conv {
		cols, inSize = d.out.h*d.out.w, d.in.size()
	}
	col := fc.scratch[:d.colSize()]
	cc := fc.scratch[len(col) : len(col)+mi*cols]
	vv := fc.scratch[len(col)+mi*cols : len(col)+(mi+mo)*cols]
	for i := 0; i < n; i++ {
		x := in[i*inSize : (i+1)*inSize]
		y := out[i*dOut*cols : (i+1)*dOut*cols]
		if !d.conv {
			augmentedProject(c, mi, k, dIn, l.hasBias, x, 1, cc, mi)
			kernels.Gemv(false, mo, mi, 1, l.meanU, mi, cc, 0, vv)
			kernels.Gemv(false, dOut, mo, l.sigma, l.r, mo, vv, 0, y)
			continue
		}
		cx := x
		if !d.pointwise() {
			kernels.Im2Col(d.geom, x, col)
			cx = col
		}
		kernels.Gemm(false, false, mi, cols, k, 1, c, dIn, cx, cols, 0, cc, cols)
		if l.hasBias {
			addColumnTo(cc, c, 1, mi, dIn, k, cols)
		}
		kernels.Gemm(false, false, mo, cols, mi, 1, l.meanU, mi, cc, cols, 0, vv, cols)
		kernels.Gemm(false, false, dOut, cols, mo, l.sigma, l.r, mo, vv, cols, 0, y, cols)
	}
}

// factoredGemvMax is the largest batch of a Linear layer that forwardFactored applies input by
// input (matrix-vector products read E1 and C in place); larger batches go through Gemm.
const factoredGemvMax = 4

// factoredStep is how many of n inputs of a Linear layer forwardFactored applies in one pass.
func factoredStep(n int) int {
	if n <= factoredGemvMax {
		return 1
	}
	return n
}

// factoredCols is the number of input columns a weight sample meets for n inputs.
func (d *dense) factoredCols(n int) int64 {
	if d.conv {
		return prod(n, d.out.h, d.out.w)
	}
	return int64(n)
}

// factoredScratch is the scratch forwardFactored needs for n inputs.
func (d *dense) factoredScratch(l *inducing, n int) int64 {
	cols := factoredStep(n) // a Linear layer's inputs in one pass
	if d.conv {
		cols = d.out.h * d.out.w
	}
	return prod(l.dOut, l.dIn) + prod(8, l.mo, l.mi) + max(prod(l.mo, l.dIn), int64(d.colSize())+prod(cols, l.mi+l.mo))
}

// forwardFactored draws the weight sample of fc.sample that sampleWeight would draw and applies
// it to n inputs without forming it.
func (d *dense) forwardFactored(fc *fwdCtx, l *inducing, in, out []float32, n int) {
	mo, mi, dOut, dIn, k := l.mo, l.mi, l.dOut, l.dIn, l.k
	e1 := fc.scratch[:dOut*dIn]
	rest := fc.scratch[dOut*dIn:]
	fc.rng.Reset(fc.seed, uint32(fc.sample), d.id)
	core := l.sampleCore(fc, &fc.rng, e1, rest)
	free := rest[8*mo*mi:]
	c := l.c
	sl := l.sigma * l.lamda
	if !d.conv {
		// Rows of X̃: y = σλ X̃ E1ᵀ + σ ((X̃ Cᵀ) coreᵀ) Rᵀ, up to factoredGemvMax inputs a pass
		// (one input a pass is matrix-vector products reading E1 and C in place).
		step := factoredStep(n)
		for i0 := 0; i0 < n; i0 += step {
			m := min(step, n-i0)
			x, y := in[i0*k:(i0+m)*k], out[i0*dOut:(i0+m)*dOut]
			cx, v := free[:m*mi], free[m*mi:m*(mi+mo)]
			augmentedProject(e1, dOut, k, dIn, l.hasBias, x, m, y, dOut)
			augmentedProject(c, mi, k, dIn, l.hasBias, x, m, cx, mi)
			kernels.Gemm(false, true, m, mo, mi, 1, cx, mi, core, mi, 0, v, mo)
			kernels.Gemm(false, true, m, dOut, mo, l.sigma, v, mo, l.r, mo, sl, y, dOut)
		}
		return
	}
	// Columns of one input's im2col matrix (k × p): y = σλ E1 X̃ + σ R (core (C X̃)).
	p, inSize := d.out.h*d.out.w, d.in.size()
	col := free[:d.colSize()]
	cc := free[len(col) : len(col)+mi*p]
	vv := free[len(col)+mi*p : len(col)+(mi+mo)*p]
	for i := 0; i < n; i++ {
		x := in[i*inSize : (i+1)*inSize]
		cx := x
		if !d.pointwise() {
			kernels.Im2Col(d.geom, x, col)
			cx = col
		}
		y := out[i*dOut*p : (i+1)*dOut*p]
		kernels.Gemm(false, false, dOut, p, k, 1, e1, dIn, cx, p, 0, y, p)
		kernels.Gemm(false, false, mi, p, k, 1, c, dIn, cx, p, 0, cc, p)
		if l.hasBias {
			addColumnTo(y, e1, 1, dOut, dIn, k, p)
			addColumnTo(cc, c, 1, mi, dIn, k, p)
		}
		kernels.Gemm(false, false, mo, p, mi, 1, core, mi, cc, p, 0, vv, p)
		kernels.Gemm(false, false, dOut, p, mo, l.sigma, l.r, mo, vv, p, sl, y, p)
	}
}

// addColumnTo adds column k of a (rows × lda), times s, to every row of y (rows × p): a bias
// column applied to p positions (a bias vector is a with lda 1 and k 0).
func addColumnTo(y, a []float32, s float32, rows, lda, k, p int) {
	for o := 0; o < rows; o++ {
		b := a[o*lda+k] * s
		row := y[o*p : (o+1)*p]
		for j := range row {
			row[j] += b
		}
	}
}
