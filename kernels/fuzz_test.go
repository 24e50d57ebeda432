package kernels

import (
	"math"
	"testing"
)

// FuzzGemm checks Gemm (whichever micro-kernel and driver the shape selects) and GemmPacked
// against a float64 reference on fuzzed shapes, transpositions, leading-dimension padding and
// data: `go test -fuzz FuzzGemm ./kernels`.
func FuzzGemm(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(1), false, false, uint8(0), uint64(1))
	f.Add(uint8(7), uint8(17), uint8(33), true, false, uint8(3), uint64(2))
	f.Add(uint8(64), uint8(70), uint8(255), false, true, uint8(1), uint64(3))
	f.Add(uint8(9), uint8(130), uint8(200), true, true, uint8(5), uint64(4))
	f.Fuzz(func(t *testing.T, m8, n8, k8 uint8, transA, transB bool, pad8 uint8, seed uint64) {
		m, n, k, pad := int(m8)%80, int(n8)%140, int(k8)%300, int(pad8)%4
		r := newRand(seed)
		ar, ac := opShape(m, k, transA)
		br, bc := opShape(k, n, transB)
		lda, ldb, ldc := ac+pad, bc+pad, n+pad
		a := randSlice(r, max(1, ar*lda))
		b := randSlice(r, max(1, br*ldb))
		c := randSlice(r, max(1, m*ldc))
		c0 := append([]float32(nil), c...)
		c2 := append([]float32(nil), c...)
		Gemm(transA, transB, m, n, k, 1.25, a, lda, b, ldb, -0.5, c, ldc)
		work := make([]float32, GemmPackedWork)
		GemmPacked(transA, m, 1.25, a, lda, NewPackedB(transB, k, n, b, ldb), -0.5, c2, ldc, work)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want := -0.5 * float64(c0[i*ldc+j])
				mag := math.Abs(want)
				for l := 0; l < k; l++ {
					p := 1.25 * opAt(a, lda, transA, i, l) * opAt(b, ldb, transB, l, j)
					want += p
					mag += math.Abs(p)
				}
				tol := 4*eps32*float64(k+2)*mag + 1e-30
				if got := float64(c[i*ldc+j]); !closeTo(got, want, tol) {
					t.Fatalf("Gemm m=%d n=%d k=%d tA=%v tB=%v: c[%d,%d] = %g, want %g", m, n, k, transA, transB, i, j, got, want)
				}
				if got := float64(c2[i*ldc+j]); !closeTo(got, want, tol) {
					t.Fatalf("GemmPacked m=%d n=%d k=%d tA=%v tB=%v: c[%d,%d] = %g, want %g", m, n, k, transA, transB, i, j, got, want)
				}
			}
		}
	})
}
