//go:build !purego

package kernels

import "golang.org/x/sys/cpu"

// The amd64 build's kernels: AVX2 + FMA assembly (gemm_amd64.s, blas_amd64.s) when the CPU has
// both, their generic twins otherwise; dispatch_purego.go is the portable counterpart.

// Register tile of the Gemm micro-kernel: 6×16, twelve YMM accumulators (see gemmKernelAVX2).
// gemmKernelGeneric serves the same tile on CPUs without AVX2.
const (
	gemmMR = 6
	gemmNR = 16
)

// useAVX2 reports AVX2 and FMA, read once at start-up. Tests clear it to force the generic
// twins on a CPU that has them; nothing else writes it.
var useAVX2 = cpu.X86.HasAVX2 && cpu.X86.HasFMA

//go:noescape
func gemmKernelAVX2(kc int, alpha float32, a, b, c *float32, ldc int)

//go:noescape
func dotAVX2(x, y *float32, n int) float32

//go:noescape
func axpyAVX2(alpha float32, x, y *float32, n int)

// gemmKernel is the Gemm micro-kernel; see gemmKernelGeneric for the contract.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	if !useAVX2 || kc < 1 {
		gemmKernelGeneric(kc, alpha, a, b, c, ldc)
		return
	}
	// The bounds the assembly relies on.
	_ = a[kc*gemmMR-1]
	_ = b[kc*gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	gemmKernelAVX2(kc, alpha, &a[0], &b[0], &c[0], ldc)
}

// gemmInPlaceA reports that gemmKernelRows reads the left operand in place (with AVX2), so that
// the Gemm drivers pack A only for panels of fewer than gemmMR rows (and when it is transposed).
// Without AVX2 the generic twin would copy A's panel for every tile: there the drivers pack.
var gemmInPlaceA = useAVX2

// gemmInPlaceLarge reports whether Gemm's products too large for its medium driver also go to
// gemmInPlace (B read in place): not here, where they run faster through the large driver (B
// packed, A read in place), 124 against 91 GFLOP/s for n = 1024 on an AMD EPYC, with B's rows
// 4 KiB apart in place.
const gemmInPlaceLarge = false

//go:noescape
func gemmPanelRowsAVX2(kc int, alpha float32, a *float32, lda int, b *float32, ldb, bstep int, c *float32, ldc, tiles, over int)

// gemmKernelRows is the Gemm micro-kernel with A read in place and B at any leading dimension
// (gemmPanelRowsAVX2 for one tile); see gemmKernelRowsGeneric for the contract. Its results are
// bit for bit those of gemmKernel on the packed panels.
func gemmKernelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if !useAVX2 || kc < 1 {
		gemmKernelRowsGeneric(kc, alpha, a, lda, b, ldb, c, ldc)
		return
	}
	// The bounds the assembly relies on.
	_ = a[(gemmMR-1)*lda+kc-1]
	_ = b[(kc-1)*ldb+gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	gemmPanelRowsAVX2(kc, alpha, &a[0], lda, &b[0], ldb, 0, &c[0], ldc, 1, 0)
}

// gemmPanelRows is gemmKernelRows for tiles tiles side by side; see gemmPanelRowsGeneric for the
// contract. Its results are bit for bit those of gemmKernelRows tile by tile (with C cleared
// first when over is set).
func gemmPanelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles int, over bool) {
	if !useAVX2 || kc < 1 {
		gemmPanelRowsGeneric(kc, alpha, a, lda, b, ldb, bstep, c, ldc, tiles, over)
		return
	}
	if tiles < 1 {
		return
	}
	o := panelRowsChecked(kc, a, lda, b, ldb, bstep, c, ldc, tiles, 1, over)
	gemmPanelRowsAVX2(kc, alpha, &a[0], lda, &b[0], ldb, bstep, &c[0], ldc, tiles, o)
}

// dot returns the inner product of x and y[:len(x)]; see dotGeneric.
func dot(x, y []float32) float32 {
	if !useAVX2 || len(x) == 0 {
		return dotGeneric(x, y)
	}
	_ = y[len(x)-1]
	return dotAVX2(&x[0], &y[0], len(x))
}

// dotRows is DotRows for rows, n ≥ 1: dot row by row.
func dotRows(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	for r := 0; r < rows; r++ {
		out[r*incOut] = dot(x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n])
	}
}

// axpy computes y[:len(x)] += alpha*x; see axpyGeneric.
func axpy(alpha float32, x, y []float32) {
	if !useAVX2 || len(x) == 0 {
		axpyGeneric(alpha, x, y)
		return
	}
	_ = y[len(x)-1]
	axpyAVX2(alpha, &x[0], &y[0], len(x))
}

// relu computes x = max(x, 0) in place; see reluGeneric.
func relu(x []float32) {
	if !useAVX2 || len(x) == 0 {
		reluGeneric(x)
		return
	}
	reluAVX2(&x[0], len(x))
}

// scale computes x *= alpha; see scaleGeneric.
func scale(alpha float32, x []float32) { scaleGeneric(alpha, x) }

// useF16C reports the F16C conversions (with AVX), read once at start-up. Tests clear it to
// force the generic twin; nothing else writes it.
var useF16C = cpu.X86.HasF16C && cpu.X86.HasAVX

//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n int)

// f16ToF32s widens binary16 bit patterns to float32, len(dst) == len(src), sixteen at a time
// with F16C's VCVTPH2PS where the CPU has it, the last few generic; see f16ToF32sGeneric (a
// signalling NaN comes out quiet).
func f16ToF32s(dst []float32, src []uint16) {
	n := 0
	if useF16C {
		if n = len(src) &^ 15; n > 0 {
			_ = dst[n-1] // the bound the assembly relies on
			f16ToF32F16C(&dst[0], &src[0], n)
		}
	}
	f16ToF32sGeneric(dst[n:], src[n:])
}

//go:noescape
func philoxAVX2(dst *uint32, groups int, key *[2]uint32, ctr *[8]uint32, hi, a, b uint32)

// philoxBlocks fills dst (a multiple of 4 words) with consecutive Philox4x32-10 blocks, eight
// blocks at a time in AVX2 while the low counter word does not wrap, the rest generic; see
// philoxBlocksGeneric.
func philoxBlocks(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	nb := len(dst) / 4
	groups := uint64(0)
	lo := uint32(block)
	if useAVX2 {
		groups = min(uint64(nb/8), (1<<32-uint64(lo))/8)
	}
	if groups > 0 {
		var ctr [8]uint32
		for i := range ctr {
			ctr[i] = lo + uint32(i)
		}
		philoxAVX2(&dst[0], int(groups), &key, &ctr, uint32(block>>32), a, b)
	}
	done := int(32 * groups)
	philoxBlocksGeneric(dst[done:4*nb], key, block+8*groups, a, b)
}

// philoxGroup is the number of Philox blocks philoxBlocks generates together (8 in AVX2):
// Stream refills round up to it so that no block goes through the scalar code.
func philoxGroup() int {
	if useAVX2 {
		return 8
	}
	return 1
}

// vectorDot reports that dot and axpy are vectorised, so that Gemv uses them row by row instead
// of its scalar four-row loops.
func vectorDot() bool { return useAVX2 }

// dot4 computes out[r] = (row r of a)·x for four rows of a with leading dimension lda.
func dot4(a []float32, lda int, x []float32, out *[4]float32) {
	if !useAVX2 {
		dot4Generic(a, lda, x, out)
		return
	}
	n := len(x)
	for r := range out {
		out[r] = dot(a[r*lda:r*lda+n], x)
	}
}

//go:noescape
func zigFastAVX2(words *uint32, groups int, out *float32, fast *[2 * zigLayers][2]uint32) int

// zigRun is the ziggurat over buffered words into out, its fast path eight words at a time in
// AVX2 (zigFast); see zigRunGeneric.
func zigRun(words []uint32, out []float32) (consumed, produced int) {
	if !useAVX2 {
		return zigRunGeneric(words, out)
	}
	return zigRunWith(zigFast, words, out)
}

// zigFast is the ziggurat's fast path over words, the groups of eight in AVX2 (zigFastAVX2,
// writing out only up to the word it stops at) and the last few words generic; see
// zigFastGeneric.
func zigFast(words []uint32, out []float32) int {
	n8 := len(words) &^ 7
	if !useAVX2 || n8 == 0 {
		return zigFastGeneric(words, out)
	}
	_ = out[len(words)-1] // the bound the assembly relies on
	if j := zigFastAVX2(&words[0], n8/8, &out[0], &zig.fast); j < n8 {
		return j
	}
	return n8 + zigFastGeneric(words[n8:], out[n8:])
}

// branchFreeMax reports that the compiler turns max(x, 0) on float32 into instructions rather
// than a runtime call (so ReLU can use it without a branch).
const branchFreeMax = true

//go:noescape
func expShiftAVX2(x *float32, n int, shift float32, findMax int) (sum, dot, mx float32)

// expShift is ExpShift; see expShiftGeneric. The values are the twin's bit for bit (the same
// operations, eight at a time); the sums are added in another order.
func expShift(x []float32, shift float32) (sum, dot float32) {
	if !useAVX2 || len(x) == 0 {
		return expShiftGeneric(x, shift)
	}
	sum, dot, _ = expShiftAVX2(&x[0], len(x), shift, 0)
	return sum, dot
}

// softmaxMoments is SoftmaxMoments for rows, n ≥ 1: softmaxMomentsGeneric's steps row by row
// through the dispatched expMax and accMoments.
func softmaxMoments(rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	softmaxMomentsBy(expMax, accMoments, rows, n, x, ldx, p, ldp, sum, dot, s, s2)
}

// expMax is ExpMax; see expMaxGeneric. The maximum and the exponentials in one call.
func expMax(x []float32) (mx, sum, dot float32) {
	if !useAVX2 || len(x) == 0 {
		return expMaxGeneric(x)
	}
	sum, dot, mx = expShiftAVX2(&x[0], len(x), 0, 1)
	return mx, sum, dot
}

//go:noescape
func mulAddRowsAVX2(rows, n int, a *float32, lda int, x *float32, ldx int, y *float32, ldy int, dst *float32, ldd int)

//go:noescape
func mulAVX2(dst, x, y *float32, n int)

//go:noescape
func sqrtPosAVX2(x *float32, n int)

//go:noescape
func reluAVX2(x *float32, n int)

//go:noescape
func axpyRowsAVX2(rows, n int, alpha *float32, astep int, x *float32, ldx int, y *float32, ldy int)

// mulAddRows is MulAddRows for rows, n ≥ 1 and slices long enough; see mulAddRowsGeneric (whose
// bits it gives: the product is rounded before the sum).
func mulAddRows(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	if !useAVX2 {
		mulAddRowsGeneric(rows, n, a, lda, x, ldx, y, ldy, dst, ldd)
		return
	}
	mulAddRowsAVX2(rows, n, &a[0], lda, &x[0], ldx, &y[0], ldy, &dst[0], ldd)
}

// mul is Mul for a non-empty dst whose operands are long enough; see mulGeneric.
func mul(dst, x, y []float32) {
	if !useAVX2 {
		mulGeneric(dst, x, y)
		return
	}
	mulAVX2(&dst[0], &x[0], &y[0], len(dst))
}

// sqrtPos is SqrtPos; see sqrtPosGeneric.
func sqrtPos(x []float32) {
	if !useAVX2 || len(x) == 0 {
		sqrtPosGeneric(x)
		return
	}
	sqrtPosAVX2(&x[0], len(x))
}

// axpyRows is AxpyRows for rows, n ≥ 1 and slices long enough; see axpyRowsGeneric (each row
// bit for bit axpy's).
func axpyRows(rows, n int, alpha []float32, astep int, x []float32, ldx int, y []float32, ldy int) {
	if !useAVX2 {
		axpyRowsGeneric(rows, n, alpha, astep, x, ldx, y, ldy)
		return
	}
	axpyRowsAVX2(rows, n, &alpha[0], astep, &x[0], ldx, &y[0], ldy)
}

// accMoments is AccumulateMoments; see accMomentsGeneric.
func accMoments(x []float32, scale float32, s, s2 []float64) { accMomentsGeneric(x, scale, s, s2) }
