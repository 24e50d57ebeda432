package kernels

import (
	"errors"
	"fmt"
	"math"
)

// Float is the element-type constraint of the generic linear-algebra routines.
type Float interface{ ~float32 | ~float64 }

// ErrNotPositiveDefinite is returned (wrapped, with the failing pivot index) when Cholesky fails.
var ErrNotPositiveDefinite = errors.New("kernels: matrix is not positive definite")

// Side selects on which side of X the triangular matrix stands in SolveTriangular.
type Side int

// Sides of a triangular solve.
const (
	Left  Side = iota // solve op(A) X = B
	Right             // solve X op(A) = B
)

// Uplo selects which triangle of a matrix is referenced.
type Uplo int

// Triangles of a matrix.
const (
	Lower Uplo = iota // the lower triangle (including the diagonal)
	Upper             // the upper triangle (including the diagonal)
)

// String returns "Left" or "Right".
func (s Side) String() string {
	switch s {
	case Left:
		return "Left"
	case Right:
		return "Right"
	}
	return fmt.Sprintf("Side(%d)", int(s))
}

// String returns "Lower" or "Upper".
func (u Uplo) String() string {
	switch u {
	case Lower:
		return "Lower"
	case Upper:
		return "Upper"
	}
	return fmt.Sprintf("Uplo(%d)", int(u))
}

// dotT returns the inner product of x and y[:len(x)] with four partial sums.
func dotT[T Float](x, y []T) T {
	n := len(x)
	y = y[:n]
	var s0, s1, s2, s3 T
	i := 0
	for ; i+4 <= n; i += 4 {
		s0 += x[i] * y[i]
		s1 += x[i+1] * y[i+1]
		s2 += x[i+2] * y[i+2]
		s3 += x[i+3] * y[i+3]
	}
	for ; i < n; i++ {
		s0 += x[i] * y[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpyT computes y[:len(x)] += alpha*x.
func axpyT[T Float](alpha T, x, y []T) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// Cholesky overwrites the lower triangle of the n×n row-major matrix a with L such that A = L Lᵀ
// (only the lower triangle of A is read) and zeroes the strict upper triangle. If a pivot is not
// positive (or is NaN) it returns an error wrapping ErrNotPositiveDefinite that names the pivot
// index; a is then partially overwritten.
func Cholesky[T Float](a []T, n int) error {
	if n < 0 {
		return fmt.Errorf("kernels: cholesky: negative size %d", n)
	}
	if len(a) < n*n {
		return fmt.Errorf("kernels: cholesky: matrix has %d elements, need %d for %d×%d", len(a), n*n, n, n)
	}
	for j := 0; j < n; j++ {
		rj := a[j*n : j*n+n]
		d := rj[j] - dotT(rj[:j], rj[:j])
		if !(d > 0) || math.IsInf(float64(d), 1) {
			return fmt.Errorf("kernels: cholesky of %d×%d matrix: pivot %d is %g: %w", n, n, j, float64(d), ErrNotPositiveDefinite)
		}
		ljj := T(math.Sqrt(float64(d)))
		rj[j] = ljj
		clear(rj[j+1:])
		for i := j + 1; i < n; i++ {
			ri := a[i*n : i*n+n]
			ri[j] = (ri[j] - dotT(ri[:j], rj[:j])) / ljj
		}
	}
	return nil
}

// JitteredCholesky adds rel*mean(diag(a)) to the diagonal of the n×n matrix a and then factors it
// in place with Cholesky (bayesianize's _jittered_cholesky uses rel = 1e-4). It returns the jitter
// added to each diagonal entry.
func JitteredCholesky[T Float](a []T, n int, rel T) (jitter T, err error) {
	if n < 0 {
		return 0, fmt.Errorf("kernels: jittered cholesky: negative size %d", n)
	}
	if len(a) < n*n {
		return 0, fmt.Errorf("kernels: jittered cholesky: matrix has %d elements, need %d for %d×%d", len(a), n*n, n, n)
	}
	if n == 0 {
		return 0, nil
	}
	var tr float64
	for i := 0; i < n; i++ {
		tr += float64(a[i*n+i])
	}
	jitter = rel * T(tr/float64(n))
	for i := 0; i < n; i++ {
		a[i*n+i] += jitter
	}
	if err := Cholesky(a, n); err != nil {
		return jitter, fmt.Errorf("kernels: jittered cholesky (jitter %g): %w", float64(jitter), err)
	}
	return jitter, nil
}

// SolveTriangular solves op(A) X = B (side Left: B is m×n, A is m×m) or X op(A) = B (side Right:
// A is n×n) in place in B (leading dimension ldb), where A is triangular with a non-unit diagonal
// (only the uplo triangle is read), leading dimension lda, and op(A) = Aᵀ if trans. It panics on
// inconsistent sizes or an invalid side/uplo.
func SolveTriangular[T Float](side Side, uplo Uplo, trans bool, m, n int, a []T, lda int, b []T, ldb int) {
	if m < 0 || n < 0 {
		panic(fmt.Sprintf("kernels.SolveTriangular: negative size m=%d n=%d", m, n))
	}
	if side != Left && side != Right {
		panic(fmt.Sprintf("kernels.SolveTriangular: invalid side %d", int(side)))
	}
	if uplo != Lower && uplo != Upper {
		panic(fmt.Sprintf("kernels.SolveTriangular: invalid uplo %d", int(uplo)))
	}
	if m == 0 || n == 0 {
		return
	}
	na := m
	if side == Right {
		na = n
	}
	if lda < na || len(a) < (na-1)*lda+na {
		panic(fmt.Sprintf("kernels.SolveTriangular: a has %d elements and leading dimension %d, too small for %d×%d", len(a), lda, na, na))
	}
	if ldb < n || len(b) < (m-1)*ldb+n {
		panic(fmt.Sprintf("kernels.SolveTriangular: b has %d elements and leading dimension %d, too small for %d×%d", len(b), ldb, m, n))
	}
	row := func(i int) []T { return b[i*ldb : i*ldb+n] }
	arow := func(i int) []T { return a[i*lda : i*lda+na] }
	if side == Left {
		// Row-oriented substitution; every update is an axpy on contiguous rows of B.
		switch {
		case uplo == Lower && !trans: // L X = B, forward
			for i := 0; i < m; i++ {
				xi, ai := row(i), arow(i)
				for k := 0; k < i; k++ {
					axpyT(-ai[k], row(k), xi)
				}
				divRow(xi, ai[i])
			}
		case uplo == Upper && !trans: // U X = B, backward
			for i := m - 1; i >= 0; i-- {
				xi, ai := row(i), arow(i)
				for k := i + 1; k < m; k++ {
					axpyT(-ai[k], row(k), xi)
				}
				divRow(xi, ai[i])
			}
		case uplo == Lower && trans: // Lᵀ X = B, backward; column i of Lᵀ is row i of L
			for i := m - 1; i >= 0; i-- {
				xi, ai := row(i), arow(i)
				divRow(xi, ai[i])
				for k := 0; k < i; k++ {
					axpyT(-ai[k], xi, row(k))
				}
			}
		default: // Uᵀ X = B, forward
			for i := 0; i < m; i++ {
				xi, ai := row(i), arow(i)
				divRow(xi, ai[i])
				for k := i + 1; k < m; k++ {
					axpyT(-ai[k], xi, row(k))
				}
			}
		}
		return
	}
	// Right side: each row x of X solves x op(A) = b independently.
	for r := 0; r < m; r++ {
		x := row(r)
		switch {
		case uplo == Lower && !trans: // x L = b: backward over columns
			for j := n - 1; j >= 0; j-- {
				aj := arow(j)
				x[j] /= aj[j]
				axpyT(-x[j], aj[:j], x[:j])
			}
		case uplo == Upper && !trans: // x U = b: forward
			for j := 0; j < n; j++ {
				aj := arow(j)
				x[j] /= aj[j]
				axpyT(-x[j], aj[j+1:n], x[j+1:])
			}
		case uplo == Lower && trans: // x Lᵀ = b ⇔ L xᵀ = bᵀ: forward
			for j := 0; j < n; j++ {
				aj := arow(j)
				x[j] = (x[j] - dotT(aj[:j], x[:j])) / aj[j]
			}
		default: // x Uᵀ = b ⇔ U xᵀ = bᵀ: backward
			for j := n - 1; j >= 0; j-- {
				aj := arow(j)
				x[j] = (x[j] - dotT(aj[j+1:n], x[j+1:])) / aj[j]
			}
		}
	}
}

// divRow divides every element of x by d.
func divRow[T Float](x []T, d T) {
	for i := range x {
		x[i] /= d
	}
}

// CholeskySolve solves (L Lᵀ) X = B in place, with L the n×n lower Cholesky factor (as produced by
// Cholesky, leading dimension n) and B n×nrhs row-major (leading dimension nrhs).
func CholeskySolve[T Float](l []T, n int, b []T, nrhs int) {
	SolveTriangular(Left, Lower, false, n, nrhs, l, n, b, nrhs)
	SolveTriangular(Left, Lower, true, n, nrhs, l, n, b, nrhs)
}

// CholeskyInverse writes (L Lᵀ)⁻¹ to dst (n×n row-major) for the n×n lower Cholesky factor l
// (CholeskySolve against the identity).
func CholeskyInverse[T Float](dst, l []T, n int) {
	dst = dst[:n*n]
	clear(dst)
	for i := 0; i < n; i++ {
		dst[i*n+i] = 1
	}
	CholeskySolve(l, n, dst, n)
}
