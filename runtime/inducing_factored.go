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

// factoredMode chooses between forming a weight sample and applying it in factored form.
type factoredMode int8

const (
	factoredAuto factoredMode = iota // the cheaper of the two for the batch (factoredCosts)
	factoredOn                       // always factored (tests)
	factoredOff                      // always formed (tests)
)

// factoredCosts returns the multiply-adds per sample of the weight strategy applied to cols
// input columns when W is formed (the rule's two products, then W x̃) and in factored form. The
// normals and Z_r E1 Z_cᵀ are the same in both and left out.
func (l *inducing) factoredCosts(cols int) (formed, factored int) {
	formed = l.mo*l.mi*l.dIn + l.dOut*l.mo*l.dIn + cols*l.dOut*l.dIn
	factored = cols * (l.dOut*l.dIn + l.mi*l.dIn + l.mo*l.mi + l.dOut*l.mo)
	return formed, factored
}

// useFactored reports whether a weight sample applied to cols input columns goes through the
// factored form.
func (l *inducing) useFactored(cols int) bool {
	switch l.factored {
	case factoredOn:
		return true
	case factoredOff:
		return false
	}
	formed, factored := l.factoredCosts(cols)
	return factored < formed
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
func (d *dense) factoredCols(n int) int {
	if d.conv {
		return n * d.out.h * d.out.w
	}
	return n
}

// factoredScratch is the scratch forwardFactored needs for n inputs.
func (d *dense) factoredScratch(l *inducing, n int) int {
	cols := factoredStep(n) // a Linear layer's inputs in one pass
	if d.conv {
		cols = d.out.h * d.out.w
	}
	return l.dOut*l.dIn + 8*l.mo*l.mi + max(l.mo*l.dIn, d.colSize()+cols*(l.mi+l.mo))
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
	c := l.zcC[mi*dIn:]
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
			addColumnTo(y, e1, dOut, dIn, k, p)
			addColumnTo(cc, c, mi, dIn, k, p)
		}
		kernels.Gemm(false, false, mo, p, mi, 1, core, mi, cc, p, 0, vv, p)
		kernels.Gemm(false, false, dOut, p, mo, l.sigma, l.r, mo, vv, p, sl, y, p)
	}
}

// addColumnTo adds column k of a (rows × lda) to every row of y (rows × p): a bias column
// applied to p positions (a bias vector is a with lda 1 and k 0).
func addColumnTo(y, a []float32, rows, lda, k, p int) {
	for o := 0; o < rows; o++ {
		b := a[o*lda+k]
		row := y[o*p : (o+1)*p]
		for j := range row {
			row[j] += b
		}
	}
}
