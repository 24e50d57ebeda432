//go:build !purego

package serve

import "slices"

// plainRun is plainRunGeneric in assembly (plainrun_arm64.s): the same numbers, values, and
// stopping point, at about a third of the instructions per number.
func plainRun(b []byte, i int, dst []float32, limit int) (next int, out []float32, after bool) {
	if len(b)-i < 32 || len(dst) >= limit {
		return i, dst, false
	}
	m := len(dst)
	dst = slices.Grow(dst, limit-m) // the values go to dst[m:limit], inside its capacity
	next, n, after := plainRunARM64(b, i, dst[m:limit])
	return next, dst[:m+n], after
}

//go:noescape
func plainRunARM64(b []byte, i int, out []float32) (next, n int, after bool)
