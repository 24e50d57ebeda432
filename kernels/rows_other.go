//go:build purego || !arm64

package kernels

// Several streams' rows of normals (Stream.NormalRows) one row after the other, each through the
// dispatched single-stream kernels (philoxBlocks, zigRun); arm64 runs all rows in one NEON call
// (dispatch_arm64.go).

// philoxRows fills dst with the first nb Philox blocks of the streams (a, b), (a+1, b), … one
// after the other; see philoxRowsGeneric.
func philoxRows(dst []uint32, key [2]uint32, a, b uint32, nb int) {
	philoxRowsGeneric(dst, key, a, b, nb)
}

// zigRows is zigRun over the rows of words; see zigRowsGeneric.
func zigRows(words []uint32, nw int, out []float32, ld, n int) (row, consumed, produced int) {
	return zigRowsGeneric(words, nw, out, ld, n)
}
