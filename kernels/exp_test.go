package kernels

import (
	"fmt"
	"math"
	"testing"
)

// expTol is ExpShift's accuracy: 3 float32 ulps relative to e^(x − shift).
const expTol = 3.0 / (1 << 23)

// TestExpShiftAccuracy checks ExpShift (assembly where the build has it) and its generic twin
// against math.Exp over exponents in [−100, 0], at the range-reduction boundaries, at 0 and
// below −87 (0), and the two sums against float64 ones (within float32 summation error).
func TestExpShiftAccuracy(t *testing.T) {
	var xs []float32
	for i := 0; i <= 200_000; i++ {
		xs = append(xs, float32(-100*float64(i)/200_000))
	}
	for k := 0; k < 126; k++ {
		h := float32((float64(k) + 0.5) * math.Ln2) // where the rounding of k flips
		xs = append(xs, -math.Nextafter32(h, 0), -h, -math.Nextafter32(h, float32(math.Inf(1))))
	}
	xs = append(xs, 0, -math.SmallestNonzeroFloat32, -87, math.Nextafter32(-87, 0), float32(math.Inf(-1)))
	for _, shift := range []float32{0, 3.5, -1e3} {
		for name, f := range map[string]func([]float32, float32) (float32, float32){"dispatched": expShift, "generic": expShiftGeneric} {
			x := make([]float32, len(xs))
			for i, v := range xs {
				x[i] = v + shift
			}
			in := append([]float32(nil), x...)
			sum, dot := f(x, shift)
			worst, s64, d64 := 0.0, 0.0, 0.0
			for i, v := range x {
				d := float64(in[i]) - float64(shift)
				if d < -87 {
					if v != 0 {
						t.Fatalf("%s shift %g: exp(%g) = %g, want 0", name, shift, d, v)
					}
					continue
				}
				want := math.Exp(d)
				s64 += want
				d64 += want * math.Max(d, -87)
				rel := math.Abs(float64(v)-want) / want
				worst = max(worst, rel)
				if !(rel < expTol) {
					t.Fatalf("%s shift %g: exp(%g) = %.9g, math.Exp %.9g (relative error %g)", name, shift, d, v, want, rel)
				}
			}
			// float32 sums of len(x) terms: within len(x)·2⁻²⁴ of the magnitudes (plus expTol).
			tol := float64(len(x))/(1<<24) + expTol
			if !closeTo(float64(sum), s64, tol*s64) || !closeTo(float64(dot), d64, tol*math.Abs(d64)) {
				t.Errorf("%s shift %g: sums %g, %g, float64 %g, %g", name, shift, sum, dot, s64, d64)
			}
			t.Logf("%s shift %g: worst relative error %.3g (%.2f ulps)", name, shift, worst, worst*(1<<23))
		}
	}
}

// TestExpShiftMatchesGeneric: the assembly ExpShift against its twin at every size and offset
// around the vector width, with NaN, −Inf and exponents below −87 among the inputs: each value
// within expTol of the twin's (both NaN together; 0 together), the sums within float32 rounding.
func TestExpShiftMatchesGeneric(t *testing.T) {
	r := newRand(21)
	special := []float32{float32(math.NaN()), float32(math.Inf(-1)), -90, -87, 0}
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			for _, withNaN := range []bool{false, true} {
				tag := fmt.Sprintf("n=%d off=%d NaN=%v", n, off, withNaN)
				x := randSlice(r, n+off+2)
				for i := range x {
					x[i] = -20 * float32(math.Abs(float64(x[i])))
					if r.IntN(8) == 0 {
						x[i] = special[r.IntN(len(special))]
						if !withNaN && x[i] != x[i] {
							x[i] = -1
						}
					}
				}
				x1 := append([]float32(nil), x...)
				x2 := append([]float32(nil), x...)
				s1, d1 := expShift(x1[off:off+n], 0.25)
				s2, d2 := expShiftGeneric(x2[off:off+n], 0.25)
				for i := range x1 {
					a, b := x1[i], x2[i]
					if i < off || i >= off+n {
						if math.Float32bits(a) != math.Float32bits(x[i]) {
							t.Fatalf("%s: x[%d] outside the slice changed", tag, i)
						}
						continue
					}
					if a != a || b != b {
						if a == a || b == b {
							t.Fatalf("%s: x[%d] = %v, generic %v (input %v)", tag, i, a, b, x[i])
						}
						continue
					}
					if !closeTo(float64(a), float64(b), expTol*float64(b)) || (a == 0) != (b == 0) {
						t.Fatalf("%s: x[%d] = %v, generic %v (input %v)", tag, i, a, b, x[i])
					}
				}
				if nan := s1 != s1; nan != (s2 != s2) || nan != (d1 != d1) || nan != (d2 != d2) {
					t.Fatalf("%s: sums %v, %v, generic %v, %v", tag, s1, d1, s2, d2)
				}
				if s1 == s1 && (!closeTo(float64(s1), float64(s2), 1e-6*float64(s2)) ||
					!closeTo(float64(d1), float64(d2), 1e-6*math.Abs(float64(d2))+1e-6*float64(s2))) {
					t.Fatalf("%s: sums %v, %v, generic %v, %v", tag, s1, d1, s2, d2)
				}
			}
		}
	}
}

// TestExpMax: ExpMax (assembly where the build has it) against its generic twin and against
// ExpShift at the maximum, on lengths with and without −Inf padding, with NaN and ±Inf among the
// values and the maximum anywhere.
func TestExpMax(t *testing.T) {
	r := newRand(23)
	ninf, inf, nan := float32(math.Inf(-1)), float32(math.Inf(1)), float32(math.NaN())
	for _, n := range twinSizes {
		for trial := 0; trial < 6; trial++ {
			x := randSlice(r, n)
			for i := range x {
				x[i] *= 30
			}
			if n > 0 {
				switch trial {
				case 1:
					x[r.IntN(n)] = nan
				case 2:
					x[r.IntN(n)] = inf
				case 3:
					x[r.IntN(n)] = ninf
				case 4: // −Inf padding to a multiple of four
					for len(x)%4 != 0 {
						x = append(x, ninf)
					}
				}
			}
			tag := fmt.Sprintf("n=%d trial=%d", len(x), trial)
			x1, x2, x3 := append([]float32(nil), x...), append([]float32(nil), x...), append([]float32(nil), x...)
			m1, s1, d1 := ExpMax(x1)
			m2, s2, d2 := expMaxGeneric(x2)
			wantMax := float32(math.Inf(-1))
			for _, v := range x {
				if v > wantMax || v != v {
					wantMax = v
				}
			}
			if math.Float32bits(m1) != math.Float32bits(m2) && !(m1 != m1 && m2 != m2) || (m1 != m1) != (wantMax != wantMax) || (m1 == m1 && m1 != wantMax) {
				t.Fatalf("%s: max %v, generic %v, want %v", tag, m1, m2, wantMax)
			}
			s3, d3 := expShift(x3, wantMax)
			for _, c := range [][2]float32{{s1, s2}, {d1, d2}, {s1, s3}, {d1, d3}} {
				if (c[0] != c[0]) != (c[1] != c[1]) || (c[0] == c[0] && !closeTo(float64(c[0]), float64(c[1]), 1e-6*(math.Abs(float64(c[1]))+float64(s2)))) {
					t.Fatalf("%s: sums %v, %v; generic %v, %v; ExpShift %v, %v", tag, s1, d1, s2, d2, s3, d3)
				}
			}
			for i := range x1 {
				if (x1[i] != x1[i]) != (x3[i] != x3[i]) || (x1[i] == x1[i] && x1[i] != x3[i]) {
					t.Fatalf("%s: x[%d] = %v, ExpShift %v", tag, i, x1[i], x3[i])
				}
			}
		}
	}
}

// TestSoftmaxMoments: SoftmaxMoments (assembly where the build has it) against float64 softmaxes
// of each row — probabilities, the two sums, and s and s2 accumulated over the rows — on row
// lengths around the vector width, padded leading dimensions, p aliasing x, rows whose values
// span more than 87 (the small probabilities are 0), and a row with NaN (NaN there only).
func TestSoftmaxMoments(t *testing.T) {
	r := newRand(41)
	for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 10, 13, 17, 33} {
		for _, rows := range []int{1, 2, 5, 9} {
			for _, alias := range []bool{false, true} {
				name := fmt.Sprintf("n=%d/rows=%d/alias=%v", n, rows, alias)
				ldx, ldp := n+3, n+1
				if alias {
					ldp = ldx
				}
				x := randSlice(r, rows*ldx)
				for i := range x {
					x[i] *= 6
				}
				if rows > 2 {
					x[2*ldx] = 120 // the rest of row 2 underflows
				}
				x0 := append([]float32(nil), x...)
				p := make([]float32, rows*ldp)
				if alias {
					p = x
				}
				sum, dot := make([]float32, rows), make([]float32, rows)
				s, s2 := randSlice64(r, n), randSlice64(r, n)
				ws, ws2 := append([]float64(nil), s...), append([]float64(nil), s2...)
				SoftmaxMoments(rows, n, x, ldx, p, ldp, sum, dot, s, s2)
				for i := 0; i < rows; i++ {
					row := x0[i*ldx : i*ldx+n]
					mx := math.Inf(-1)
					for _, v := range row {
						mx = math.Max(mx, float64(v))
					}
					var es, ed float64
					e := make([]float64, n)
					for j, v := range row {
						d := float64(v) - mx
						if d >= -87 {
							e[j] = math.Exp(d)
						}
						es += e[j]
						ed += e[j] * math.Max(d, -87)
					}
					if !closeTo(float64(sum[i]), es, 4e-7*es*float64(n)) || !closeTo(float64(dot[i]), ed, 4e-7*float64(n)*(es+1)*90) {
						t.Fatalf("%s: row %d sums %g, %g, want %g, %g", name, i, sum[i], dot[i], es, ed)
					}
					for j := range n {
						// x − max rounds to float32 (half an ulp of |d|), a relative error of e^d.
						q, d := e[j]/es, math.Abs(float64(row[j])-mx)
						if got := float64(p[i*ldp+j]); !closeTo(got, q, (1e-6+eps32*d)*q+1e-30) {
							t.Fatalf("%s: p[%d,%d] = %g, want %g", name, i, j, got, q)
						}
						ws[j] += float64(p[i*ldp+j])
						ws2[j] += float64(p[i*ldp+j]) * float64(p[i*ldp+j])
					}
				}
				for j := range n {
					if !closeTo(s[j], ws[j], 1e-12*(1+math.Abs(ws[j]))) || !closeTo(s2[j], ws2[j], 1e-12*(1+math.Abs(ws2[j]))) {
						t.Fatalf("%s: s[%d], s2[%d] = %g, %g, want %g, %g", name, j, j, s[j], s2[j], ws[j], ws2[j])
					}
				}
			}
		}
	}
	// A NaN in row 1 of 3 makes that row's values and sums NaN, and s and s2 NaN; rows 0 and 2
	// are as alone.
	for _, n := range []int{3, 6} {
		x := randSlice(r, 3*n)
		x[n+1] = float32(math.NaN())
		p := make([]float32, 3*n)
		sum, dot := make([]float32, 3), make([]float32, 3)
		s, s2 := make([]float64, n), make([]float64, n)
		SoftmaxMoments(3, n, x, n, p, n, sum, dot, s, s2)
		if !math.IsNaN(float64(sum[1])) || !math.IsNaN(float64(dot[1])) || !math.IsNaN(s[0]) || !math.IsNaN(s2[n-1]) {
			t.Errorf("n=%d: NaN row gives sums %v, %v and s[0] %v, s2[n-1] %v", n, sum[1], dot[1], s[0], s2[n-1])
		}
		for _, i := range []int{0, 2} {
			if math.IsNaN(float64(sum[i])) || math.IsNaN(float64(p[i*n])) {
				t.Errorf("n=%d: row %d is NaN", n, i)
			}
		}
	}
	// n = 0 zeroes the sums; rows = 0 does nothing.
	sum, dot := []float32{1, 2}, []float32{3, 4}
	SoftmaxMoments(2, 0, nil, 0, nil, 0, sum, dot, nil, nil)
	SoftmaxMoments(0, 5, nil, 5, nil, 5, nil, nil, make([]float64, 5), make([]float64, 5))
	if sum[0] != 0 || sum[1] != 0 || dot[0] != 0 || dot[1] != 0 {
		t.Errorf("n = 0: sums %v, %v", sum, dot)
	}
}

// TestSoftmaxMomentsMatchesGeneric: the dispatched SoftmaxMoments and its generic twin agree —
// the exponentials bit for bit, so the probabilities within the rounding of 1/Σ e, the sums to
// float32 rounding — on row lengths around every vector width, with unaligned rows.
func TestSoftmaxMomentsMatchesGeneric(t *testing.T) {
	r := newRand(42)
	for _, n := range twinSizes[1:] {
		for _, off := range []int{0, 1, 3} {
			const rows = 3
			ld := n + off
			x := randSlice(r, rows*ld+off)[off:]
			for i := range x {
				x[i] *= 10
			}
			p1, p2 := make([]float32, rows*ld), make([]float32, rows*ld)
			sm1, d1, sm2, d2 := make([]float32, rows), make([]float32, rows), make([]float32, rows), make([]float32, rows)
			s1, q1 := randSlice64(r, n), randSlice64(r, n)
			s2, q2 := append([]float64(nil), s1...), append([]float64(nil), q1...)
			softmaxMoments(rows, n, x, ld, p1, ld, sm1, d1, s1, q1)
			softmaxMomentsGeneric(rows, n, x, ld, p2, ld, sm2, d2, s2, q2)
			// Sums of n positive values in two orders differ by at most n·eps32 relative, and so do
			// the probabilities through 1/Σ e.
			rel := 2 * eps32 * float64(n)
			for i := 0; i < rows; i++ {
				if !closeTo(float64(sm1[i]), float64(sm2[i]), rel*float64(sm2[i])) || !closeTo(float64(d1[i]), float64(d2[i]), rel*90*float64(sm2[i])) {
					t.Fatalf("n=%d off=%d row %d: sums %g, %g, generic %g, %g", n, off, i, sm1[i], d1[i], sm2[i], d2[i])
				}
				for j := range n {
					if a, b := p1[i*ld+j], p2[i*ld+j]; !closeTo(float64(a), float64(b), (rel+2*eps32)*float64(b)+1e-38) {
						t.Fatalf("n=%d off=%d: p[%d,%d] = %g, generic %g", n, off, i, j, a, b)
					}
				}
			}
			for j := range n {
				if !closeTo(s1[j], s2[j], 3*(rel+2*eps32)*(1+math.Abs(s2[j]))) || !closeTo(q1[j], q2[j], 3*(rel+2*eps32)*(1+math.Abs(q2[j]))) {
					t.Fatalf("n=%d off=%d: s[%d] %g, %g, generic %g, %g", n, off, j, s1[j], q1[j], s2[j], q2[j])
				}
			}
		}
	}
}
