//go:build purego || !arm

package kernels

// packRows4 is packRows4Generic where there is no assembly for it (every build but 32-bit ARM).
func packRows4(dst, s0, s1, s2, s3 []float32) { packRows4Generic(dst, s0, s1, s2, s3) }
