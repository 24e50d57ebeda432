//go:build !purego && (amd64 || arm64)

package kernels

// panelRowsChecked checks the bounds the assembly panel kernels (gemmPanelRowsAVX2,
// gemmPanelRowsNEON) rely on — the contract of gemmPanelRowsGeneric for panels ≥ 1 panels of
// gemmMR rows one below the other, tiles ≥ 1 and kc ≥ 1 — by indexing the last element each
// slice must have (a panic names it), and returns over as the int the kernels take.
func panelRowsChecked(kc int, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles, panels int, over bool) int {
	_ = a[(panels*gemmMR-1)*lda+kc-1]
	_ = b[(tiles-1)*bstep+(kc-1)*ldb+gemmNR-1]
	_ = c[(panels*gemmMR-1)*ldc+tiles*gemmNR-1]
	if over {
		return 1
	}
	return 0
}
