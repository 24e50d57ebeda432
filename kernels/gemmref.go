package kernels

// GemmRef computes C = alpha·op(A)·op(B) + beta·C (row-major, op(A) m×k, op(B) k×n, leading
// dimensions lda, ldb, ldc) with plain loops, for any element type: the float64 products of the
// trainer, of the runtime's load-time algebra and of the tests, where Gemm is float32 only. Each
// element sums its k products in order of p; a zero entry of alpha·A is skipped when op(B) is
// not transposed (so 0·∞ adds nothing there).
func GemmRef[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if alpha == 0 || k == 0 {
		return
	}
	switch {
	case !transA && !transB:
		for i := 0; i < m; i++ {
			crow := c[i*ldc : i*ldc+n]
			for p := 0; p < k; p++ {
				s := alpha * a[i*lda+p]
				if s == 0 {
					continue
				}
				brow := b[p*ldb : p*ldb+n]
				for j, bv := range brow {
					crow[j] += s * bv
				}
			}
		}
	case transA && !transB:
		for p := 0; p < k; p++ {
			brow := b[p*ldb : p*ldb+n]
			for i := 0; i < m; i++ {
				s := alpha * a[p*lda+i]
				if s == 0 {
					continue
				}
				crow := c[i*ldc : i*ldc+n]
				for j, bv := range brow {
					crow[j] += s * bv
				}
			}
		}
	case !transA && transB:
		for i := 0; i < m; i++ {
			arow := a[i*lda : i*lda+k]
			for j := 0; j < n; j++ {
				brow := b[j*ldb : j*ldb+k]
				var s T
				for p, av := range arow {
					s += av * brow[p]
				}
				c[i*ldc+j] += alpha * s
			}
		}
	default:
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s T
				for p := 0; p < k; p++ {
					s += a[p*lda+i] * b[j*ldb+p]
				}
				c[i*ldc+j] += alpha * s
			}
		}
	}
}

// MatMul returns op(A)·op(B), a new m×n row-major matrix, for A m×k (k×m if transA) and B k×n
// (n×k if transB), both packed (GemmRef with alpha 1).
func MatMul[T Float](transA, transB bool, m, n, k int, a, b []T) []T {
	c := make([]T, m*n)
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	GemmRef(transA, transB, m, n, k, 1, a, lda, b, ldb, 0, c, n)
	return c
}
