package runtime

import "github.com/edgebnn/edgebnn/kernels"

// A weight sample of an inducing Linear layer is W = σ (λ E1 + R core C) (sampleWeight), a dense
// dOut × dIn noise matrix plus a rank-mo product. Forming it costs two products of mo·dOut·dIn
// and mo·mi·dIn multiply-adds on top of the Z_r E1 Z_cᵀ that the rule needs anyway; applied to
// few inputs, the factored form
//
//	W x̃ = σλ E1 x̃ + σ R (core (C x̃))
//
// costs dOut·dIn + mi·dIn + mo·mi + dOut·mo per input instead. The sample is the same one —
// the same normals drawn in the same order, so the same W up to float32 rounding — only the order
// of the sums differs.

// factoredMode chooses between forming a weight sample and applying it in factored form.
type factoredMode int8

const (
	factoredAuto factoredMode = iota // the cheaper of the two for the batch (factoredCosts)
	factoredOn                       // always factored (tests)
	factoredOff                      // always formed (tests)
)

// factoredCosts returns the multiply-adds per sample of the weight strategy applied to n inputs
// when W is formed (the rule's products, then W x̃) and in factored form. The normals and
// Z_r E1 Z_cᵀ are the same in both and left out.
func (l *inducing) factoredCosts(n int) (formed, factored int) {
	formed = l.mo*l.mi*l.dIn + l.dOut*l.mo*l.dIn + n*l.dOut*l.dIn
	factored = n * (l.dOut*l.dIn + l.mi*l.dIn + l.mo*l.mi + l.dOut*l.mo)
	return formed, factored
}

// useFactored reports whether a weight sample applied to n inputs goes through forwardFactored.
func (l *inducing) useFactored(n int) bool {
	switch l.factored {
	case factoredOn:
		return true
	case factoredOff:
		return false
	}
	formed, factored := l.factoredCosts(n)
	return factored < formed
}

// factoredGemvMax is the largest batch forwardFactored applies input by input with
// matrix-vector products (no packing of E1); larger batches go through Gemm.
const factoredGemvMax = 4

// factoredScratch is the scratch forwardFactored needs for n inputs.
func (l *inducing) factoredScratch(n int) int {
	return l.dOut*l.dIn + 8*l.mo*l.mi + max(l.mo*l.dIn, n*(l.mi+l.mo))
}

// forwardFactored draws the weight sample sampleWeight would draw from rng and applies it to n
// inputs (in: n × k, out: n × dOut) without forming it; scratch has factoredScratch(n) values.
func (l *inducing) forwardFactored(fc *fwdCtx, rng *kernels.Stream, in, out []float32, n int, scratch []float32) {
	mo, mi, dOut, dIn, k := l.mo, l.mi, l.dOut, l.dIn, l.k
	e1 := scratch[:dOut*dIn]
	rest := scratch[dOut*dIn:]
	core := l.sampleCore(fc, rng, e1, rest)
	free := rest[8*mo*mi:]
	cx, v := free[:n*mi], free[n*mi:n*(mi+mo)]
	c := l.zcC[mi*dIn:]
	sl := l.sigma * l.lamda
	if n <= factoredGemvMax {
		// One input at a time: matrix-vector products read E1 and C in place.
		for i := 0; i < n; i++ {
			x, y := in[i*k:(i+1)*k], out[i*dOut:(i+1)*dOut]
			cxi, vi := cx[i*mi:(i+1)*mi], v[i*mo:(i+1)*mo]
			kernels.Gemv(false, dOut, k, sl, e1, dIn, x, 0, y)
			kernels.Gemv(false, mi, k, 1, c, dIn, x, 0, cxi)
			l.addBiasColumns(sl, e1, c, y, cxi)
			kernels.Gemv(false, mo, mi, 1, core, mi, cxi, 0, vi)
			kernels.Gemv(false, dOut, mo, l.sigma, l.r, mo, vi, 1, y)
		}
		return
	}
	// out = σλ E1 x̃, cx = C x̃ (the bias column times 1).
	kernels.Gemm(false, true, n, dOut, k, sl, in, k, e1, dIn, 0, out, dOut)
	kernels.Gemm(false, true, n, mi, k, 1, in, k, c, dIn, 0, cx, mi)
	for i := 0; i < n; i++ {
		l.addBiasColumns(sl, e1, c, out[i*dOut:(i+1)*dOut], cx[i*mi:(i+1)*mi])
	}
	// v = core (C x̃); out += σ R v.
	kernels.Gemm(false, true, n, mo, mi, 1, cx, mi, core, mi, 0, v, mo)
	kernels.Gemm(false, true, n, dOut, mo, l.sigma, v, mo, l.r, mo, 1, out, dOut)
}

// addBiasColumns adds one input's bias-column terms (x̃'s last entry is 1): y += sl·E1[:, k] and
// cx += C[:, k]; nothing for a layer without a bias.
func (l *inducing) addBiasColumns(sl float32, e1, c, y, cx []float32) {
	if !l.hasBias {
		return
	}
	for o := range y {
		y[o] += sl * e1[o*l.dIn+l.k]
	}
	for j := range cx {
		cx[j] += c[j*l.dIn+l.k]
	}
}
