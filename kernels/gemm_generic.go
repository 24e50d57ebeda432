package kernels

// gemmKernelGeneric is the portable micro-kernel: with a a packed gemmMR×kc panel (gemmMR values
// per depth step) and b a packed kc×gemmNR panel (gemmNR values per depth step), it computes
// C[0:gemmMR, 0:gemmNR] += alpha * a*b, where C starts at c[0] with leading dimension ldc.
//
// The tile is computed as 2×4 sub-tiles (gemmMR must be even and gemmNR a multiple of 4, whatever
// the architecture's tile shape), each a single pass over the depth with 8
// independent accumulators, unrolled twice. 8 accumulators plus 6 operands nearly fit the 15-16
// scalar floating-point registers that Go has on amd64 and 32-bit arm (a 4×4 sub-tile spills
// heavily), the packed panels being in L1 makes the extra passes cheap, and the unrolling lets
// Go's scheduler interleave multiplies and adds. Measured on amd64 this is about 30% faster than a
// 4×4 sub-tile. An assembly kernel can do the whole tile in one pass with vector registers.
func gemmKernelGeneric(kc int, alpha float32, a, b, c []float32, ldc int) {
	a = a[:kc*gemmMR]
	b = b[:kc*gemmNR]
	_ = c[(gemmMR-1)*ldc+gemmNR-1]
	for rp := 0; rp < gemmMR; rp += 2 {
		for q := 0; q < gemmNR; q += 4 {
			var c00, c01, c02, c03, c10, c11, c12, c13 float32
			ao, bo := rp, q
			l := 0
			for ; l+2 <= kc; l += 2 {
				aa := a[ao : ao+gemmMR+2 : ao+gemmMR+2]
				bb := b[bo : bo+gemmNR+4 : bo+gemmNR+4]
				ao += 2 * gemmMR
				bo += 2 * gemmNR
				a0, a1 := aa[0], aa[1]
				b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
				a0, a1 = aa[gemmMR], aa[gemmMR+1]
				b0, b1, b2, b3 = bb[gemmNR], bb[gemmNR+1], bb[gemmNR+2], bb[gemmNR+3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
			}
			if l < kc {
				aa := a[ao : ao+2 : ao+2]
				bb := b[bo : bo+4 : bo+4]
				a0, a1 := aa[0], aa[1]
				b0, b1, b2, b3 := bb[0], bb[1], bb[2], bb[3]
				c00 += a0 * b0
				c01 += a0 * b1
				c02 += a0 * b2
				c03 += a0 * b3
				c10 += a1 * b0
				c11 += a1 * b1
				c12 += a1 * b2
				c13 += a1 * b3
			}
			r := c[rp*ldc+q : rp*ldc+q+4 : rp*ldc+q+4]
			r[0] += alpha * c00
			r[1] += alpha * c01
			r[2] += alpha * c02
			r[3] += alpha * c03
			r = c[(rp+1)*ldc+q : (rp+1)*ldc+q+4 : (rp+1)*ldc+q+4]
			r[0] += alpha * c10
			r[1] += alpha * c11
			r[2] += alpha * c12
			r[3] += alpha * c13
		}
	}
}

// gemmKernelRowsGeneric is gemmKernelGeneric with both operands read in place: row r of the
// gemmMR×kc panel of A is a[r*lda : r*lda+kc], depth step l of B's kc×gemmNR panel is
// b[l*ldb : l*ldb+gemmNR] (ldb = gemmNR for a packed panel). kc ≤ gemmKC.
func gemmKernelRowsGeneric(kc int, alpha float32, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	var pa [gemmMR * gemmKC]float32
	var pb [gemmKC * gemmNR]float32
	for r := 0; r < gemmMR; r++ {
		for l, v := range a[r*lda : r*lda+kc] {
			pa[l*gemmMR+r] = v
		}
	}
	for l := 0; l < kc; l++ {
		copy(pb[l*gemmNR:(l+1)*gemmNR], b[l*ldb:l*ldb+gemmNR])
	}
	gemmKernelGeneric(kc, alpha, pa[:kc*gemmMR], pb[:kc*gemmNR], c, ldc)
}

// gemmPanelRowsGeneric is gemmKernelRowsGeneric for tiles tiles side by side: tile t multiplies the
// gemmMR rows of A by the kc×gemmNR panel of B at b[t*bstep:] (depth steps ldb apart) into
// C[0:gemmMR, t*gemmNR:(t+1)*gemmNR]. With over, C = alpha·A·B is written without reading C (as
// for beta = 0); otherwise C += alpha·A·B.
func gemmPanelRowsGeneric(kc int, alpha float32, a []float32, lda int, b []float32, ldb, bstep int, c []float32, ldc, tiles int, over bool) {
	for t := 0; t < tiles; t++ {
		ct := c[t*gemmNR:]
		if over {
			for r := 0; r < gemmMR; r++ {
				clear(ct[r*ldc : r*ldc+gemmNR])
			}
		}
		gemmKernelRowsGeneric(kc, alpha, a, lda, b[t*bstep:], ldb, ct, ldc)
	}
}
