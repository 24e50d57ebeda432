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

// FuzzSoftmaxMoments: SoftmaxMoments against float64 softmaxes for fuzzed row counts, lengths,
// leading dimensions, value scales and aliasing (p = x), with the running sums s and s2 checked
// too.
func FuzzSoftmaxMoments(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint8(0), false, float32(1), uint64(1))
	f.Add(uint8(9), uint8(10), uint8(3), true, float32(30), uint64(2))
	f.Add(uint8(4), uint8(37), uint8(1), false, float32(200), uint64(3))
	f.Fuzz(func(t *testing.T, rows8, n8, pad8 uint8, alias bool, scale float32, seed uint64) {
		rows, n, pad := int(rows8)%20+1, int(n8)%70+1, int(pad8)%5
		if !(math.Abs(float64(scale)) <= 1e3) { // NaN too
			scale = 1
		}
		r := newRand(seed)
		ld := n + pad
		x := randSlice(r, rows*ld)
		for i := range x {
			x[i] *= scale
		}
		x0 := append([]float32(nil), x...)
		p := make([]float32, rows*ld)
		if alias {
			p = x
		}
		sum, dot := make([]float32, rows), make([]float32, rows)
		s, s2 := make([]float64, n), make([]float64, n)
		SoftmaxMoments(rows, n, x, ld, p, ld, sum, dot, s, s2)
		ws, ws2 := make([]float64, n), make([]float64, n)
		for i := 0; i < rows; i++ {
			row := x0[i*ld : i*ld+n]
			mx := math.Inf(-1)
			for _, v := range row {
				mx = math.Max(mx, float64(v))
			}
			var es float64
			for _, v := range row {
				if d := float64(v) - mx; d >= -87 {
					es += math.Exp(d)
				}
			}
			if !closeTo(float64(sum[i]), es, 4e-7*float64(n)*es) {
				t.Fatalf("rows=%d n=%d: row %d sum %g, want %g", rows, n, i, sum[i], es)
			}
			for j, v := range row {
				q := 0.0
				if d := float64(v) - mx; d >= -87 {
					q = math.Exp(d) / es
				}
				// x − max rounds to float32 (half an ulp of |d|), which e^d carries as a relative
				// error.
				got := float64(p[i*ld+j])
				d := math.Abs(float64(v) - mx)
				if !closeTo(got, q, (1e-6+4e-7*float64(n)+eps32*d)*q+1e-30) {
					t.Fatalf("rows=%d n=%d: p[%d,%d] = %g, want %g", rows, n, i, j, got, q)
				}
				ws[j] += got
				ws2[j] += got * got
			}
		}
		for j := range n {
			if !closeTo(s[j], ws[j], 1e-12*(1+ws[j])) || !closeTo(s2[j], ws2[j], 1e-12*(1+ws2[j])) {
				t.Fatalf("rows=%d n=%d: s[%d], s2[%d] = %g, %g, want %g, %g", rows, n, j, j, s[j], s2[j], ws[j], ws2[j])
			}
		}
	})
}
