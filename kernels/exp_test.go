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
