package kernels

import (
	"fmt"
	"math"
	"testing"
)

func TestPhiloxRowsMatchesBlocks(t *testing.T) {
	key := [2]uint32{0x243f6a88, 0x85a308d3}
	g := philoxGroup()
	for _, a := range []uint32{0, 7, 0xfffffffd} {
		for _, nb := range []int{g, 2 * g, 3 * g, 11 * g} {
			for _, rows := range []int{1, 2, 5} {
				got := make([]uint32, rows*4*nb)
				philoxRows(got, key, a, 0xdeadbeef, nb)
				for r := 0; r < rows; r++ {
					want := make([]uint32, 4*nb)
					philoxBlocksGeneric(want, key, 0, a+uint32(r), 0xdeadbeef)
					for i, w := range want {
						if v := got[r*4*nb+i]; v != w {
							t.Fatalf("a=%#x blocks=%d rows=%d: row %d word %d = %#x, want %#x", a, nb, rows, r, i, v, w)
						}
					}
				}
			}
		}
	}
}

// TestNormalRowsMatchesNormal checks NormalRows against Reset and Normal row by row, bit for bit,
// over row lengths that fit several rows, one row or no row in a Stream's buffer, gaps between
// rows (left alone), a wrapping a, and enough rows that some need Normal's slow path.
func TestNormalRowsMatchesNormal(t *testing.T) {
	cases := []struct {
		n, rows, gap int
		a            uint32
	}{
		{1, 3, 0, 0}, {3, 70, 2, 5}, {16, 9, 0, 1}, {42, 8, 0, 0}, {42, 33, 5, 0xfffffff0},
		{160, 8, 0, 32}, {160, 5, 3, 0}, {200, 3, 0, 9}, {470, 2, 1, 4}, {511, 2, 0, 0},
		{600, 3, 4, 1}, {42, 3000, 0, 100},
	}
	for _, c := range cases {
		for _, seed := range []uint64{0, 0x9e3779b97f4a7c15} {
			name := fmt.Sprintf("n=%d/rows=%d/gap=%d/a=%#x/seed=%#x", c.n, c.rows, c.gap, c.a, seed)
			ld := c.n + c.gap
			got := make([]float32, c.rows*ld)
			for i := range got {
				got[i] = -1234
			}
			var s Stream
			s.Normal(make([]float32, 37)) // a stream part-used before: NormalRows must not depend on it
			s.NormalRows(seed, c.a, 6, got, c.rows, c.n, ld)
			for r := 0; r < c.rows; r++ {
				want := make([]float32, c.n)
				ref := NewStream(seed, c.a+uint32(r), 6)
				ref.Normal(want)
				for i, w := range want {
					if v := got[r*ld+i]; math.Float32bits(v) != math.Float32bits(w) {
						t.Fatalf("%s: row %d value %d = %v, want %v", name, r, i, v, w)
					}
				}
				for i := c.n; i < ld; i++ {
					if got[r*ld+i] != -1234 {
						t.Fatalf("%s: row %d gap value %d written", name, r, i-c.n)
					}
				}
			}
			// Afterwards s is the fresh stream (seed, a+rows, 6).
			next, want := make([]float32, 5), make([]float32, 5)
			s.Normal(next)
			ref := NewStream(seed, c.a+uint32(c.rows), 6)
			ref.Normal(want)
			for i := range want {
				if math.Float32bits(next[i]) != math.Float32bits(want[i]) {
					t.Fatalf("%s: the stream afterwards gives %v, want %v", name, next, want)
				}
			}
		}
	}
}

// TestNormalRowsSlowRows checks that the last case of TestNormalRowsMatchesNormal has rows whose
// generated words the ziggurat's fast loop does not complete, so that going on through Normal is
// tested: it counts them with the generic code, independently of NormalRows.
func TestNormalRowsSlowRows(t *testing.T) {
	const n, rows = 42, 3000
	words := make([]uint32, 4*16)
	out := make([]float32, n)
	slow := 0
	for _, seed := range []uint64{0, 0x9e3779b97f4a7c15} {
		for r := 0; r < rows; r++ {
			philoxBlocksGeneric(words[:48], [2]uint32{uint32(seed), uint32(seed >> 32)}, 0, 100+uint32(r), 6)
			if _, p := zigRunGeneric(words[:48], out); p < n {
				slow++
			}
		}
	}
	if slow == 0 {
		t.Fatalf("no row of %d values in 48 words needs the slow path; going on through Normal is untested", n)
	}
	t.Logf("%d of %d rows go on through Normal", slow, 2*rows)
}

// TestZigRowsMatchesGeneric: zigRows (one NEON call for all rows on arm64) returns what
// zigRowsGeneric does, the row it stops at and that row's consumed and produced counts, and
// writes the same values into the rows before it and into that row's produced values; rows of
// words cut short (nw below what n values need) and rows with base-layer words stop it.
func TestZigRowsMatchesGeneric(t *testing.T) {
	key := [2]uint32{0x243f6a88, 0x85a308d3}
	stops := 0
	for _, c := range []struct{ n, nb, rows, gap int }{
		{42, 12, 40, 0}, {42, 12, 40, 3}, {16, 4, 30, 1}, {160, 44, 6, 0}, {47, 12, 10, 0}, {5, 4, 64, 2},
	} {
		nw, ld := 4*c.nb, c.n+c.gap
		words := make([]uint32, c.rows*nw)
		for a := uint32(0); a < 200; a++ {
			philoxRowsGeneric(words, key, a*uint32(c.rows), 9, c.nb)
			got, want := make([]float32, c.rows*ld), make([]float32, c.rows*ld)
			for r := 0; r < c.rows; {
				k, cg, pg := zigRows(words[r*nw:], nw, got[r*ld:], ld, c.n)
				kw, cw, pw := zigRowsGeneric(words[r*nw:], nw, want[r*ld:], ld, c.n)
				if k != kw || cg != cw || pg != pw {
					t.Fatalf("n=%d nw=%d a=%d from row %d: (row, consumed, produced) = (%d, %d, %d), generic (%d, %d, %d)",
						c.n, nw, a, r, k, cg, pg, kw, cw, pw)
				}
				end := (r+k)*ld + pg
				if r+k == c.rows {
					end = len(got)
				} else {
					stops++
				}
				for i := r * ld; i < end; i++ {
					if i%ld < c.n && math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("n=%d nw=%d a=%d: value %d = %v, generic %v", c.n, nw, a, i, got[i], want[i])
					}
				}
				r += k + 1
			}
		}
	}
	if stops == 0 {
		t.Fatal("no row stopped a run; the stops are untested")
	}
}
