package kernels

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// spd returns a random symmetric positive definite n×n matrix G Gᵀ/n + I in float64.
func spd(seed uint64, n int) []float64 {
	r := newRand(seed)
	g := randSlice64(r, n*n)
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for k := 0; k < n; k++ {
				s += g[i*n+k] * g[j*n+k]
			}
			a[i*n+j] = s / float64(n)
		}
		a[i*n+i]++
	}
	return a
}

func convert[T Float](x []float64) []T {
	y := make([]T, len(x))
	for i, v := range x {
		y[i] = T(v)
	}
	return y
}

// epsOf returns the unit roundoff of T.
func epsOf[T Float]() float64 {
	var z T
	if _, ok := any(z).(float32); ok {
		return eps32
	}
	return 1.0 / (1 << 53)
}

func testCholesky[T Float](t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 16, 33, shortOr(t, 64, 200)} {
		a64 := spd(uint64(n), n)
		a := convert[T](a64)
		if err := Cholesky(a, n); err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		tol := 50 * float64(n) * epsOf[T]()
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if j > i {
					if a[i*n+j] != 0 {
						t.Fatalf("n=%d: upper L[%d,%d] = %g, want 0", n, i, j, float64(a[i*n+j]))
					}
					continue
				}
				var s float64
				for k := 0; k <= j; k++ {
					s += float64(a[i*n+k]) * float64(a[j*n+k])
				}
				if !closeTo(s, a64[i*n+j], tol*(1+math.Abs(a64[i*n+j]))) {
					t.Fatalf("n=%d: (L Lᵀ)[%d,%d] = %g, want %g", n, i, j, s, a64[i*n+j])
				}
			}
			if a[i*n+i] <= 0 {
				t.Fatalf("n=%d: L[%d,%d] = %g not positive", n, i, i, float64(a[i*n+i]))
			}
		}
	}
}

func TestCholesky(t *testing.T) {
	t.Run("float32", testCholesky[float32])
	t.Run("float64", testCholesky[float64])
}

func TestCholeskyNotPositiveDefinite(t *testing.T) {
	nan := math.NaN()
	cases := []struct {
		name  string
		a     []float64
		n     int
		pivot int
	}{
		{"negative first", []float64{-1}, 1, 0},
		{"zero", []float64{0, 0, 0, 0}, 2, 0},
		{"indefinite", []float64{1, 2, 2, 1}, 2, 1},
		{"singular", []float64{1, 1, 1, 1}, 2, 1},
		{"third pivot", []float64{4, 0, 0, 0, 9, 0, 0, 0, -1}, 3, 2},
		{"nan", []float64{1, 0, 0, nan}, 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Cholesky(append([]float64(nil), tc.a...), tc.n)
			if !errors.Is(err, ErrNotPositiveDefinite) {
				t.Fatalf("got %v, want ErrNotPositiveDefinite", err)
			}
			if want := fmt.Sprintf("pivot %d ", tc.pivot); !strings.Contains(err.Error(), want) {
				t.Fatalf("error %q does not name %q", err, want)
			}
		})
	}
	if err := Cholesky(make([]float32, 3), 2); err == nil || errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("short slice: got %v, want a size error", err)
	}
}

func TestJitteredCholesky(t *testing.T) {
	// A rank-one PSD matrix z zᵀ is singular: plain Cholesky fails, the jittered one succeeds.
	z := []float64{1, 2, -1, 0.5}
	n := len(z)
	a := make([]float64, n*n)
	var tr float64
	for i := range z {
		for j := range z {
			a[i*n+j] = z[i] * z[j]
		}
		tr += z[i] * z[i]
	}
	if err := Cholesky(append([]float64(nil), a...), n); !errors.Is(err, ErrNotPositiveDefinite) {
		t.Fatalf("plain Cholesky of a singular matrix: got %v, want failure", err)
	}
	for _, rel := range []float64{1e-4, 1e-2} {
		l := append([]float64(nil), a...)
		jit, err := JitteredCholesky(l, n, rel)
		if err != nil {
			t.Fatalf("rel=%g: %v", rel, err)
		}
		if want := rel * tr / float64(n); !closeTo(jit, want, 1e-15*want) {
			t.Fatalf("rel=%g: jitter %g, want %g", rel, jit, want)
		}
		for i := 0; i < n; i++ {
			for j := 0; j <= i; j++ {
				var s float64
				for k := 0; k <= j; k++ {
					s += l[i*n+k] * l[j*n+k]
				}
				want := a[i*n+j]
				if i == j {
					want += jit
				}
				if !closeTo(s, want, 1e-12) {
					t.Fatalf("rel=%g: (L Lᵀ)[%d,%d] = %g, want %g", rel, i, j, s, want)
				}
			}
		}
	}
	// float32, and the error path names the jitter.
	bad := []float32{-1, 0, 0, -1}
	if _, err := JitteredCholesky(bad, 2, 1e-4); !errors.Is(err, ErrNotPositiveDefinite) || !strings.Contains(err.Error(), "jitter") {
		t.Fatalf("negative definite: got %v", err)
	}
	if j, err := JitteredCholesky([]float32{}, 0, 1e-4); err != nil || j != 0 {
		t.Fatalf("n=0: got %v, %v", j, err)
	}
}

// triangular returns a random well-conditioned n×n triangular matrix (leading dimension ld) whose
// other triangle is filled with NaN so that reading it would be detected.
func triangular(seed uint64, n, ld int, uplo Uplo) []float64 {
	r := newRand(seed)
	a := make([]float64, n*ld)
	for i := range a {
		a[i] = math.NaN()
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			switch {
			case i == j:
				a[i*ld+j] = 1 + r.Float64()
				if r.IntN(2) == 0 {
					a[i*ld+j] = -a[i*ld+j]
				}
			case (uplo == Lower) == (j < i):
				a[i*ld+j] = (2*r.Float64() - 1) / math.Sqrt(float64(n))
			}
		}
	}
	return a
}

func testSolveTriangular[T Float](t *testing.T) {
	for _, side := range []Side{Left, Right} {
		for _, uplo := range []Uplo{Lower, Upper} {
			for _, trans := range []bool{false, true} {
				for _, s := range [][2]int{{1, 1}, {1, 5}, {5, 1}, {7, 3}, {16, 17}, {40, 33}} {
					m, n := s[0], s[1]
					name := fmt.Sprintf("%v_%v_trans%v_m%d_n%d", side, uplo, trans, m, n)
					na := m
					if side == Right {
						na = n
					}
					lda, ldb := na+2, n+3
					a64 := triangular(uint64(m*100+n), na, lda, uplo)
					opA := func(i, j int) float64 {
						if trans {
							i, j = j, i
						}
						if (uplo == Lower && j > i) || (uplo == Upper && j < i) {
							return 0
						}
						return a64[i*lda+j]
					}
					x := randSlice64(newRand(uint64(m+n)), m*n)
					b64 := make([]float64, m*ldb)
					for i := range b64 {
						b64[i] = 12345 // padding, must stay untouched
					}
					for i := 0; i < m; i++ {
						for j := 0; j < n; j++ {
							var s float64
							if side == Left {
								for k := 0; k < m; k++ {
									s += opA(i, k) * x[k*n+j]
								}
							} else {
								for k := 0; k < n; k++ {
									s += x[i*n+k] * opA(k, j)
								}
							}
							b64[i*ldb+j] = s
						}
					}
					a, b := convert[T](a64), convert[T](b64)
					SolveTriangular(side, uplo, trans, m, n, a, lda, b, ldb)
					tol := 100 * float64(na) * epsOf[T]()
					for i := 0; i < m; i++ {
						for j := 0; j < ldb; j++ {
							got := float64(b[i*ldb+j])
							if j >= n {
								if got != 12345 {
									t.Fatalf("%s: padding B[%d,%d] modified", name, i, j)
								}
								continue
							}
							if want := x[i*n+j]; !closeTo(got, want, tol) {
								t.Fatalf("%s: X[%d,%d] = %g, want %g", name, i, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

func TestSolveTriangular(t *testing.T) {
	t.Run("float32", testSolveTriangular[float32])
	t.Run("float64", testSolveTriangular[float64])
}

func testCholeskySolve[T Float](t *testing.T) {
	for _, s := range [][2]int{{1, 1}, {3, 2}, {17, 5}, {50, 1}} {
		n, nrhs := s[0], s[1]
		a64 := spd(uint64(n+7), n)
		x := randSlice64(newRand(uint64(n)), n*nrhs)
		b64 := make([]float64, n*nrhs)
		for i := 0; i < n; i++ {
			for j := 0; j < nrhs; j++ {
				for k := 0; k < n; k++ {
					b64[i*nrhs+j] += a64[i*n+k] * x[k*nrhs+j]
				}
			}
		}
		l := convert[T](a64)
		if err := Cholesky(l, n); err != nil {
			t.Fatal(err)
		}
		b := convert[T](b64)
		CholeskySolve(l, n, b, nrhs)
		tol := 1000 * float64(n) * epsOf[T]()
		for i := range x {
			if !closeTo(float64(b[i]), x[i], tol) {
				t.Fatalf("n=%d nrhs=%d: X[%d] = %g, want %g", n, nrhs, i, float64(b[i]), x[i])
			}
		}
	}
}

func TestCholeskySolve(t *testing.T) {
	t.Run("float32", testCholeskySolve[float32])
	t.Run("float64", testCholeskySolve[float64])
}

// TestCholeskyInverse: A · (L Lᵀ)⁻¹ is the identity for random SPD matrices A = L Lᵀ (float64),
// whatever dst held before.
func TestCholeskyInverse(t *testing.T) {
	for _, n := range []int{1, 2, 5, 17} {
		a := spd(uint64(n), n)
		l := append([]float64(nil), a...)
		if err := Cholesky(l, n); err != nil {
			t.Fatal(err)
		}
		inv := make([]float64, n*n)
		for i := range inv {
			inv[i] = math.NaN()
		}
		CholeskyInverse(inv, l, n)
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				s := 0.0
				for k := 0; k < n; k++ {
					s += a[i*n+k] * inv[k*n+j]
				}
				want := 0.0
				if i == j {
					want = 1
				}
				if !(math.Abs(s-want) <= 1e-12*float64(n)) {
					t.Fatalf("n=%d: (A·A⁻¹)[%d,%d] = %g, want %g", n, i, j, s, want)
				}
			}
		}
	}
}
