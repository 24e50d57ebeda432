package kernels

import (
	"fmt"
	"math"
	"testing"
)

// The tests in this file check each dispatched kernel (assembly where the build has it) against
// its generic twin. Under the purego tag both sides are the same code and the tests pass
// trivially; the per-architecture test files force the generic path on CPUs with SIMD.

// twinSizes are lengths around every unroll and vector width the kernels use.
var twinSizes = []int{0, 1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 255, 256, 257, 1000}

// forSubslices calls f(n, off) for each length n of twinSizes and length itself, at each offset
// off of offs with off+n ≤ length.
func forSubslices(length int, offs []int, f func(n, off int)) {
	for _, n := range append(twinSizes[:len(twinSizes):len(twinSizes)], length) {
		for _, off := range offs {
			if off+n <= length {
				f(n, off)
			}
		}
	}
}

func TestDotAxpyMatchGeneric(t *testing.T) {
	r := newRand(11)
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} { // unaligned starts
			x := randSlice(r, n+off)[off:]
			y := randSlice(r, n+off+2)[off:] // y may be longer than x
			got, want := dot(x, y), dotGeneric(x, y)
			var mag float64
			for i := range x {
				mag += math.Abs(float64(x[i]) * float64(y[i]))
			}
			if !closeTo(float64(got), float64(want), 1e-5*mag+1e-30) {
				t.Errorf("dot n=%d off=%d: %g, generic %g", n, off, got, want)
			}
			y1 := append([]float32(nil), y...)
			y2 := append([]float32(nil), y...)
			axpy(0.75, x, y1)
			axpyGeneric(0.75, x, y2)
			for i := range y1 {
				tol := 0.0 // beyond len(x), y is untouched
				if i < n {
					// y + a·x rounds once with FMA and twice without: a few ulps at most.
					tol = 2 * eps32 * (math.Abs(float64(y[i])) + 0.75*math.Abs(float64(x[i])))
				}
				if !closeTo(float64(y1[i]), float64(y2[i]), tol) {
					t.Fatalf("axpy n=%d off=%d: y[%d] = %g, generic %g", n, off, i, y1[i], y2[i])
				}
			}
		}
	}
}

func TestGemmKernelMatchesGeneric(t *testing.T) {
	r := newRand(12)
	for _, kc := range []int{1, 2, 3, 7, 8, 16, 31, 64, 128, 255, 256} {
		for _, ldc := range []int{gemmNR, gemmNR + 3, 3 * gemmNR} {
			a := randSlice(r, kc*gemmMR)
			b := randSlice(r, kc*gemmNR)
			c0 := randSlice(r, (gemmMR-1)*ldc+gemmNR)
			c1 := append([]float32(nil), c0...)
			c2 := append([]float32(nil), c0...)
			gemmKernel(kc, 1.5, a, b, c1, ldc)
			gemmKernelGeneric(kc, 1.5, a, b, c2, ldc)
			checkGemmTile(t, fmt.Sprintf("kc=%d ldc=%d", kc, ldc), kc, ldc, 1.5, a, b, c0, c1, c2)
		}
	}
}

// TestF16ToF32sMatchesGeneric: the dispatched conversion (NEON, F16C) gives the generic twin's
// bits for every binary16 pattern at every length and offset, but that the hardware quiets a
// signalling NaN (sets the quiet bit, keeps sign and payload).
func TestF16ToF32sMatchesGeneric(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	forSubslices(len(src), []int{0, 1, 5}, func(n, off int) {
		s := src[off : off+n]
		got, want := make([]float32, n), make([]float32, n)
		f16ToF32s(got, s)
		f16ToF32sGeneric(want, s)
		for i := range got {
			g, w := math.Float32bits(got[i]), math.Float32bits(want[i])
			if math.IsNaN(float64(want[i])) {
				const quiet = 1 << 22
				g, w = g|quiet, w|quiet
			}
			if g != w {
				t.Fatalf("n=%d off=%d: %#04x → %#08x, generic %#08x", n, off, s[i], math.Float32bits(got[i]), math.Float32bits(want[i]))
			}
		}
	})
}

func TestPhiloxBlocksMatchGeneric(t *testing.T) {
	keys := [][2]uint32{{0, 0}, {0xffffffff, 0xffffffff}, {0x243f6a88, 0x85a308d3}}
	for _, key := range keys {
		for _, start := range []uint64{0, 1, 0xfffffffe, 1<<32 - 40, 1<<40 + 3} { // 1<<32 − 40: five groups of eight before the low word wraps
			for _, nb := range []int{1, 2, 3, 4, 5, 7, 8, 9, 12, 17, 20, 28, 32, 33, 128} {
				name := fmt.Sprintf("key=%x/start=%d/blocks=%d", key, start, nb)
				got, want := make([]uint32, 4*nb), make([]uint32, 4*nb)
				philoxBlocks(got, key, start, 7, 0xdeadbeef)
				philoxBlocksGeneric(want, key, start, 7, 0xdeadbeef)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s: word %d = %#x, generic %#x", name, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestDot4MatchesGeneric(t *testing.T) {
	r := newRand(13)
	for _, n := range twinSizes {
		for _, lda := range []int{n, n + 1, n + 7} {
			if lda == 0 {
				continue
			}
			a := randSlice(r, 3*lda+n)
			x := randSlice(r, n)
			var got, want [4]float32
			dot4(a, lda, x, &got)
			dot4Generic(a, lda, x, &want)
			for row := range got {
				mag := 0.0
				for i := 0; i < n; i++ {
					mag += math.Abs(float64(a[row*lda+i]) * float64(x[i]))
				}
				if !closeTo(float64(got[row]), float64(want[row]), 1e-5*mag+1e-30) {
					t.Fatalf("n=%d lda=%d row %d: %g, generic %g", n, lda, row, got[row], want[row])
				}
			}
		}
	}
}

func TestZigRunMatchesGeneric(t *testing.T) {
	s := NewStream(9, 8, 7)
	words := make([]uint32, 4096)
	for i := range words {
		words[i] = s.word()
	}
	// Words that stop the run or take the wedge path at every position of a group of sixteen:
	// the base layer, layer 1 (always a wedge) with a low and a high height word, a word just at
	// its layer's threshold, and one in its rectangle that only the exact test accepts (u >> 16 =
	// k >> 16, the byte-wise test of the NEON code fails it).
	for i := 0; i < 80; i++ {
		switch i % 5 {
		case 0:
			words[100+i*9] = 0x12345600 | uint32(i&1)<<7 // layer 0, outside its rectangle or not
		case 1:
			words[100+i*9], words[101+i*9] = 0xfffff001, 0 // layer 1 wedge, lowest height: accepted
		case 2:
			words[100+i*9], words[101+i*9] = 0xfffff081, 0xffffffff // highest height: rejected
		case 3:
			l := uint32(2 + i%120)
			words[100+i*9] = zig.k[l]<<8 | l
		case 4:
			l := uint32(2 + i%120)
			words[100+i*9] = zig.k[l]>>16<<24 | l | uint32(i&2)<<6
		}
	}
	forSubslices(len(words), []int{0, 1, 3, 100, 109, 125}, func(n, off int) {
		w := words[off : off+n]
		for _, m := range []int{n, n / 2, n + 3, 1} {
			got, want := make([]float32, m), make([]float32, m)
			c, p := zigRun(w, got)
			c2, p2 := zigRunGeneric(w, want)
			if c != c2 || p != p2 {
				t.Fatalf("n=%d off=%d out %d: consumed, produced %d, %d; generic %d, %d",
					n, off, m, c, p, c2, p2)
			}
			if !equal32(got[:p], want[:p]) {
				t.Fatalf("n=%d off=%d out %d: values differ from the generic twin", n, off, m)
			}
		}
	})
}

// normalRef is Stream.Normal one word at a time with the generic fast path: the reference the
// buffered, SIMD Normal must equal bit for bit.
func normalRef(s *Stream, dst []float32) {
	for i := range dst {
		w := s.word()
		var x [1]float32
		if zigFastGeneric([]uint32{w}, x[:]) == 1 {
			dst[i] = x[0]
			continue
		}
		dst[i] = float32(s.zigSlow(w))
	}
}

// TestNormalMatchesReference draws normals in calls of many lengths (with Uniform calls between
// some, which shift the words' alignment) and compares them bit for bit with normalRef.
func TestNormalMatchesReference(t *testing.T) {
	total := 300000
	if testing.Short() {
		total = 60000
	}
	for _, chunks := range [][]int{{1}, {2, 3}, {4}, {5, 7, 9}, {8}, {16, 1}, {17, 33}, {128}, {129, 3}, {1000}, {100480}} {
		for _, seed := range []uint64{1, 0xdeadbeefcafe} {
			s, r := NewStream(seed, 3, 5), NewStream(seed, 3, 5)
			got, want := make([]float32, total), make([]float32, total)
			for i, c := 0, 0; i < total; c++ {
				m := min(chunks[c%len(chunks)], total-i)
				s.Normal(got[i : i+m])
				normalRef(&r, want[i:i+m])
				if c%5 == 4 {
					var u1, u2 [3]float32
					s.Uniform(u1[:c%3+1])
					r.Uniform(u2[:c%3+1])
				}
				i += m
			}
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("chunks %v seed %#x: normal %d = %v, reference %v", chunks, seed, i, got[i], want[i])
				}
			}
		}
	}
}

// TestGemmKernelRowsMatches checks the in-place-A micro-kernel against its generic twin (up to
// rounding) and, where it is a kernel of its own, against gemmKernel on the packed panel bit for
// bit (the drivers' results must not depend on whether A was packed), also in the sign of zero:
// with lda = kc + 3, row 0 of A is −0 and row 0 of C −0, so that C[0, j] is a sum of signed zeros.
func TestGemmKernelRowsMatches(t *testing.T) {
	r := newRand(14)
	negZero := float32(math.Copysign(0, -1))
	for _, kc := range []int{1, 2, 3, 4, 5, 7, 8, 9, 16, 31, 64, 128, 255, 256} {
		for _, lda := range []int{kc, kc + 3} {
			a := randSlice(r, (gemmMR-1)*lda+kc)
			b := randSlice(r, kc*gemmNR)
			ldc := gemmNR + 2
			c0 := randSlice(r, (gemmMR-1)*ldc+gemmNR)
			if lda > kc {
				for l := 0; l < kc; l++ {
					a[l] = negZero
				}
				for j := 0; j < gemmNR; j++ {
					c0[j] = negZero
				}
			}
			c1 := append([]float32(nil), c0...)
			c2 := append([]float32(nil), c0...)
			c3 := append([]float32(nil), c0...)
			gemmKernelRows(kc, 1.25, a, lda, b, gemmNR, c1, ldc)
			gemmKernelRowsGeneric(kc, 1.25, a, lda, b, gemmNR, c2, ldc)
			// B read in place at a wider leading dimension gives the same.
			const ldb = gemmNR + 5
			bw := make([]float32, (kc-1)*ldb+gemmNR)
			for l := 0; l < kc; l++ {
				copy(bw[l*ldb:], b[l*gemmNR:(l+1)*gemmNR])
			}
			c4 := append([]float32(nil), c0...)
			gemmKernelRows(kc, 1.25, a, lda, bw, ldb, c4, ldc)
			for k := range c4 {
				if math.Float32bits(c4[k]) != math.Float32bits(c1[k]) {
					t.Fatalf("kc=%d lda=%d: c[%d] = %g with ldb %d, %g packed", kc, lda, k, c4[k], ldb, c1[k])
				}
			}
			pa := make([]float32, kc*gemmMR)
			for i := 0; i < gemmMR; i++ {
				for l := 0; l < kc; l++ {
					pa[l*gemmMR+i] = a[i*lda+l]
				}
			}
			gemmKernel(kc, 1.25, pa, b, c3, ldc)
			checkGemmTile(t, fmt.Sprintf("kc=%d lda=%d", kc, lda), kc, ldc, 1.25, pa, b, c0, c1, c2)
			for i := 0; gemmInPlaceA && i < gemmMR; i++ {
				for j := 0; j < gemmNR; j++ {
					if k := i*ldc + j; math.Float32bits(c1[k]) != math.Float32bits(c3[k]) {
						t.Fatalf("kc=%d lda=%d: c[%d,%d] = %g, packed kernel %g", kc, lda, i, j, c1[k], c3[k])
					}
				}
			}
		}
	}
}

func TestScaleMatchesGeneric(t *testing.T) {
	r := newRand(15)
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			x := randSlice(r, n+off+2)
			x1 := append([]float32(nil), x...)
			x2 := append([]float32(nil), x...)
			scale(-0.37, x1[off:off+n])
			scaleGeneric(-0.37, x2[off:off+n])
			for i := range x1 {
				if math.Float32bits(x1[i]) != math.Float32bits(x2[i]) {
					t.Fatalf("n=%d off=%d: x[%d] = %v, generic %v", n, off, i, x1[i], x2[i])
				}
			}
		}
	}
}

// TestReLUMatchesGeneric: the assembly ReLU gives the generic one's bits, with NaN, ±0 and ±Inf
// among the inputs, at every size and offset around the vector widths.
func TestReLUMatchesGeneric(t *testing.T) {
	r := newRand(16)
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1))}
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			x := randSlice(r, n+off+2)
			for i := range x {
				if r.IntN(8) == 0 {
					x[i] = special[r.IntN(len(special))]
				}
			}
			x1 := append([]float32(nil), x...)
			x2 := append([]float32(nil), x...)
			relu(x1[off : off+n])
			reluGeneric(x2[off : off+n])
			for i := range x1 {
				a, b := x1[i], x2[i]
				if a != a && b != b {
					continue
				}
				if math.Float32bits(a) != math.Float32bits(b) {
					t.Fatalf("n=%d off=%d: x[%d] = %v, generic %v (input %v)", n, off, i, a, b, x[i])
				}
			}
			for i := off; i < off+n; i++ { // and both are max(x, 0)
				if v := x[i]; v == v && x1[i] != max(v, 0) {
					t.Fatalf("n=%d: relu(%v) = %v", n, v, x1[i])
				}
			}
		}
	}
}

// TestGemmPanelRowsMatches: the panel kernel gives, bit for bit, gemmKernelRows tile by tile (on
// C cleared first when it overwrites), for panels of B packed (ldb = gemmNR) and read in place,
// leaving C's columns beyond the tiles alone; with over, C's NaNs are ignored. alpha = 1 is its own
// case (the kernels may store the tiles without multiplying).
func TestGemmPanelRowsMatches(t *testing.T) {
	r := newRand(15)
	for _, kc := range []int{1, 2, 3, 4, 5, 8, 9, 16, 31, 128, 256} {
		for _, tiles := range []int{1, 2, 3, 16} {
			for _, over := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					for _, alpha := range []float32{0.75, 1} {
						tag := fmt.Sprintf("kc=%d tiles=%d over=%v inPlace=%v alpha=%g", kc, tiles, over, inPlace, alpha)
						lda := kc + 1
						a := randSlice(r, (gemmMR-1)*lda+kc)
						ldb, bstep := gemmNR, kc*gemmNR
						if inPlace { // B is kc × (tiles·gemmNR + 3) row-major
							ldb, bstep = tiles*gemmNR+3, gemmNR
						}
						b := randSlice(r, (tiles-1)*bstep+(kc-1)*ldb+gemmNR)
						ldc := tiles*gemmNR + 2
						c0 := randSlice(r, gemmMR*ldc)
						if over {
							for i := 0; i < len(c0); i += 5 {
								c0[i] = float32(math.NaN())
							}
						}
						got := append([]float32(nil), c0...)
						want := append([]float32(nil), c0...)
						gemmPanelRows(kc, alpha, a, lda, b, ldb, bstep, got, ldc, tiles, over)
						for tl := 0; tl < tiles; tl++ {
							if over {
								for i := 0; i < gemmMR; i++ {
									clear(want[i*ldc+tl*gemmNR : i*ldc+(tl+1)*gemmNR])
								}
							}
							gemmKernelRows(kc, alpha, a, lda, b[tl*bstep:], ldb, want[tl*gemmNR:], ldc)
						}
						g2 := append([]float32(nil), c0...)
						gemmPanelRowsGeneric(kc, alpha, a, lda, b, ldb, bstep, g2, ldc, tiles, over)
						for k := range got {
							if got[k] != want[k] && !(got[k] != got[k] && want[k] != want[k]) {
								t.Fatalf("%s: c[%d] = %g, tile by tile %g", tag, k, got[k], want[k])
							}
							if !closeTo(float64(g2[k]), float64(want[k]), 1e-5*(math.Abs(float64(want[k]))+float64(kc))) &&
								!(g2[k] != g2[k] && want[k] != want[k]) {
								t.Fatalf("%s: c[%d] = %g generic, %g", tag, k, g2[k], want[k])
							}
						}
					}
				}
			}
		}
	}
}

// checkGemmTile fails t (messages prefixed by tag) unless got, C after a micro-kernel's
// C[0:gemmMR, 0:gemmNR] += alpha·A·B (A packed in pa, B packed in b, C before in c0 with leading
// dimension ldc), is unchanged outside the tile and within float32 rounding of want, the generic
// twin's result, relative to the magnitude of the terms.
func checkGemmTile(t *testing.T, tag string, kc, ldc int, alpha float64, pa, b, c0, got, want []float32) {
	t.Helper()
	for i := 0; i < gemmMR; i++ {
		for j := 0; j < ldc && i*ldc+j < len(got); j++ {
			k := i*ldc + j
			if j >= gemmNR {
				if got[k] != c0[k] {
					t.Fatalf("%s: c[%d,%d] outside the tile changed", tag, i, j)
				}
				continue
			}
			mag := math.Abs(float64(c0[k]))
			for l := 0; l < kc; l++ {
				mag += alpha * math.Abs(float64(pa[l*gemmMR+i])*float64(b[l*gemmNR+j]))
			}
			if !closeTo(float64(got[k]), float64(want[k]), 1e-5*mag) {
				t.Fatalf("%s: c[%d,%d] = %g, generic %g", tag, i, j, got[k], want[k])
			}
		}
	}
}

// TestEdgePanelsMatches: the last nr < gemmNR columns of in-place panels (edgePanels, an 8×4
// kernel of its own on arm64 for nr ≤ 4) are bit for bit rowsTile's, the sign of zero included
// (row 0 of A is −0, and so is row 0 of C), with C's other columns untouched and, with over, its
// NaNs ignored.
func TestEdgePanelsMatches(t *testing.T) {
	r := newRand(16)
	negZero := float32(math.Copysign(0, -1))
	for _, kc := range []int{1, 2, 3, 4, 5, 7, 8, 16, 31, 128} {
		for nr := 1; nr < gemmNR; nr++ {
			for _, panels := range []int{1, 3} {
				for _, over := range []bool{false, true} {
					for _, alpha := range []float32{0.75, 1} {
						tag := fmt.Sprintf("kc=%d nr=%d panels=%d over=%v alpha=%g", kc, nr, panels, over, alpha)
						lda, ldc := kc+2, nr+3
						a := randSlice(r, (panels*gemmMR-1)*lda+kc)
						b := randSlice(r, kc*gemmNR)
						c0 := randSlice(r, panels*gemmMR*ldc)
						for l := 0; l < kc; l++ {
							a[l] = negZero
						}
						for j := 0; j < nr; j++ {
							c0[j] = negZero
						}
						if over {
							for i := 1; i < len(c0); i += 4 {
								c0[i] = float32(math.NaN())
							}
						}
						got := append([]float32(nil), c0...)
						want := append([]float32(nil), c0...)
						edgePanels(kc, alpha, a, lda, b, got, ldc, nr, panels, over)
						edgePanelsGeneric(kc, alpha, a, lda, b, want, ldc, nr, panels, over)
						for k := range got {
							if math.Float32bits(got[k]) != math.Float32bits(want[k]) && !(got[k] != got[k] && want[k] != want[k]) {
								t.Fatalf("%s: c[%d] = %g, rowsTile %g", tag, k, got[k], want[k])
							}
							if k%ldc >= nr && math.Float32bits(got[k]) != math.Float32bits(c0[k]) {
								t.Fatalf("%s: c[%d] beyond the %d columns changed", tag, k, nr)
							}
						}
					}
				}
			}
		}
	}
}
