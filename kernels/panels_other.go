//go:build purego || !arm64

package kernels

// gemmPanels is gemmPanelRows for panels ≥ 1 panels of gemmMR rows one below the other (panel
// p's A and C gemmMR·p rows down), panel by panel; arm64 runs them in one call
// (dispatch_arm64.go).
func gemmPanels(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles, panels int, over bool) {
	for p := 0; p < panels; p++ {
		gemmPanelRows(kc, alpha, a[p*gemmMR*lda:], lda, b, ldb, bstep, c[p*gemmMR*ldc:], ldc, tiles, over)
	}
}

// edgePanels is rowsTile for the last nr < gemmNR columns of panels ≥ 1 full panels of A;
// see edgePanelsGeneric.
func edgePanels(kb int, alpha float32, a []float32, lda int, b, c []float32, ldc, nr, panels int, over bool) {
	edgePanelsGeneric(kb, alpha, a, lda, b, c, ldc, nr, panels, over)
}
