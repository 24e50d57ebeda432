//go:build !purego && (amd64 || arm64)

package kernels

// gemmKernel is the micro-kernel used by the Gemm drivers. On amd64 and arm64 this is where an
// assembly kernel (kernels_amd64.s / kernels_arm64.s, declared here with //go:noescape) will be
// dispatched; until one exists it forwards to the portable gemmKernelGeneric.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	gemmKernelGeneric(kc, alpha, a, b, c, ldc)
}
