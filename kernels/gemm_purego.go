//go:build purego || !(amd64 || arm64)

package kernels

// gemmKernel is the micro-kernel used by the Gemm drivers; see gemmKernelGeneric.
func gemmKernel(kc int, alpha float32, a, b, c []float32, ldc int) {
	gemmKernelGeneric(kc, alpha, a, b, c, ldc)
}
