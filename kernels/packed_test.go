package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestGemmPacked: GemmPacked agrees with a float64 reference on shapes around the tile, the
// flat-product fallback and the depth block, with every transposition, alpha and beta = 0.5, 1
// and 0 (C's NaNs then ignored), leaving C's columns beyond n alone.
func TestGemmPacked(t *testing.T) {
	r := newRand(31)
	work := make([]float32, GemmPackedWork)
	for _, m := range []int{0, 1, gemmMR/2 - 1, gemmMR / 2, gemmMR - 1, gemmMR, gemmMR + 1, 3*gemmMR + 5} {
		for _, n := range []int{1, gemmNR - 1, gemmNR, gemmNR + 3, 130} {
			for _, k := range []int{1, 7, 16, gemmKC, gemmKC + 45} {
				for _, tb := range [][3]float64{{0, 0, 0}, {0, 1, 0.5}, {1, 0, 1}, {1, 1, 0}, {0, 0, 0.5}, {1, 1, 0.5}} {
					tr, beta := [2]bool{tb[0] == 1, tb[1] == 1}, tb[2]
					name := fmt.Sprintf("m=%d/n=%d/k=%d/tA=%v/tB=%v/beta=%g", m, n, k, tr[0], tr[1], beta)
					lda, ldb, ldc := k+2, n+1, n+3
					if tr[0] {
						lda = m + 2
					}
					if tr[1] {
						ldb = k + 1
					}
					a := randSlice(r, max(1, (max(m, k))*lda))
					b := randSlice(r, max(1, (max(n, k))*ldb))
					c0 := randSlice(r, max(1, m*ldc))
					if beta == 0 {
						for i := 0; i < len(c0); i += 3 {
							c0[i] = float32(math.NaN())
						}
					}
					got := append([]float32(nil), c0...)
					pb := NewPackedB(tr[1], k, n, b, ldb)
					GemmPacked(tr[0], m, 0.75, a, lda, pb, float32(beta), got, ldc, work)
					for i := 0; i < m; i++ {
						for j := n; j < ldc && i*ldc+j < len(got); j++ {
							if math.Float32bits(got[i*ldc+j]) != math.Float32bits(c0[i*ldc+j]) {
								t.Fatalf("%s: c[%d,%d] beyond n changed", name, i, j)
							}
						}
						for j := 0; j < n; j++ {
							want, mag := 0.0, beta
							if beta != 0 {
								want = beta * float64(c0[i*ldc+j])
							}
							for l := 0; l < k; l++ {
								p := opAt(a, lda, tr[0], i, l) * opAt(b, ldb, tr[1], l, j)
								want += 0.75 * p
								mag += 0.75 * max(p, -p)
							}
							if !closeTo(float64(got[i*ldc+j]), want, 4*eps32*float64(k)*mag+1e-30) {
								t.Fatalf("%s: c[%d,%d] = %g, want %g", name, i, j, got[i*ldc+j], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmPackedNoAllocations: with its work slice, GemmPacked allocates nothing.
func TestGemmPackedNoAllocations(t *testing.T) {
	r := newRand(32)
	a, b, c := randSlice(r, 16*300), randSlice(r, 300*40), make([]float32, 16*40)
	pb := NewPackedB(false, 300, 40, b, 40)
	work := make([]float32, GemmPackedWork)
	if n := testing.AllocsPerRun(10, func() { GemmPacked(false, 16, 1, a, 300, pb, 0, c, 40, work) }); n != 0 {
		t.Errorf("%v allocations per GemmPacked", n)
	}
}

// TestGemmPackedRowsIndependent: with beta = 0 and at least gemmMR rows, each row of C comes out
// bit-identical whatever the number of rows in the call and wherever the row sits in it — full
// panels or a last partial one, one depth block or several. The runtime relies on it: a sample's arithmetic does not depend on
// how many samples are drawn together (Predictor passes).
func TestGemmPackedRowsIndependent(t *testing.T) { checkRowsIndependent(t) }

// checkRowsIndependent is TestGemmPackedRowsIndependent's body, for the dispatched kernels.
func checkRowsIndependent(t *testing.T) {
	t.Helper()
	r := newRand(33)
	work := make([]float32, GemmPackedWork)
	const total = 5*gemmMR + 3
	for _, k := range []int{1, 7, 64, gemmKC, gemmKC + 45, 3*gemmKC + 1} {
		for _, n := range []int{1, 5, gemmNR, gemmNR + 3, 40} {
			for _, beta := range []float32{0} {
				lda, ldc := k+1, n+2
				a := randSlice(r, total*lda)
				pb := NewPackedB(false, k, n, randSlice(r, k*n), n)
				c0 := randSlice(r, total*ldc)
				full := append([]float32(nil), c0...)
				GemmPacked(false, total, 0.75, a, lda, pb, beta, full, ldc, work)
				for _, r0 := range []int{0, 1, gemmMR / 2, gemmMR, 2*gemmMR + 1} {
					for _, m := range []int{gemmMR, gemmMR + 2, 2 * gemmMR, 2*gemmMR + 1, 3*gemmMR - 1} {
						if r0+m > total {
							continue
						}
						got := append([]float32(nil), c0[r0*ldc:(r0+m)*ldc]...)
						GemmPacked(false, m, 0.75, a[r0*lda:], lda, pb, beta, got, ldc, work)
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								if g, w := got[i*ldc+j], full[(r0+i)*ldc+j]; math.Float32bits(g) != math.Float32bits(w) {
									t.Fatalf("k=%d n=%d beta=%g: row %d of C as row %d of %d rows: c[%d] = %v, as row %d of %d: %v",
										k, n, beta, r0+i, i, m, j, g, r0+i, total, w)
								}
							}
						}
					}
				}
			}
		}
	}
}
