package kernels

import "fmt"

// Dot returns the inner product of x and y, accumulated in float32 with several independent
// partial sums. It panics if len(x) != len(y).
func Dot(x, y []float32) float32 {
	if len(x) != len(y) {
		panic(fmt.Sprintf("kernels.Dot: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	return dot(x, y)
}

// DotRows computes out[r·incOut] = x_r·y_r for the rows rows of x and y (n values each, leading
// dimensions ldx and ldy), as Dot does row by row, in one call (n = 0 gives zeros). It panics on
// negative sizes, incOut < 1 or slices too short for them.
func DotRows(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	checkMatrix("kernels.DotRows", "x", rows, n, x, ldx)
	checkMatrix("kernels.DotRows", "y", rows, n, y, ldy)
	if incOut < 1 {
		panic(fmt.Sprintf("kernels.DotRows: incOut %d < 1", incOut))
	}
	if rows == 0 {
		return
	}
	if need := (rows-1)*incOut + 1; len(out) < need {
		panic(fmt.Sprintf("kernels.DotRows: out has %d values, need %d", len(out), need))
	}
	if n == 0 {
		for r := 0; r < rows; r++ {
			out[r*incOut] = 0
		}
		return
	}
	dotRows(rows, n, x, ldx, y, ldy, out, incOut)
}

// dotRowsGeneric is DotRows through dotGeneric (rows, n ≥ 1).
func dotRowsGeneric(rows, n int, x []float32, ldx int, y []float32, ldy int, out []float32, incOut int) {
	for r := 0; r < rows; r++ {
		out[r*incOut] = dotGeneric(x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n])
	}
}

// dotGeneric is the portable dot (Dot without the length check); y must be at least as long as x.
func dotGeneric(x, y []float32) float32 {
	n := len(x)
	y = y[:n]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= n; i += 8 {
		xx := x[i : i+8 : i+8]
		yy := y[i : i+8 : i+8]
		s0 += xx[0] * yy[0]
		s1 += xx[1] * yy[1]
		s2 += xx[2] * yy[2]
		s3 += xx[3] * yy[3]
		s4 += xx[4] * yy[4]
		s5 += xx[5] * yy[5]
		s6 += xx[6] * yy[6]
		s7 += xx[7] * yy[7]
	}
	for ; i < n; i++ {
		s0 += x[i] * y[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// Axpy computes y += alpha*x. It panics if len(x) != len(y).
func Axpy(alpha float32, x, y []float32) {
	if len(x) != len(y) {
		panic(fmt.Sprintf("kernels.Axpy: len(x)=%d != len(y)=%d", len(x), len(y)))
	}
	axpy(alpha, x, y)
}

// axpyGeneric is the portable axpy (Axpy without the length check); y must be at least as long
// as x.
func axpyGeneric(alpha float32, x, y []float32) {
	n := len(x)
	y = y[:n]
	i := 0
	for ; i+4 <= n; i += 4 {
		xx := x[i : i+4 : i+4]
		yy := y[i : i+4 : i+4]
		yy[0] += alpha * xx[0]
		yy[1] += alpha * xx[1]
		yy[2] += alpha * xx[2]
		yy[3] += alpha * xx[3]
	}
	for ; i < n; i++ {
		y[i] += alpha * x[i]
	}
}

// AxpyRows computes y[r*ldy : r*ldy+n] += alpha[r*astep] * x[r*ldx : r*ldx+n] for r < rows:
// Axpy on rows of matrices, each row's result bit for bit Axpy's. astep or ldx may be 0 (one
// alpha, or one row of x, for every row); ldy must be at least n (or rows at most 1). It panics on
// negative sizes or slices too short.
func AxpyRows(rows, n int, alpha []float32, astep int, x []float32, ldx int, y []float32, ldy int) {
	if rows < 0 || n < 0 || astep < 0 || ldx < 0 || (rows > 1 && ldy < n) {
		panic(fmt.Sprintf("kernels.AxpyRows: rows=%d n=%d astep=%d ldx=%d ldy=%d", rows, n, astep, ldx, ldy))
	}
	if rows == 0 || n == 0 {
		return
	}
	_, _, _ = alpha[(rows-1)*astep], x[(rows-1)*ldx+n-1], y[(rows-1)*ldy+n-1]
	axpyRows(rows, n, alpha, astep, x, ldx, y, ldy)
}

// axpyRowsGeneric is AxpyRows (without its checks) in Go, the twin of the assembly versions.
func axpyRowsGeneric(rows, n int, alpha []float32, astep int, x []float32, ldx int, y []float32, ldy int) {
	for r := 0; r < rows; r++ {
		axpy(alpha[r*astep], x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n])
	}
}

// Scale computes x *= alpha.
func Scale(alpha float32, x []float32) { scale(alpha, x) }

// scaleGeneric is the portable scale: x *= alpha.
func scaleGeneric(alpha float32, x []float32) {
	for i := range x {
		x[i] *= alpha
	}
}

// scaleOrZero computes x = beta*x, writing exact zeros (ignoring NaN/Inf in x) when beta == 0,
// as BLAS does for the output operand.
func scaleOrZero(beta float32, x []float32) {
	switch beta {
	case 1:
	case 0:
		clear(x)
	default:
		Scale(beta, x)
	}
}

// scaleRowsOrZero applies scaleOrZero to the m rows of n values of c (leading dimension ldc): one
// call for the whole matrix when its rows are contiguous.
func scaleRowsOrZero(beta float32, c []float32, m, n, ldc int) {
	if beta == 1 {
		return
	}
	if ldc == n {
		scaleOrZero(beta, c[:m*n])
		return
	}
	for i := 0; i < m; i++ {
		scaleOrZero(beta, c[i*ldc:i*ldc+n])
	}
}

// Gemv computes y = alpha*op(A)*x + beta*y, where A is m×n row-major with leading dimension lda
// and op(A) = A (x has n elements, y has m) or Aᵀ if trans (x has m elements, y has n).
// When beta == 0, y is overwritten (NaNs in y are ignored). It panics on inconsistent sizes.
func Gemv(trans bool, m, n int, alpha float32, a []float32, lda int, x []float32, beta float32, y []float32) {
	lx, ly := n, m
	if trans {
		lx, ly = m, n
	}
	if m < 0 || n < 0 {
		panic(fmt.Sprintf("kernels.Gemv: negative size m=%d n=%d", m, n))
	}
	if len(x) < lx || len(y) < ly {
		panic(fmt.Sprintf("kernels.Gemv: len(x)=%d (need %d) or len(y)=%d (need %d) too short", len(x), lx, len(y), ly))
	}
	checkMatrix("kernels.Gemv", "a", m, n, a, lda)
	y = y[:ly]
	x = x[:lx]
	if m == 0 || n == 0 {
		scaleOrZero(beta, y)
		return
	}
	if !trans {
		x := x[:n]
		i := 0
		var d [4]float32
		// Four rows at a time: x is loaded once for four dot products.
		for ; i+4 <= m; i += 4 {
			dot4(a[i*lda:(i+3)*lda+n], lda, x, &d)
			yy := y[i : i+4 : i+4]
			// Unrolled, the test of beta once per four rows: the loop over d with the test
			// inside cost about 29 instructions a row on 32-bit ARM.
			if beta == 0 {
				yy[0], yy[1], yy[2], yy[3] = alpha*d[0], alpha*d[1], alpha*d[2], alpha*d[3]
			} else {
				yy[0] = alpha*d[0] + beta*yy[0]
				yy[1] = alpha*d[1] + beta*yy[1]
				yy[2] = alpha*d[2] + beta*yy[2]
				yy[3] = alpha*d[3] + beta*yy[3]
			}
		}
		for ; i < m; i++ {
			s := dot(a[i*lda:i*lda+n], x)
			if beta == 0 {
				y[i] = alpha * s
			} else {
				y[i] = alpha*s + beta*y[i]
			}
		}
		return
	}
	// y = alpha*Aᵀx + beta*y: a sequence of row axpys (vectorised, or four rows per pass over y).
	scaleOrZero(beta, y)
	y = y[:n]
	i := 0
	if vectorDot() {
		for ; i < m; i++ {
			axpy(alpha*x[i], a[i*lda:i*lda+n], y)
		}
		return
	}
	for ; i+4 <= m; i += 4 {
		r0 := a[i*lda:][:len(y)]
		r1 := a[(i+1)*lda:][:len(y)]
		r2 := a[(i+2)*lda:][:len(y)]
		r3 := a[(i+3)*lda:][:len(y)]
		c0, c1, c2, c3 := alpha*x[i], alpha*x[i+1], alpha*x[i+2], alpha*x[i+3]
		for j, yj := range y {
			y[j] = yj + c0*r0[j] + c1*r1[j] + c2*r2[j] + c3*r3[j]
		}
	}
	for ; i < m; i++ {
		axpy(alpha*x[i], a[i*lda:i*lda+n], y)
	}
}

// dot4Generic is the portable dot4: out[r] = (row r of a)·x for the four rows of a (leading
// dimension lda, len(x) values each), two accumulators per row.
func dot4Generic(a []float32, lda int, x []float32, out *[4]float32) {
	n := len(x)
	r0 := a[:n]
	r1 := a[lda:][:n]
	r2 := a[2*lda:][:n]
	r3 := a[3*lda:][:n]
	var s0, s1, s2, s3, t0, t1, t2, t3 float32
	j := 0
	for ; j+1 < n; j += 2 {
		x0, x1 := x[j], x[j+1]
		s0 += r0[j] * x0
		s1 += r1[j] * x0
		s2 += r2[j] * x0
		s3 += r3[j] * x0
		t0 += r0[j+1] * x1
		t1 += r1[j+1] * x1
		t2 += r2[j+1] * x1
		t3 += r3[j+1] * x1
	}
	if j < n {
		x0 := x[j]
		s0 += r0[j] * x0
		s1 += r1[j] * x0
		s2 += r2[j] * x0
		s3 += r3[j] * x0
	}
	*out = [4]float32{s0 + t0, s1 + t1, s2 + t2, s3 + t3}
}

// checkMatrix panics unless a holds an r×c row-major matrix with leading dimension ld.
func checkMatrix(fn, name string, r, c int, a []float32, ld int) {
	if r < 0 || c < 0 {
		panic(fmt.Sprintf("%s: %s has negative size %d×%d", fn, name, r, c))
	}
	if r == 0 || c == 0 {
		return
	}
	if ld < c {
		panic(fmt.Sprintf("%s: leading dimension of %s is %d < %d columns", fn, name, ld, c))
	}
	if need := (r-1)*ld + c; len(a) < need {
		panic(fmt.Sprintf("%s: %s has %d elements, need %d for %d×%d with leading dimension %d", fn, name, len(a), need, r, c, ld))
	}
}
