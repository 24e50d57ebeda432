//go:build !arm64 || purego

package serve

// plainRun is plainRunGeneric; arm64 has it in assembly (plainrun_arm64.s).
func plainRun(b []byte, i int, dst []float32, limit int) (next int, out []float32, after bool) {
	return plainRunGeneric(b, i, dst, limit)
}
