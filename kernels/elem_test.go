package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestElementwiseMatchGeneric: MulAddRows (one row), Mul and SqrtPos (assembly where the build has it) against
// their generic twins at every size and offset around the vector width, with NaN, ±0 and ±Inf
// among the inputs, aliasing dst with an operand, and leaving the values beyond dst alone: Mul
// and SqrtPos bit for bit (both NaN together), MulAdd within one rounding of the product (fused
// or not), all against float64 values.
func TestElementwiseMatchGeneric(t *testing.T) {
	r := newRand(22)
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), -1e-30}
	gen := func(n int) []float32 {
		x := randSlice(r, n)
		for i := range x {
			if r.IntN(8) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		return x
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			for _, alias := range []bool{false, true} {
				tag := fmt.Sprintf("n=%d off=%d alias=%v", n, off, alias)
				a, x, y := gen(n+off), gen(n+off), gen(n+off)
				d0 := gen(n + off + 2)
				// MulAdd: dst = a + x·y, dst the same slice as a when alias.
				d1, d2 := append([]float32(nil), d0...), append([]float32(nil), d0...)
				a1, a2 := a[off:], a[off:]
				if alias {
					copy(d1[off:], a[off:])
					copy(d2[off:], a[off:])
					a1, a2 = d1[off:], d2[off:]
				}
				MulAddRows(1, n, a1, 0, x[off:], 0, y[off:], 0, d1[off:], 0)
				mulAddRowsGeneric(1, n, a2, 0, x[off:], 0, y[off:], 0, d2[off:], 0)
				for i := range d1 {
					if i < off || i >= off+n {
						if !same(d1[i], d0[i]) && !(alias && i >= off && i < off+n) {
							t.Fatalf("MulAddRows %s: dst[%d] beyond n changed", tag, i)
						}
						continue
					}
					av, xv, yv := float64(a[i]), float64(x[i]), float64(y[i])
					want := av + xv*yv
					tol := (math.Abs(av) + math.Abs(xv*yv)) / (1 << 23)
					for _, v := range []float32{d1[i], d2[i]} {
						if want != want || math.IsInf(want, 0) || math.Abs(want) > math.MaxFloat32 {
							if !same(d1[i], d2[i]) && !(math.Abs(want) > math.MaxFloat32 && math.IsInf(float64(v), 0)) {
								t.Fatalf("MulAddRows %s: dst[%d] = %v, generic %v (a %v, x %v, y %v)", tag, i, d1[i], d2[i], a[i], x[i], y[i])
							}
							continue
						}
						if !closeTo(float64(v), want, tol+1e-38) {
							t.Fatalf("MulAddRows %s: dst[%d] = %v (generic %v), want %v", tag, i, d1[i], d2[i], want)
						}
					}
				}
				// Mul: dst = x·y, dst the same slice as x when alias.
				m1, m2 := append([]float32(nil), d0...), append([]float32(nil), d0...)
				x1, x2 := x[off:], x[off:]
				if alias {
					copy(m1[off:], x[off:])
					copy(m2[off:], x[off:])
					x1, x2 = m1[off:], m2[off:]
				}
				Mul(m1[off:off+n], x1, y[off:])
				mulGeneric(m2[off:off+n], x2, y[off:])
				for i := range m1 {
					if !same(m1[i], m2[i]) {
						t.Fatalf("Mul %s: dst[%d] = %v, generic %v", tag, i, m1[i], m2[i])
					}
					if i >= off && i < off+n && !same(m1[i], x[i]*y[i]) {
						t.Fatalf("Mul %s: dst[%d] = %v, want %v·%v", tag, i, m1[i], x[i], y[i])
					}
				}
				// SqrtPos in place.
				s1, s2 := append([]float32(nil), d0...), append([]float32(nil), d0...)
				SqrtPos(s1[off : off+n])
				sqrtPosGeneric(s2[off : off+n])
				for i := range s1 {
					if !same(s1[i], s2[i]) {
						t.Fatalf("SqrtPos %s: x[%d] = %v, generic %v (input %v)", tag, i, s1[i], s2[i], d0[i])
					}
					if v := d0[i]; i >= off && i < off+n && v == v && s1[i] != float32(math.Sqrt(math.Max(float64(v), 0))) {
						t.Fatalf("SqrtPos %s: √max(%v, 0) = %v", tag, v, s1[i])
					}
				}
			}
		}
	}
}

// TestAxpyRowsMatchesAxpy: AxpyRows gives, bit for bit, Axpy row by row (with NaN and ±Inf among
// the values), for row lengths around the vector widths, one alpha or one x row for every row
// (astep, ldx = 0), leaving the values between and after the rows alone; and its generic twin the
// same.
func TestAxpyRowsMatchesAxpy(t *testing.T) {
	r := newRand(24)
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
	for _, n := range twinSizes {
		for _, rows := range []int{1, 2, 3, 8} {
			for _, st := range [][2]int{{1, n + 3}, {0, n + 1}, {1, 0}, {0, 0}} {
				astep, ldx := st[0], st[1]
				tag := fmt.Sprintf("n=%d rows=%d astep=%d ldx=%d", n, rows, astep, ldx)
				ldy := n + 2
				alpha := randSlice(r, rows)
				x := randSlice(r, (rows-1)*ldx+n+1)
				if n > 0 {
					x[r.IntN(len(x))] = float32(math.NaN())
					x[r.IntN(len(x))] = float32(math.Inf(1))
				}
				y0 := randSlice(r, rows*ldy+1)
				got, gen, want := append([]float32(nil), y0...), append([]float32(nil), y0...), append([]float32(nil), y0...)
				AxpyRows(rows, n, alpha, astep, x, ldx, got, ldy)
				if n > 0 {
					axpyRowsGeneric(rows, n, alpha, astep, x, ldx, gen, ldy)
				}
				for i := 0; i < rows; i++ {
					Axpy(alpha[i*astep], x[i*ldx:i*ldx+n], want[i*ldy:i*ldy+n])
				}
				for i := range got {
					if !same(got[i], want[i]) || !same(gen[i], want[i]) {
						t.Fatalf("%s: y[%d] = %v (generic %v), Axpy row by row %v", tag, i, got[i], gen[i], want[i])
					}
				}
			}
		}
	}
}

// TestMulAddRows: several rows at once give, bit for bit, one call per row (strides, one row of
// an operand for every row, dst the same rows as a), leaving the values between the rows alone.
func TestMulAddRows(t *testing.T) {
	r := newRand(25)
	for _, n := range []int{1, 3, 4, 5, 10, 16, 17, 24} {
		for _, rows := range []int{1, 2, 8} {
			for _, ld := range [][3]int{{n + 1, n + 2, n}, {0, n + 3, 0}, {n, 0, n + 5}} {
				for _, inPlace := range []bool{false, true} {
					tag := fmt.Sprintf("n=%d rows=%d ld=%v inPlace=%v", n, rows, ld, inPlace)
					lda, ldx, ldy, ldd := ld[0], ld[1], ld[2], n+3
					a := randSlice(r, (rows-1)*lda+n)
					x := randSlice(r, (rows-1)*ldx+n)
					y := randSlice(r, (rows-1)*ldy+n)
					d0 := randSlice(r, rows*ldd)
					got, want := append([]float32(nil), d0...), append([]float32(nil), d0...)
					ga, wa, gld := a, a, lda
					if inPlace { // dst's rows hold a's values first
						for i := 0; i < rows; i++ {
							copy(got[i*ldd:i*ldd+n], a[i*lda:i*lda+n])
							copy(want[i*ldd:i*ldd+n], a[i*lda:i*lda+n])
						}
						ga, wa, gld = got, want, ldd
					}
					MulAddRows(rows, n, ga, gld, x, ldx, y, ldy, got, ldd)
					for i := 0; i < rows; i++ {
						MulAddRows(1, n, wa[i*gld:], 0, x[i*ldx:], 0, y[i*ldy:], 0, want[i*ldd:], 0)
					}
					for i := range got {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s: dst[%d] = %v, row by row %v", tag, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}

// TestAccumulateMoments: AccumulateMoments (assembly where the build has it) gives, bit for bit,
// the plain float64 loop — its generic twin and a loop written here — at every size and offset
// around the vector width, with NaN and ±Inf among the values, leaving the sums beyond len(x)
// alone.
func TestAccumulateMoments(t *testing.T) {
	r := newRand(26)
	same := func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b) }
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			tag := fmt.Sprintf("n=%d off=%d", n, off)
			x := randSlice(r, n+off)
			if n > 1 {
				x[off+r.IntN(n)] = float32(math.NaN())
				x[off+r.IntN(n)] = float32(math.Inf(-1))
			}
			s0, q0 := randSlice64(r, n+off+2), randSlice64(r, n+off+2)
			x1, s1, q1 := append([]float32(nil), x...), append([]float64(nil), s0...), append([]float64(nil), q0...)
			x2, s2, q2 := append([]float32(nil), x...), append([]float64(nil), s0...), append([]float64(nil), q0...)
			AccumulateMoments(x1[off:off+n], 0.37, s1[off:], q1[off:])
			accMomentsGeneric(x2[off:off+n], 0.37, s2[off:], q2[off:])
			for i := range s0 {
				want, want2 := s0[i], q0[i]
				if i >= off && i < off+n {
					v := float64(x[i] * 0.37)
					want, want2 = want+v, want2+v*v
					if math.Float32bits(x1[i]) != math.Float32bits(x[i]*0.37) && !(x1[i] != x1[i]) {
						t.Fatalf("%s: x[%d] = %v, want %v", tag, i, x1[i], x[i]*0.37)
					}
				}
				if !same(s1[i], want) || !same(q1[i], want2) || !same(s2[i], want) || !same(q2[i], want2) {
					t.Fatalf("%s: s[%d], s2[%d] = %v, %v (generic %v, %v), want %v, %v", tag, i, i, s1[i], q1[i], s2[i], q2[i], want, want2)
				}
			}
		}
	}
}
