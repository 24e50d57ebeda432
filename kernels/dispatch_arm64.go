//go:build !purego

package kernels

import "math"

// The arm64 build's kernels: NEON assembly (gemm_arm64.s, blas_arm64.s; Advanced SIMD is part
// of every ARMv8-A core) where it exists, the generic twins otherwise; dispatch_purego.go is the
// portable counterpart.

// Register tile of the Gemm micro-kernel: 8×8, sixteen accumulator registers (see
// gemmKernelNEON).
const (
	gemmMR = 8
	gemmNR = 8
)

//go:noescape
func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)

// gemmInPlaceA reports that gemmKernelRows reads the left operand in place, so that the Gemm
// drivers pack A only for panels of fewer than gemmMR rows (and when it is transposed).
const gemmInPlaceA = true

// gemmKernelRows is the Gemm micro-kernel with A read in place and B at any leading dimension
// (gemmPanelRowsNEON for one tile); see gemmKernelRowsGeneric for the contract. Its results are
// bit for bit those of gemmKernel on the packed panels.
func gemmKernelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	// The bounds the assembly relies on.
	_ = a[(gemmMR-1)*lda+kc-1]
	_ = b[(kc-1)*ldb+gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	gemmPanelRowsNEON(kc, alpha, &a[0], lda, &b[0], ldb, 0, &c[0], ldc, 1, 1, 0)
}

//go:noescape
func gemmPanelRowsNEON(kc int, alpha float32, a *float32, lda int, b *float32, ldb, bstep int, c *float32, ldc, tiles, panels, over int)

// gemmPanelRows is gemmKernelRows for tiles tiles side by side; see gemmPanelRowsGeneric for the
// contract. Its results are bit for bit those of gemmKernelRows tile by tile (with C cleared
// first when over is set).
func gemmPanelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles int, over bool) {
	gemmPanels(kc, alpha, a, lda, b, ldb, bstep, c, ldc, tiles, 1, over)
}

// gemmPanels is gemmPanelRows for panels ≥ 1 panels of gemmMR rows one below the other (panel
// p's A and C gemmMR·p rows down), in one call.
func gemmPanels(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles, panels int, over bool) {
	if tiles < 1 || panels < 1 {
		return
	}
	o := panelRowsChecked(kc, a, lda, b, ldb, bstep, c, ldc, tiles, panels, over)
	if o != 0 && alpha == 1 {
		o = 2 // the tiles go to C without the multiplication by alpha
	}
	gemmPanelRowsNEON(kc, alpha, &a[0], lda, &b[0], ldb, bstep, &c[0], ldc, tiles, panels, o)
}

//go:noescape
func gemmNarrowNEON(kc int, alpha float32, a *float32, lda int, b, c *float32, ldc, nr, over, panels int)

// edgePanels is rowsTile for the last nr < gemmNR columns of panels ≥ 1 full panels of A one
// below the other (panel p's A and C gemmMR·p rows down), b the packed panel of those columns:
// for nr ≤ 4 in one call of gemmNarrowNEON, an 8×4 tile with the values rowsTile gives, bit for
// bit.
func edgePanels(kb int, alpha float32, a []float32, lda int, b, c []float32, ldc, nr, panels int, over bool) {
	if nr > 4 {
		edgePanelsGeneric(kb, alpha, a, lda, b, c, ldc, nr, panels, over)
		return
	}
	// The bounds the assembly relies on.
	_ = a[(panels*gemmMR-1)*lda+kb-1]
	_ = b[(kb-1)*gemmNR+3]
	_ = c[(panels*gemmMR-1)*ldc+nr-1]
	o := 0
	if over {
		o = 1
	}
	gemmNarrowNEON(kb, alpha, &a[0], lda, &b[0], &c[0], ldc, nr, o, panels)
}

//go:noescape
func dotRowsNEON(x *float32, ldx int, y *float32, ldy, n, rows int, out *float32, incOut int)

// dotRows is DotRows for rows, n ≥ 1 and slices long enough; see dotRowsGeneric.
func dotRows(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	dotRowsNEON(&x[0], ldx, &y[0], ldy, n, rows, &out[0], incOut)
}

// gemmKernel is the Gemm micro-kernel; see gemmKernelGeneric for the contract.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	if kc < 1 {
		gemmKernelGeneric(kc, alpha, a, b, c, ldc)
		return
	}
	// The bounds the assembly relies on.
	_ = a[kc*gemmMR-1]
	_ = b[kc*gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	gemmKernelNEON(kc, alpha, &a[0], &b[0], &c[0], ldc)
}

// dot returns the inner product of x and y[:len(x)]; see dotGeneric.
func dot(x, y []float32) float32 {
	if len(x) == 0 {
		return 0
	}
	_ = y[len(x)-1]
	var d float32
	dotRowsNEON(&x[0], 0, &y[0], 0, len(x), 1, &d, 0)
	return d
}

// axpy computes y[:len(x)] += alpha*x; see axpyGeneric.
func axpy(alpha float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	_ = y[len(x)-1]
	axpyRowsNEON(1, len(x), &alpha, 0, &x[0], 0, &y[0], 0)
}

//go:noescape
func scaleNEON(alpha float32, x *float32, n int)

// scale computes x *= alpha; see scaleGeneric.
func scale(alpha float32, x []float32) {
	if len(x) == 0 {
		return
	}
	scaleNEON(alpha, &x[0], len(x))
}

//go:noescape
func reluNEON(x *float32, n int)

// relu computes x = max(x, 0) in place; see reluGeneric.
func relu(x []float32) {
	if len(x) == 0 {
		return
	}
	reluNEON(&x[0], len(x))
}

//go:noescape
func f16ToF32NEON(dst *float32, src *uint16, n int)

// f16ToF32s widens binary16 bit patterns to float32, len(dst) == len(src), eight at a time in
// NEON (FCVTL), the last few generic; see f16ToF32sGeneric (a signalling NaN comes out quiet).
func f16ToF32s(dst []float32, src []uint16) {
	n := len(src) &^ 7
	if n > 0 {
		_ = dst[n-1] // the bound the assembly relies on
		f16ToF32NEON(&dst[0], &src[0], n)
	}
	f16ToF32sGeneric(dst[n:], src[n:])
}

//go:noescape
func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32, rows int)

// philoxBlocks fills dst (a multiple of 4 words) with consecutive Philox4x32-10 blocks, eight or
// four blocks at a time in NEON (philox_arm64.s, written by scripts/philox_arm64.py) while the low
// counter word does not wrap, the rest generic; see philoxBlocksGeneric.
func philoxBlocks(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	nb := len(dst) / 4
	groups := uint64(nb / 4)
	lo := uint32(block)
	groups = min(groups, (1<<32-uint64(lo))/4)
	if groups > 0 {
		ctr := [4]uint32{lo, lo + 1, lo + 2, lo + 3}
		philoxNEON(&dst[0], int(groups), &key, &ctr, uint32(block>>32), a, b, 1)
	}
	if done := int(16 * groups); done < 4*nb {
		philoxBlocksGeneric(dst[done:4*nb], key, block+4*groups, a, b)
	}
}

// philoxRows fills dst with the first nb Philox blocks of the streams (a, b), (a+1, b), … one
// after the other (4·nb words each, len(dst)/(4·nb) streams; nb a multiple of philoxGroup()), all
// in one NEON call; see philoxRowsGeneric.
func philoxRows(dst []uint32, key [2]uint32, a, b uint32, nb int) {
	rows := len(dst) / (4 * nb)
	if rows == 0 {
		return
	}
	ctr := [4]uint32{0, 1, 2, 3}
	philoxNEON(&dst[0], nb/4, &key, &ctr, 0, a, b, rows)
}

// philoxGroup is the number of Philox blocks philoxBlocks generates together (4 in NEON):
// Stream refills round up to it so that no block goes through the scalar code.
func philoxGroup() int { return 4 }

// vectorDot reports that dot and axpy are vectorised, so that Gemv uses them row by row instead
// of its scalar four-row loops.
func vectorDot() bool { return true }

//go:noescape
func dot4NEON(a *float32, lda int, x *float32, n int, out *[4]float32)

// dot4 computes out[r] = (row r of a)·x for four rows of a with leading dimension lda, loading
// x once for the four rows.
func dot4(a []float32, lda int, x []float32, out *[4]float32) {
	n := len(x)
	if n == 0 {
		*out = [4]float32{}
		return
	}
	_ = a[3*lda+n-1]
	dot4NEON(&a[0], lda, &x[0], n, out)
}

//go:noescape
func zigRunNEON(words *uint32, nw int, out *float32, nout int,
	fast *[2 * zigLayers][2]uint32, wedge *[zigLayers]zigWedge, tbl *zigTBL, ld, rows int) (consumed, produced, left int)

// zigRun is the ziggurat over buffered words into out, the fast path sixteen words at a time in
// NEON (table lookups by TBL) and the wedges in scalar code (zig_arm64.s); see zigRunGeneric.
// Unlike the generic twin it may also overwrite out[j] for a few j past the values it reports (up
// to the end of a group of sixteen, eight or four), which the caller writes afterwards.
func zigRun(words []uint32, out []float32) (consumed, produced int) {
	if len(words) == 0 || len(out) == 0 {
		return 0, 0
	}
	c, p, _ := zigRunNEON(&words[0], len(words), &out[0], len(out), &zig.fast, &zig.wedge, &zig.tbl, 0, 1)
	return c, p
}

// zigRows is zigRun over the rows of words: row r's words words[r·nw : (r+1)·nw] into
// out[r·ld : r·ld+n] (len(words)/nw rows), all in one call of the NEON run; see zigRowsGeneric.
func zigRows(words []uint32, nw int, out []float32, ld, n int) (row, consumed, produced int) {
	m := len(words) / nw
	if m == 0 || n == 0 {
		return m, 0, 0
	}
	_ = out[(m-1)*ld+n-1]
	c, p, left := zigRunNEON(&words[0], nw, &out[0], n, &zig.fast, &zig.wedge, &zig.tbl, ld, m)
	if left == 0 {
		return m, 0, 0
	}
	return m - left, c, p
}

// branchFreeMax reports that the compiler turns max(x, 0) on float32 into instructions rather
// than a runtime call (so ReLU can use it without a branch).
const branchFreeMax = true

//go:noescape
func expShiftNEON(x *float32, n int, shift float32, findMax int) (sum, dot, mx float32)

// expShift is ExpShift; see expShiftGeneric. A last group of fewer than four values goes through
// the vector code padded with −Inf (whose value, 0, is dropped).
func expShift(x []float32, shift float32) (sum, dot float32) {
	n4 := len(x) &^ 3
	if n4 > 0 {
		sum, dot, _ = expShiftNEON(&x[0], n4/4, shift, 0)
	}
	if n4 < len(x) {
		ninf := float32(math.Inf(-1))
		t := [4]float32{ninf, ninf, ninf, ninf}
		copy(t[:], x[n4:])
		s, d, _ := expShiftNEON(&t[0], 1, shift, 0)
		copy(x[n4:], t[:])
		sum, dot = sum+s, dot+d
	}
	return sum, dot
}

// expMax is ExpMax; see expMaxGeneric. A multiple of four values goes through the vector code in
// one pass (the maximum included).
func expMax(x []float32) (mx, sum, dot float32) {
	if len(x) == 0 || len(x)%4 != 0 {
		return expMaxGeneric(x)
	}
	sum, dot, mx = expShiftNEON(&x[0], len(x)/4, 0, 1)
	return mx, sum, dot
}

//go:noescape
func softmaxMomentsNEON(rows, n int, x *float32, ldx int, p *float32, ldp int, sum, dot *float32, s, s2 *float64)

// softmaxMoments is SoftmaxMoments for rows, n ≥ 1 and slices long enough; see
// softmaxMomentsGeneric (the sums are added in another order).
func softmaxMoments(rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	softmaxMomentsNEON(rows, n, &x[0], ldx, &p[0], ldp, &sum[0], &dot[0], &s[0], &s2[0])
}

//go:noescape
func mulAddRowsNEON(rows, n int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, dst *float32, ldd int)

//go:noescape
func mulNEON(dst, x, y *float32, n int)

//go:noescape
func sqrtPosNEON(x *float32, n int)

// mulAddRows is MulAddRows for rows, n ≥ 1 and slices long enough; see mulAddRowsGeneric.
func mulAddRows(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	mulAddRowsNEON(rows, n, &a[0], lda, &x[0], ldx, &y[0], ldy, &dst[0], ldd)
}

// mul is Mul for a non-empty dst whose operands are long enough; see mulGeneric.
func mul(dst, x, y []float32) { mulNEON(&dst[0], &x[0], &y[0], len(dst)) }

// sqrtPos is SqrtPos; see sqrtPosGeneric.
func sqrtPos(x []float32) {
	if len(x) == 0 {
		return
	}
	sqrtPosNEON(&x[0], len(x))
}

//go:noescape
func axpyRowsNEON(rows, n int, alpha *float32, astep int, x *float32, ldx int, y *float32, ldy int)

// axpyRows is AxpyRows for rows, n ≥ 1 and slices long enough; see axpyRowsGeneric.
func axpyRows(rows, n int, alpha []float32, astep int, x []float32, ldx int, y []float32, ldy int) {
	axpyRowsNEON(rows, n, &alpha[0], astep, &x[0], ldx, &y[0], ldy)
}

//go:noescape
func accMomentsNEON(x *float32, n int, scale float32, s, s2 *float64)

// accMoments is AccumulateMoments for a non-empty x and s, s2 long enough; see
// accMomentsGeneric.
func accMoments(x []float32, scale float32, s, s2 []float64) {
	accMomentsNEON(&x[0], len(x), scale, &s[0], &s2[0])
}
