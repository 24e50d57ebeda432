//go:build purego || !(amd64 || arm64 || arm)

package kernels

// The portable build: every kernel is its generic twin. This file is selected by the purego
// build tag and on architectures without assembly kernels; dispatch_amd64.go, dispatch_arm64.go
// and dispatch_arm.go are its counterparts, and dispatch_generic.go holds the twins it shares with
// the 32-bit ARM build.

// gemmKernel is the Gemm micro-kernel; see gemmKernelGeneric.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	gemmKernelGeneric(kc, alpha, a, b, c, ldc)
}

// f16ToF32s widens binary16 bit patterns to float32, len(dst) == len(src); see f16ToF32sGeneric.
func f16ToF32s(dst []float32, src []uint16) { f16ToF32sGeneric(dst, src) }

// philoxBlocks fills dst (a multiple of 4 words) with consecutive Philox4x32-10 blocks; see
// philoxBlocksGeneric.
func philoxBlocks(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	philoxBlocksGeneric(dst, key, block, a, b)
}

// philoxGroup is the number of Philox blocks philoxBlocks generates together.
func philoxGroup() int { return 1 }

// vectorDot reports that dot and axpy are vectorised, so that Gemv uses them row by row instead
// of its scalar four-row loops.
func vectorDot() bool { return false }

// dot4 computes out[r] = (row r of a)·x for four rows of a with leading dimension lda; see
// dot4Generic.
func dot4(a []float32, lda int, x []float32, out *[4]float32) { dot4Generic(a, lda, x, out) }

// zigRun is the ziggurat over buffered words into out; see zigRunGeneric.
func zigRun(words []uint32, out []float32) (consumed, produced int) {
	return zigRunGeneric(words, out)
}

// branchFreeMax reports that the compiler turns max(x, 0) on float32 into instructions rather
// than a runtime call (so ReLU can use it without a branch).
const branchFreeMax = false

// dot returns the inner product of x and y[:len(x)]; see dotGeneric.
func dot(x, y []float32) float32 { return dotGeneric(x, y) }

// dotRows is DotRows for rows, n ≥ 1; see dotRowsGeneric.
func dotRows(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	dotRowsGeneric(rows, n, x, ldx, y, ldy, out, incOut)
}

// axpy computes y[:len(x)] += alpha*x; see axpyGeneric.
func axpy(alpha float32, x, y []float32) { axpyGeneric(alpha, x, y) }

// mulAddRows is MulAddRows; see mulAddRowsGeneric.
func mulAddRows(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	mulAddRowsGeneric(rows, n, a, lda, x, ldx, y, ldy, dst, ldd)
}
