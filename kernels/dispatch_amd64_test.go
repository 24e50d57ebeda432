//go:build !purego

package kernels

import (
	"math"
	"testing"
)

// TestGenericPathOnAVX2: with useAVX2 cleared, Gemm, Dot and Axpy run the generic twins on a CPU
// that has AVX2, and agree with the assembly path to float32 rounding.
func TestGenericPathOnAVX2(t *testing.T) {
	if !useAVX2 {
		t.Skip("this CPU has no AVX2+FMA: the generic path is the only one")
	}
	r := newRand(21)
	const m, n, k = 37, 53, 300 // crosses the tile, the medium-driver and the kc thresholds
	a, b := randSlice(r, m*k), randSlice(r, k*n)
	x, y := randSlice(r, 1003), randSlice(r, 1003)
	run := func() (c []float32, d float32, z []float32) {
		c = make([]float32, m*n)
		Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		z = append([]float32(nil), y...)
		Axpy(0.5, x, z)
		return c, Dot(x, y), z
	}
	cAsm, dAsm, zAsm := run()
	useAVX2 = false
	defer func() { useAVX2 = true }()
	cGen, dGen, zGen := run()
	for i := range cAsm {
		if !closeTo(float64(cAsm[i]), float64(cGen[i]), 1e-5*k) {
			t.Fatalf("Gemm c[%d]: AVX2 %g, generic %g", i, cAsm[i], cGen[i])
		}
	}
	if math.Abs(float64(dAsm-dGen)) > 1e-5*1003 {
		t.Errorf("Dot: AVX2 %g, generic %g", dAsm, dGen)
	}
	for i := range zAsm {
		if !closeTo(float64(zAsm[i]), float64(zGen[i]), 4*eps32) {
			t.Fatalf("Axpy y[%d]: AVX2 %g, generic %g", i, zAsm[i], zGen[i])
		}
	}
}
