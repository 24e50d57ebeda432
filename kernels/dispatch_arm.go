//go:build !purego

package kernels

// The 32-bit ARM build: the generic twins, except the Gemm micro-kernel and Philox block
// generation, which are ARMv7 NEON assembly (gemm_arm.s, philox_arm.s) on CPUs that have NEON (most ARMv7 cores; not the ARMv6 ARM1176 of the
// Raspberry Pi Zero and 1). dispatch_purego.go is the portable counterpart.

import "golang.org/x/sys/cpu"

// Register tile of the Gemm micro-kernel (see gemmKernelGeneric).
const (
	gemmMR = 4
	gemmNR = 8
)

// useNEON reports NEON (Advanced SIMD), read once at start-up. Tests clear it to force the
// generic kernel; nothing else writes it.
var useNEON = cpu.ARM.HasNEON

//go:noescape
func gemmKernelNEON(kc int, alpha float32, a, b, c *float32, ldc int)

// gemmKernel is the Gemm micro-kernel; see gemmKernelGeneric for the contract.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	if !useNEON || kc < 1 {
		gemmKernelGeneric(kc, alpha, a, b, c, ldc)
		return
	}
	// The bounds the assembly relies on.
	_ = a[kc*gemmMR-1]
	_ = b[kc*gemmNR-1]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	gemmKernelNEON(kc, alpha, &a[0], &b[0], &c[0], ldc)
}

// gemmInPlaceA reports whether gemmKernelRows is a kernel of its own: here it is not, and the
// Gemm drivers pack A.
const gemmInPlaceA = false

// gemmKernelRows is the Gemm micro-kernel with A read in place; see gemmKernelRowsGeneric.
func gemmKernelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	gemmKernelRowsGeneric(kc, alpha, a, lda, b, ldb, c, ldc)
}

// dot returns the inner product of x and y[:len(x)]; see dotGeneric.
func dot(x, y []float32) float32 { return dotGeneric(x, y) }

// axpy computes y[:len(x)] += alpha*x; see axpyGeneric.
func axpy(alpha float32, x, y []float32) { axpyGeneric(alpha, x, y) }

// relu computes x = max(x, 0) in place; see reluGeneric.
func relu(x []float32) { reluGeneric(x) }

// scale computes x *= alpha; see scaleGeneric.
func scale(alpha float32, x []float32) { scaleGeneric(alpha, x) }

// f16ToF32s widens binary16 bit patterns to float32, len(dst) == len(src); see f16ToF32sGeneric.
func f16ToF32s(dst []float32, src []uint16) { f16ToF32sGeneric(dst, src) }

//go:noescape
func philoxNEON(dst *uint32, groups int, key *[2]uint32, ctr *[4]uint32, hi, a, b uint32)

// philoxBlocks fills dst (a multiple of 4 words) with consecutive Philox4x32-10 blocks, four
// blocks at a time in NEON where the CPU has it and the low counter word does not wrap, the rest
// generic; see philoxBlocksGeneric.
func philoxBlocks(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	nb := len(dst) / 4
	groups := uint64(0)
	lo := uint32(block)
	if useNEON {
		groups = min(uint64(nb/4), (1<<32-uint64(lo))/4)
	}
	if groups > 0 {
		ctr := [4]uint32{lo, lo + 1, lo + 2, lo + 3}
		philoxNEON(&dst[0], int(groups), &key, &ctr, uint32(block>>32), a, b)
	}
	done := int(16 * groups)
	philoxBlocksGeneric(dst[done:4*nb], key, block+4*groups, a, b)
}

// philoxGroup is the number of Philox blocks philoxBlocks generates together (4 in NEON):
// Stream refills round up to it so that no block goes through the scalar code.
func philoxGroup() int {
	if useNEON {
		return 4
	}
	return 1
}

// vectorDot reports that dot and axpy are vectorised, so that Gemv uses them row by row instead
// of its scalar four-row loops.
func vectorDot() bool { return false }

// dot4 computes out[r] = (row r of a)·x for four rows of a with leading dimension lda; see
// dot4Generic.
func dot4(a []float32, lda int, x []float32, out *[4]float32) { dot4Generic(a, lda, x, out) }

// zigFast is the ziggurat's fast path over words; see zigFastGeneric.
func zigFast(words []uint32, out []float32) int { return zigFastGeneric(words, out) }

// branchFreeMax reports that the compiler turns max(x, 0) on float32 into instructions rather
// than a runtime call (so ReLU can use it without a branch).
const branchFreeMax = false
