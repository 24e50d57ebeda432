//go:build purego || !(amd64 || arm64)

package kernels

// gemmPanelRows is gemmKernelRows for tiles tiles side by side; see gemmPanelRowsGeneric.
func gemmPanelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles int, over bool) {
	gemmPanelRowsGeneric(kc, alpha, a, lda, b, ldb, bstep, c, ldc, tiles, over)
}
