//go:build !purego

package kernels

import "testing"

// TestGenericPathOnNEON: with useNEON cleared, Gemm runs the generic micro-kernel on a CPU that
// has NEON, and agrees with the NEON kernel to float32 rounding.
func TestGenericPathOnNEON(t *testing.T) {
	if !useNEON {
		t.Skip("this CPU has no NEON: the generic kernel is the only one")
	}
	run, k := gemmDispatchCase(22)
	neon := run()
	useNEON = false
	defer func() { useNEON = true }()
	checkGemmPaths(t, "NEON", k, neon, run())
}
