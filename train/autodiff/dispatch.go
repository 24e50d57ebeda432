package autodiff

import "github.com/edgebnn/edgebnn/kernels"

// The wrappers below are the single place where the tape chooses between the kernels package
// and the generic loops: float32 slices go to the kernels' BLAS-like routines, other element
// types (float64 gradient checks, named float types) to kernels.GemmRef and linalg.go's loops. The
// kernels' linear algebra (Cholesky, triangular solves) is generic and used for every type.

func gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if af, ok := any(a).([]float32); ok && k > 0 {
		bf, cf := any(b).([]float32), any(c).([]float32)
		kernels.Gemm(transA, transB, m, n, k, float32(alpha), af, lda, bf, ldb, float32(beta), cf, ldc)
		return
	}
	kernels.GemmRef(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func cholesky[T Float](a []T, n int) error { return kernels.Cholesky(a, n) }

// trsm solves op(A)·X = B (left) or X·op(A) = B (right) in place in b (m×n).
func trsm[T Float](left, lower, trans bool, m, n int, a []T, lda int, b []T, ldb int) {
	side, uplo := kernels.Left, kernels.Lower
	if !left {
		side = kernels.Right
	}
	if !lower {
		uplo = kernels.Upper
	}
	kernels.SolveTriangular(side, uplo, trans, m, n, a, lda, b, ldb)
}

func im2col[T Float](g kernels.ConvGeom, img, col []T) {
	if fi, ok := any(img).([]float32); ok {
		kernels.Im2Col(g, fi, any(col).([]float32))
		return
	}
	im2colGeneric(g, img, col)
}

func col2im[T Float](g kernels.ConvGeom, col, img []T) {
	if fc, ok := any(col).([]float32); ok {
		kernels.Col2Im(g, fc, any(img).([]float32))
		return
	}
	col2imGeneric(g, col, img)
}
