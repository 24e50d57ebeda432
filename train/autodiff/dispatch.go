package autodiff

// The wrappers below are the single place where the tape chooses between the kernels package
// (float32) and the generic fallbacks in linalg.go (float64, or until kernels provides them).

func gemm[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	gemmGeneric(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

func cholesky[T Float](a []T, n int) error { return choleskyGeneric(a, n) }

func trsm[T Float](left, lower, trans bool, m, n int, a []T, lda int, b []T, ldb int) {
	trsmGeneric(left, lower, trans, m, n, a, lda, b, ldb)
}

func im2col[T Float](g convGeom, img, col []T) { im2colGeneric(g, img, col) }

func col2im[T Float](g convGeom, col, img []T) { col2imGeneric(g, col, img) }
