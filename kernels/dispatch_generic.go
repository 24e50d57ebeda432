//go:build purego || !(amd64 || arm64)

package kernels

// The kernels that have assembly on arm64 and amd64 only (dispatch_arm64.go, dispatch_amd64.go):
// their generic twins everywhere else — the 32-bit ARM build (dispatch_arm.go) and the portable
// one (dispatch_purego.go) — and under the purego tag.

// expShift is ExpShift; see expShiftGeneric.
func expShift(x []float32, shift float32) (sum, dot float32) { return expShiftGeneric(x, shift) }

// expMax is ExpMax; see expMaxGeneric.
func expMax(x []float32) (mx, sum, dot float32) { return expMaxGeneric(x) }

// gemmPanelRows is gemmKernelRows for tiles tiles side by side; see gemmPanelRowsGeneric.
func gemmPanelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles int, over bool) {
	gemmPanelRowsGeneric(kc, alpha, a, lda, b, ldb, bstep, c, ldc, tiles, over)
}

// mul is Mul; see mulGeneric.
func mul(dst, x, y []float32) { mulGeneric(dst, x, y) }

// sqrtPos is SqrtPos; see sqrtPosGeneric.
func sqrtPos(x []float32) { sqrtPosGeneric(x) }

// axpyRows is AxpyRows; see axpyRowsGeneric.
func axpyRows(rows, n int, alpha []float32, astep int, x []float32, ldx int, y []float32, ldy int) {
	axpyRowsGeneric(rows, n, alpha, astep, x, ldx, y, ldy)
}

// accMoments is AccumulateMoments; see accMomentsGeneric.
func accMoments(x []float32, scale float32, s, s2 []float64) { accMomentsGeneric(x, scale, s, s2) }

// softmaxMoments is SoftmaxMoments for rows, n ≥ 1; see softmaxMomentsGeneric.
func softmaxMoments(rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	softmaxMomentsGeneric(rows, n, x, ldx, p, ldp, sum, dot, s, s2)
}

// Register tile of the Gemm micro-kernel (see gemmKernelGeneric).
const (
	gemmMR = 4
	gemmNR = 8
)

// gemmInPlaceA reports whether gemmKernelRows is a kernel of its own: here it is not, and the
// Gemm drivers pack A.
const gemmInPlaceA = false

// gemmKernelRows is the Gemm micro-kernel with A read in place; see gemmKernelRowsGeneric.
func gemmKernelRows(kc int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	gemmKernelRowsGeneric(kc, alpha, a, lda, b, ldb, c, ldc)
}

// relu computes x = max(x, 0) in place; see reluGeneric.
func relu(x []float32) { reluGeneric(x) }

// scale computes x *= alpha; see scaleGeneric.
func scale(alpha float32, x []float32) { scaleGeneric(alpha, x) }
