//go:build !purego

package kernels

import (
	"fmt"
	"math"
	"testing"
)

// TestGenericPathOnAVX2: with useAVX2 cleared, Gemm, Dot and Axpy run the generic twins on a CPU
// that has AVX2, and agree with the assembly path to float32 rounding.
func TestGenericPathOnAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2+FMA: the generic path is the only one")
	}
	gemm, k := gemmDispatchCase(21)
	r := newRand(121)
	x, y := randSlice(r, 1003), randSlice(r, 1003)
	run := func() (c []float32, d float32, z []float32) {
		z = append([]float32(nil), y...)
		Axpy(0.5, x, z)
		return gemm(), Dot(x, y), z
	}
	cAsm, dAsm, zAsm := run()
	useAVX2 = false
	defer func() { useAVX2 = true }()
	cGen, dGen, zGen := run()
	checkGemmPaths(t, "AVX2", k, cAsm, cGen)
	if !(math.Abs(float64(dAsm-dGen)) <= 1e-5*1003) {
		t.Errorf("Dot: AVX2 %g, generic %g", dAsm, dGen)
	}
	for i := range zAsm {
		if !closeTo(float64(zAsm[i]), float64(zGen[i]), 4*eps32) {
			t.Fatalf("Axpy y[%d]: AVX2 %g, generic %g", i, zAsm[i], zGen[i])
		}
	}
}

// TestElementwiseAVX2BitIdentical: ReLU, SqrtPos, Mul, MulAddRows (several rows, strides 0 and
// not) and the values of ExpShift and ExpMax give the generic twins' bits (NaN for NaN) at every
// size and offset around the 16-, 8- and 1-value steps, with NaN, ±0, ±Inf and tiny values among
// the inputs; their sums agree within float32 rounding.
func TestElementwiseAVX2BitIdentical(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2+FMA")
	}
	fused := genericFMA
	if fused {
		t.Log("the generic twins use FMA (GOAMD64=v3): MulAddRows and ExpShift not compared bit for bit")
	}
	r := newRand(41)
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1)), -1e-30, 1e-40}
	gen := func(n int, scale float32) []float32 {
		x := randSlice(r, n)
		for i := range x {
			x[i] *= scale
			if r.IntN(8) == 0 {
				x[i] = special[r.IntN(len(special))]
			}
		}
		return x
	}
	same := func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b) }
	check := func(tag string, got, want []float32) {
		t.Helper()
		for i := range got {
			if !same(got[i], want[i]) {
				t.Fatalf("%s: [%d] = %v (%#x), generic %v (%#x)", tag, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
			}
		}
	}
	sumsClose := func(tag string, s1, d1, s2, d2 float32) {
		t.Helper()
		if (s1 != s1) != (s2 != s2) || (d1 != d1) != (d2 != d2) ||
			s1 == s1 && !closeTo(float64(s1), float64(s2), 1e-5*math.Abs(float64(s2))) ||
			d1 == d1 && !closeTo(float64(d1), float64(d2), 1e-5*(math.Abs(float64(d2))+float64(s2))) {
			t.Fatalf("%s: sums %v, %v, generic %v, %v", tag, s1, d1, s2, d2)
		}
	}
	for _, n := range twinSizes {
		for _, off := range []int{0, 1, 3} {
			tag := fmt.Sprintf("n=%d off=%d", n, off)
			x0 := gen(n+off+2, 4)
			x1, x2 := append([]float32(nil), x0...), append([]float32(nil), x0...)
			relu(x1[off : off+n])
			reluGeneric(x2[off : off+n])
			check("ReLU "+tag, x1, x2)
			x1, x2 = append([]float32(nil), x0...), append([]float32(nil), x0...)
			sqrtPos(x1[off : off+n])
			sqrtPosGeneric(x2[off : off+n])
			check("SqrtPos "+tag, x1, x2)
			if n > 0 {
				y := gen(n+off, 4)
				x1, x2 = append([]float32(nil), x0...), append([]float32(nil), x0...)
				mul(x1[off:off+n], x0[off:], y[off:])
				mulGeneric(x2[off:off+n], x0[off:], y[off:])
				check("Mul "+tag, x1, x2)
			}
			// ExpShift at a shift above every finite value; ExpMax on values without NaN or +Inf
			// (whose results are all NaN) and, separately, on special values.
			e0 := gen(n+off+2, 20)
			for i := range e0 {
				if e0[i] > 0 || e0[i] != e0[i] {
					e0[i] = -e0[i] - 50
				}
			}
			x1, x2 = append([]float32(nil), e0...), append([]float32(nil), e0...)
			s1, d1 := expShift(x1[off:off+n], 0.5)
			s2, d2 := expShiftGeneric(x2[off:off+n], 0.5)
			if !fused {
				check("ExpShift "+tag, x1, x2)
			}
			sumsClose("ExpShift "+tag, s1, d1, s2, d2)
			for _, src := range [][]float32{e0, x0} {
				x1, x2 = append([]float32(nil), src...), append([]float32(nil), src...)
				m1, s1, d1 := expMax(x1[off : off+n])
				m2, s2, d2 := expMaxGeneric(x2[off : off+n])
				if !same(m1, m2) && !(m1 == 0 && m2 == 0) { // the sign of a zero maximum may differ
					t.Fatalf("ExpMax %s: max %v, generic %v", tag, m1, m2)
				}
				if !fused {
					check("ExpMax "+tag, x1, x2)
				}
				sumsClose("ExpMax "+tag, s1, d1, s2, d2)
			}
		}
	}
	// MulAddRows over several rows, each operand with its own stride or 0 (one row for all).
	for _, n := range []int{1, 7, 8, 9, 16, 17, 24, 33} {
		for _, ld := range [][4]int{{n, n, n, n}, {0, n + 1, 0, n + 3}, {n + 5, 0, n + 2, n}} {
			const rows = 5
			a, x, y := gen(rows*(n+5)+1, 4)[1:], gen(rows*(n+5), 4), gen(rows*(n+5)+3, 4)[3:]
			d0 := gen(rows*(n+5), 4)
			d1, d2 := append([]float32(nil), d0...), append([]float32(nil), d0...)
			mulAddRows(rows, n, a, ld[0], x, ld[1], y, ld[2], d1, ld[3])
			mulAddRowsGeneric(rows, n, a, ld[0], x, ld[1], y, ld[2], d2, ld[3])
			tag := fmt.Sprintf("MulAddRows n=%d ld=%v", n, ld)
			if !fused {
				check(tag, d1, d2)
				continue
			}
			for i := range d1 {
				if !same(d1[i], d2[i]) && !closeTo(float64(d1[i]), float64(d2[i]), 4*eps32*math.Abs(float64(d2[i]))) {
					t.Fatalf("%s: [%d] = %v, generic %v", tag, i, d1[i], d2[i])
				}
			}
		}
	}
}

// TestZigFastAVX2BitIdentical: the AVX2 ziggurat fast path writes the generic values bit for bit
// (both signs, u = 0 giving ±0), stops at the same word and writes nothing from there on, on
// words at the edges of every low byte's rectangle (u = 0, k−1 and k, the first rejected) placed
// at every lane of a group, and on random words of every length around the group of eight.
func TestZigFastAVX2BitIdentical(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2+FMA")
	}
	r := newRand(43)
	var cases [][]uint32
	for b := uint32(0); b < 256; b++ {
		k := zig.k[b&(zigLayers-1)]
		for _, u := range []uint32{0, max(k, 1) - 1, k} {
			for lane := 0; lane < 9; lane++ {
				w := make([]uint32, 17)
				for i := range w {
					w[i] = uint32(r.IntN(1<<16)) << 8 // inside every rectangle but layer 1's
					w[i] |= 2 + uint32(r.IntN(zigLayers-2)) | uint32(r.IntN(2))<<7
				}
				w[lane] = u<<8 | b
				cases = append(cases, w)
			}
		}
	}
	checkZigFast(t, zigFast, append(cases, randomWords(r)...))
}

// TestGemmPackedRowsIndependentGeneric: GemmPacked's rows are independent of the call's row count
// on the generic path of an AVX2 CPU too (packed panels, partial tiles through C's values).
func TestGemmPackedRowsIndependentGeneric(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2+FMA: TestGemmPackedRowsIndependent ran the generic path")
	}
	useAVX2, gemmInPlaceA = false, false
	defer func() { useAVX2, gemmInPlaceA = true, true }()
	checkRowsIndependent(t)
}
