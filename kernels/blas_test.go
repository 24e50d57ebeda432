package kernels

import (
	"fmt"
	"math"
	"testing"
)

// opAt returns op(M)[i][j] for a row-major matrix m with leading dimension ld.
func opAt(m []float32, ld int, trans bool, i, j int) float64 {
	if trans {
		return float64(m[j*ld+i])
	}
	return float64(m[i*ld+j])
}

// TestGemm: Gemm (assembly micro-kernels, blocking) and GemmRef (plain loops, any element
// type) against float64 sums, every transpose, alpha, beta (0 ignores a NaN C), padded leading
// dimensions (left untouched).
func TestGemm(t *testing.T) {
	impls := []struct {
		name string
		f    func(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int)
	}{{"Gemm", Gemm}, {"GemmRef", GemmRef[float32]}}
	shapes := [][3]int{
		{1, 1, 1}, {1, 7, 3}, {5, 1, 9}, {3, 5, 1}, {4, 8, 16}, {7, 9, 11}, {16, 16, 16},
		{17, 13, 29}, {20, 20, 20}, {21, 21, 21}, {1, 300, 200}, {33, 65, 31}, {31, 70, 129}, {40, 90, 200},
		{70, 150, 300}, // larger than every block size (MC=64, NC=128, KC=256)
	}
	if !testing.Short() {
		shapes = append(shapes, [3]int{129, 257, 513})
	}
	r := newRand(1)
	for _, impl := range impls {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, transA := range []bool{false, true} {
				for _, transB := range []bool{false, true} {
					for _, beta := range []float32{0, 1, -0.7} {
						for _, pad := range []int{0, 3} {
							alpha := float32(1.25)
							name := fmt.Sprintf("%s_m%d_n%d_k%d_tA%v_tB%v_beta%v_pad%d", impl.name, m, n, k, transA, transB, beta, pad)
							ar, ac := opShape(m, k, transA)
							br, bc := opShape(k, n, transB)
							lda, ldb, ldc := ac+pad, bc+2*pad, n+pad
							a := randSlice(r, ar*lda)
							b := randSlice(r, br*ldb)
							c := randSlice(r, m*ldc)
							if beta == 0 {
								for i := range c {
									c[i] = float32(math.NaN())
								}
							}
							c0 := append([]float32(nil), c...)
							impl.f(transA, transB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
							for i := 0; i < m; i++ {
								for j := 0; j < ldc; j++ {
									if j >= n {
										if math.Float32bits(c[i*ldc+j]) != math.Float32bits(c0[i*ldc+j]) {
											t.Fatalf("%s: C[%d,%d] outside the m×n block was modified", name, i, j)
										}
										continue
									}
									var want, mag float64
									for l := 0; l < k; l++ {
										p := opAt(a, lda, transA, i, l) * opAt(b, ldb, transB, l, j)
										want += p
										mag += math.Abs(p)
									}
									want *= float64(alpha)
									mag *= math.Abs(float64(alpha))
									if beta != 0 {
										want += float64(beta) * float64(c0[i*ldc+j])
										mag += math.Abs(float64(beta) * float64(c0[i*ldc+j]))
									}
									tol := 2*float64(k+2)*eps32*mag + 1e-30
									if got := float64(c[i*ldc+j]); !closeTo(got, want, tol) {
										t.Fatalf("%s: C[%d,%d] = %g, want %g (tol %g)", name, i, j, got, want, tol)
									}
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestGemmRowBlock: C computed in GemmRowBlock's blocks of rows (the last taking the rest),
// one Gemm call each on a copy of the block's rows at another address, equals one Gemm call
// bit for bit — shapes of every driver (tiny, in place, medium, large; depths beyond gemmKC,
// few and many columns); the shapes with a block must get one.
func TestGemmRowBlock(t *testing.T) {
	r := newRand(9)
	for _, s := range []struct {
		m, n, k int
		block   bool
	}{
		{2*gemmMC - 1, 50, 300, false}, {2 * gemmMC, 1, 10, false}, {2 * gemmMC, 16, 40, true},
		{2 * gemmMC, 16, 577, true}, {2*gemmMC + 5, 7, 40, true}, {300, 256, 288, true},
		{3*gemmMC + gemmMR + 1, 130, 600, true}, {512, 16, 1152, true}, {4 * gemmMC, 40, 100, true},
		{1000, 1, 1, false},
	} {
		b := GemmRowBlock(s.m, s.n, s.k)
		if (b > 0) != s.block {
			t.Fatalf("m=%d n=%d k=%d: block %d", s.m, s.n, s.k, b)
		}
		if b == 0 {
			continue
		}
		a, bm := randSlice(r, s.m*s.k), randSlice(r, s.k*s.n)
		whole := make([]float32, s.m*s.n)
		Gemm(false, false, s.m, s.n, s.k, 1, a, s.k, bm, s.n, 0, whole, s.n)
		got := make([]float32, s.m*s.n)
		rows := make([]float32, (2*b-1)*s.k+1) // one value in: another alignment than a's
		for r0 := 0; r0 < s.m; {
			r1 := r0 + b
			if s.m-r1 < b {
				r1 = s.m
			}
			blk := rows[1 : 1+(r1-r0)*s.k]
			copy(blk, a[r0*s.k:r1*s.k])
			Gemm(false, false, r1-r0, s.n, s.k, 1, blk, s.k, bm, s.n, 0, got[r0*s.n:r1*s.n], s.n)
			r0 = r1
		}
		for i := range whole {
			if math.Float32bits(got[i]) != math.Float32bits(whole[i]) {
				t.Fatalf("m=%d n=%d k=%d, blocks of %d: C[%d,%d] = %v, in one call %v", s.m, s.n, s.k, b, i/s.n, i%s.n, got[i], whole[i])
			}
		}
	}
}

// TestGemmColBlock: C computed in blocks of GemmColBlock's b and 2b columns (the last taking the rest) is
// C computed in one call, to the bit, for shapes around every tier's bounds, both transposes and
// beta 0 and 1; and the shapes GemmColBlock must refuse (a row, tiny products, narrow C) get 0.
func TestGemmColBlock(t *testing.T) {
	r := newRand(10)
	blocked := 0
	for _, m := range []int{1, 2, 5, gemmMCSmall, gemmMCSmall + 1, 64, 100} {
		for _, n := range []int{gemmNCSmall, 2*gemmNCSmall - 1, 129, 2 * gemmNC, 300, 700} {
			for _, k := range []int{1, 9, gemmKCSmall, gemmKCSmall + 1, 300} {
				for tr := range 4 {
					transA, transB := tr&1 != 0, tr&2 != 0
					b := GemmColBlock(transA, transB, m, n, k)
					if b == 0 {
						continue
					}
					if m == 1 && !transA || n < 2*b || m*n <= gemmTinyFlops/k {
						t.Fatalf("transA=%v transB=%v m=%d n=%d k=%d: block %d", transA, transB, m, n, k, b)
					}
					blocked++
					a, bm := randSlice(r, m*k), randSlice(r, k*n)
					lda, ldb := k, n
					if transA {
						lda = m
					}
					if transB {
						ldb = k
					}
					for _, beta := range []float32{0, 1} {
						c0 := randSlice(r, m*n)
						whole := append([]float32(nil), c0...)
						Gemm(transA, transB, m, n, k, 1.5, a, lda, bm, ldb, beta, whole, n)
						got := append([]float32(nil), c0...)
						for j0, nb := 0, 1; j0 < n; nb = 3 - nb { // blocks of b, 2b, b, … columns
							j1 := j0 + nb*b
							if n-j1 < b {
								j1 = n
							}
							bo := j0 // op(B)'s column j0: B's column, or B's row when transposed
							if transB {
								bo = j0 * ldb
							}
							Gemm(transA, transB, m, j1-j0, k, 1.5, a, lda, bm[bo:], ldb, beta, got[j0:], n)
							j0 = j1
						}
						for i := range whole {
							if math.Float32bits(got[i]) != math.Float32bits(whole[i]) {
								t.Fatalf("transA=%v transB=%v m=%d n=%d k=%d beta=%v, blocks of %d: C[%d,%d] = %v, in one call %v",
									transA, transB, m, n, k, beta, b, i/n, i%n, got[i], whole[i])
							}
						}
					}
				}
			}
		}
	}
	if blocked < 100 {
		t.Fatalf("only %d shapes were split", blocked)
	}
	for _, s := range []struct {
		transA  bool
		m, n, k int
	}{{false, 1, 1000, 100}, {false, 64, 2*gemmNC - 1, 300}, {false, 2, 300, 1}, {false, 100, gemmNCSmall, 300}, {true, 0, 300, 300}} {
		if b := GemmColBlock(s.transA, false, s.m, s.n, s.k); b != 0 {
			t.Errorf("transA=%v m=%d n=%d k=%d: block %d, want 0", s.transA, s.m, s.n, s.k, b)
		}
	}
}

func TestGemmDegenerate(t *testing.T) {
	// k == 0 and alpha == 0 only scale C; m == 0 or n == 0 touch nothing.
	c := []float32{1, 2, float32(math.NaN()), 4}
	Gemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 3, c, 2)
	if c[0] != 3 || c[1] != 6 || !math.IsNaN(float64(c[2])) || c[3] != 12 {
		t.Fatalf("k=0, beta=3: got %v", c)
	}
	Gemm(false, false, 2, 2, 0, 1, nil, 1, nil, 2, 0, c, 2)
	for i, v := range c {
		if v != 0 {
			t.Fatalf("k=0, beta=0: C[%d] = %g, want 0", i, v)
		}
	}
	a := []float32{1, 2, 3, 4}
	c = []float32{1, 1, 1, 1}
	Gemm(false, false, 2, 2, 2, 0, a, 2, a, 2, 1, c, 2)
	for i, v := range c {
		if v != 1 {
			t.Fatalf("alpha=0, beta=1: C[%d] = %g, want 1", i, v)
		}
	}
	Gemm(false, false, 0, 5, 3, 1, nil, 3, make([]float32, 15), 5, 0, nil, 5)
}

func TestGemmPanicsOnBadSizes(t *testing.T) {
	cases := []struct {
		name string
		f    func()
	}{
		{"short a", func() {
			Gemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"small lda", func() {
			Gemm(false, false, 2, 2, 2, 1, make([]float32, 4), 1, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}},
		{"short c", func() {
			Gemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}},
		{"negative", func() { Gemm(false, false, -1, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2) }},
		{"gemv short x", func() { Gemv(false, 2, 3, 1, make([]float32, 6), 3, make([]float32, 2), 0, make([]float32, 2)) }},
		{"dot", func() { Dot(make([]float32, 2), make([]float32, 3)) }},
		{"axpy", func() { Axpy(1, make([]float32, 2), make([]float32, 3)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.f()
		})
	}
}

func TestGemv(t *testing.T) {
	r := newRand(2)
	for _, s := range [][2]int{{1, 1}, {1, 9}, {9, 1}, {3, 5}, {4, 8}, {7, 13}, {33, 65}, {130, 257}} {
		m, n := s[0], s[1]
		for _, trans := range []bool{false, true} {
			for _, beta := range []float32{0, 1, 0.3} {
				for _, pad := range []int{0, 5} {
					name := fmt.Sprintf("m%d_n%d_t%v_beta%v_pad%d", m, n, trans, beta, pad)
					lda := n + pad
					a := randSlice(r, m*lda)
					lx, ly := n, m
					if trans {
						lx, ly = m, n
					}
					x := randSlice(r, lx)
					y := randSlice(r, ly)
					if beta == 0 {
						y = fill(ly, float32(math.NaN()))
					}
					y0 := append([]float32(nil), y...)
					alpha := float32(-0.8)
					Gemv(trans, m, n, alpha, a, lda, x, beta, y)
					for i := 0; i < ly; i++ {
						var want, mag float64
						for j := 0; j < lx; j++ {
							p := opAt(a, lda, trans, i, j) * float64(x[j])
							want += p
							mag += math.Abs(p)
						}
						want *= float64(alpha)
						mag *= math.Abs(float64(alpha))
						if beta != 0 {
							want += float64(beta) * float64(y0[i])
							mag += math.Abs(float64(beta) * float64(y0[i]))
						}
						tol := 2*float64(lx+2)*eps32*mag + 1e-30
						if got := float64(y[i]); !closeTo(got, want, tol) {
							t.Fatalf("%s: y[%d] = %g, want %g", name, i, got, want)
						}
					}
				}
			}
		}
	}
}

func TestDotAxpyScale(t *testing.T) {
	r := newRand(3)
	for _, n := range []int{0, 1, 3, 7, 8, 9, 16, 31, 100, 1001} {
		x, y := randSlice(r, n), randSlice(r, n)
		var want, mag float64
		for i := range x {
			want += float64(x[i]) * float64(y[i])
			mag += math.Abs(float64(x[i]) * float64(y[i]))
		}
		if got := Dot(x, y); !closeTo(float64(got), want, 2*float64(n+1)*eps32*mag) {
			t.Errorf("Dot n=%d: got %g, want %g", n, got, want)
		}
		y0 := append([]float32(nil), y...)
		Axpy(-1.5, x, y)
		for i := range y {
			w := float64(y0[i]) - 1.5*float64(x[i])
			if !closeTo(float64(y[i]), w, 4*eps32*(math.Abs(float64(y0[i]))+1.5*math.Abs(float64(x[i])))) {
				t.Fatalf("Axpy n=%d: y[%d] = %g, want %g", n, i, y[i], w)
			}
		}
		x0 := append([]float32(nil), x...)
		Scale(0.25, x)
		for i := range x {
			if x[i] != x0[i]*0.25 {
				t.Fatalf("Scale n=%d: x[%d] = %g, want %g", n, i, x[i], x0[i]*0.25)
			}
		}
	}
}

func TestNoAllocations(t *testing.T) {
	r := newRand(4)
	const n = 300
	a, b, c := randSlice(r, n*n), randSlice(r, n*n), make([]float32, n*n)
	x, y := randSlice(r, n), make([]float32, n)
	s := NewStream(1, 2, 3)
	z := make([]float32, 1000)
	cases := map[string]func(){
		"Gemm large":  func() { Gemm(false, true, n, n, n, 1, a, n, b, n, 0, c, n) },
		"Gemm medium": func() { Gemm(true, false, 20, n, n, 1, a, 20, b, n, 1, c, n) },
		"Gemm tiny":   func() { Gemm(false, false, 4, 4, 4, 1, a, 4, b, 4, 1, c, 4) },
		"Gemv":        func() { Gemv(false, n, n, 1, a, n, x, 0, y) },
		"GemvT":       func() { Gemv(true, n, n, 1, a, n, x, 0, y) },
		"Normal":      func() { s.Normal(z) },
		"Softmax":     func() { Softmax(z, z) },
	}
	for name, f := range cases {
		if allocs := testing.AllocsPerRun(3, f); allocs != 0 {
			t.Errorf("%s: %v allocations per call, want 0", name, allocs)
		}
	}
}

// TestConcurrentUse runs Gemm and Streams from several goroutines on disjoint outputs (run with
// -race) and checks the results equal the sequential ones: the package has no shared mutable
// state.
func TestConcurrentUse(t *testing.T) {
	const workers, n = 4, 80
	r := newRand(9)
	a, b := randSlice(r, n*n), randSlice(r, n*n)
	want := make([]float32, n*n)
	Gemm(false, true, n, n, n, 1, a, n, b, n, 0, want, n)
	wantZ := make([][]float32, workers)
	for w := range wantZ {
		s := NewStream(5, uint32(w), 1)
		wantZ[w] = make([]float32, 999)
		s.Normal(wantZ[w])
	}
	done := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func() {
			c := make([]float32, n*n)
			Gemm(false, true, n, n, n, 1, a, n, b, n, 0, c, n)
			if !equal32(c, want) {
				done <- fmt.Errorf("worker %d: Gemm result differs", w)
				return
			}
			s := NewStream(5, uint32(w), 1)
			z := make([]float32, 999)
			s.Normal(z)
			if !equal32(z, wantZ[w]) {
				done <- fmt.Errorf("worker %d: stream differs", w)
				return
			}
			done <- nil
		}()
	}
	for w := 0; w < workers; w++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestDotRows: DotRows gives, bit for bit, Dot of each row pair (which TestDot checks against
// float64 sums), at row lengths around every unroll, padded leading dimensions and output
// strides, leaving the values between the outputs alone; n = 0 gives zeros.
func TestDotRows(t *testing.T) {
	r := newRand(51)
	for _, n := range twinSizes {
		for _, rows := range []int{1, 3, 7} {
			for _, inc := range []int{1, 3} {
				ldx, ldy := n+1, n+5
				x, y := randSlice(r, rows*ldx), randSlice(r, rows*ldy)
				out := randSlice(r, (rows-1)*inc+1)
				out0 := append([]float32(nil), out...)
				DotRows(rows, n, x, ldx, y, ldy, out, inc)
				for i := range out {
					want := out0[i]
					if i%inc == 0 {
						row := i / inc
						want = Dot(x[row*ldx:row*ldx+n], y[row*ldy:row*ldy+n])
					}
					if math.Float32bits(out[i]) != math.Float32bits(want) {
						t.Fatalf("n=%d rows=%d inc=%d: out[%d] = %v, want %v", n, rows, inc, i, out[i], want)
					}
				}
			}
		}
	}
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"short out", func() { DotRows(3, 2, make([]float32, 6), 2, make([]float32, 6), 2, make([]float32, 4), 2) }},
		{"incOut 0", func() { DotRows(1, 2, make([]float32, 2), 2, make([]float32, 2), 2, make([]float32, 1), 0) }},
		{"short y", func() { DotRows(2, 3, make([]float32, 6), 3, make([]float32, 5), 3, make([]float32, 2), 1) }},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", c.name)
				}
			}()
			c.f()
		}()
	}
}
