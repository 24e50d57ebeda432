package kernels

// gemmKernelGeneric is the portable micro-kernel: with a a packed gemmMR×kc panel (gemmMR values
// per depth step) and b a packed kc×gemmNR panel (gemmNR values per depth step), it computes
// C[0:gemmMR, 0:gemmNR] += alpha * a*b, where C starts at c[0] with leading dimension ldc.
//
// The 4×8 tile is computed as two 4×4 halves so that the 16 accumulators plus the 8 operands fit
// in the register file of arm64 (and mostly of amd64); an assembly kernel can do the whole tile at
// once with vector registers.
func gemmKernelGeneric(kc int, alpha float32, a, b, c []float32, ldc int) {
	a = a[:kc*gemmMR]
	b = b[:kc*gemmNR]
	_ = c[3*ldc+gemmNR-1]
	for half := 0; half < gemmNR; half += 4 {
		var c00, c01, c02, c03 float32
		var c10, c11, c12, c13 float32
		var c20, c21, c22, c23 float32
		var c30, c31, c32, c33 float32
		bo := half
		for l := 0; l < kc; l++ {
			aa := a[l*gemmMR : l*gemmMR+4 : l*gemmMR+4]
			bb := b[bo : bo+4 : bo+4]
			bo += gemmNR
			a0, a1, a2, a3 := aa[0], aa[1], aa[2], aa[3]
			b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
			c00 += a0 * b0
			c01 += a0 * b1
			c02 += a0 * b2
			c03 += a0 * b3
			c10 += a1 * b0
			c11 += a1 * b1
			c12 += a1 * b2
			c13 += a1 * b3
			c20 += a2 * b0
			c21 += a2 * b1
			c22 += a2 * b2
			c23 += a2 * b3
			c30 += a3 * b0
			c31 += a3 * b1
			c32 += a3 * b2
			c33 += a3 * b3
		}
		r := c[half : half+4 : half+4]
		r[0] += alpha * c00
		r[1] += alpha * c01
		r[2] += alpha * c02
		r[3] += alpha * c03
		r = c[ldc+half : ldc+half+4 : ldc+half+4]
		r[0] += alpha * c10
		r[1] += alpha * c11
		r[2] += alpha * c12
		r[3] += alpha * c13
		r = c[2*ldc+half : 2*ldc+half+4 : 2*ldc+half+4]
		r[0] += alpha * c20
		r[1] += alpha * c21
		r[2] += alpha * c22
		r[3] += alpha * c23
		r = c[3*ldc+half : 3*ldc+half+4 : 3*ldc+half+4]
		r[0] += alpha * c30
		r[1] += alpha * c31
		r[2] += alpha * c32
		r[3] += alpha * c33
	}
}
