//go:build !purego

package kernels

import "testing"

// TestGenericPathOnNEON: with useNEON cleared, Gemm runs the generic micro-kernel on a CPU that
// has NEON, and agrees with the NEON kernel to float32 rounding.
func TestGenericPathOnNEON(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no NEON: the generic kernel is the only one")
	}
	r := newRand(22)
	const m, n, k = 37, 53, 300 // crosses the tile, the medium-driver and the kc thresholds
	a, b := randSlice(r, m*k), randSlice(r, k*n)
	run := func() []float32 {
		c := make([]float32, m*n)
		Gemm(false, false, m, n, k, 1, a, k, b, n, 0, c, n)
		return c
	}
	neon := run()
	useNEON = false
	defer func() { useNEON = true }()
	gen := run()
	for i := range neon {
		if !closeTo(float64(neon[i]), float64(gen[i]), 1e-5*k) {
			t.Fatalf("Gemm c[%d]: NEON %g, generic %g", i, neon[i], gen[i])
		}
	}
}
