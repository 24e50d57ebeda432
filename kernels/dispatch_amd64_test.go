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
	if math.Abs(float64(dAsm-dGen)) > 1e-5*1003 {
		t.Errorf("Dot: AVX2 %g, generic %g", dAsm, dGen)
	}
	for i := range zAsm {
		if !closeTo(float64(zAsm[i]), float64(zGen[i]), 4*eps32) {
			t.Fatalf("Axpy y[%d]: AVX2 %g, generic %g", i, zAsm[i], zGen[i])
		}
	}
}
