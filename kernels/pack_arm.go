//go:build !purego

package kernels

//go:noescape
func packRows4NEON(dst, s0, s1, s2, s3 *float32, n int)

// packRows4 is packRows4Generic with the depth steps in whole fours in ARMv7 NEON where the CPU
// has it (pack_arm.s: four row loads and a 4×4 transpose by two interleaving stores per four
// steps, against about eleven instructions a step in Go), the rest generic.
func packRows4(dst, s0, s1, s2, s3 []float32) {
	// The assembly writes gemmMR = 4 values per depth step.
	var _ [gemmMR - 4]struct{}
	var _ [4 - gemmMR]struct{}
	n := 0
	if useNEON {
		if n = len(s0) &^ 3; n > 0 {
			// The bounds the assembly relies on.
			_, _, _, _ = s1[n-1], s2[n-1], s3[n-1], dst[(n-1)*gemmMR+3]
			packRows4NEON(&dst[0], &s0[0], &s1[0], &s2[0], &s3[0], n)
		}
	}
	if n < len(s0) {
		packRows4Generic(dst[n*gemmMR:], s0[n:], s1[n:], s2[n:], s3[n:])
	}
}
