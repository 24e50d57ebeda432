package autodiff

import "github.com/edgebnn/edgebnn/kernels"

// This file holds the dense linear-algebra helpers used by the ops. They are simple generic
// loops; for float32 the heavy ones dispatch to the kernels package (see kernels_dispatch.go).

// gemmGeneric computes C = alpha·op(A)·op(B) + beta·C (row-major, op(A) m×k, op(B) k×n).
func gemmGeneric[T Float](transA, transB bool, m, n, k int, alpha T, a []T, lda int, b []T, ldb int, beta T, c []T, ldc int) {
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
		} else if beta != 1 {
			for j := range row {
				row[j] *= beta
			}
		}
	}
	if alpha == 0 || k == 0 {
		return
	}
	switch {
	case !transA && !transB:
		for i := 0; i < m; i++ {
			crow := c[i*ldc : i*ldc+n]
			for p := 0; p < k; p++ {
				s := alpha * a[i*lda+p]
				if s == 0 {
					continue
				}
				brow := b[p*ldb : p*ldb+n]
				for j, bv := range brow {
					crow[j] += s * bv
				}
			}
		}
	case transA && !transB:
		for p := 0; p < k; p++ {
			brow := b[p*ldb : p*ldb+n]
			for i := 0; i < m; i++ {
				s := alpha * a[p*lda+i]
				if s == 0 {
					continue
				}
				crow := c[i*ldc : i*ldc+n]
				for j, bv := range brow {
					crow[j] += s * bv
				}
			}
		}
	case !transA && transB:
		for i := 0; i < m; i++ {
			arow := a[i*lda : i*lda+k]
			for j := 0; j < n; j++ {
				brow := b[j*ldb : j*ldb+k]
				var s T
				for p, av := range arow {
					s += av * brow[p]
				}
				c[i*ldc+j] += alpha * s
			}
		}
	default:
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s T
				for p := 0; p < k; p++ {
					s += a[p*lda+i] * b[j*ldb+p]
				}
				c[i*ldc+j] += alpha * s
			}
		}
	}
}

// im2colGeneric writes the (InC·KH·KW) × (OutH·OutW) patch matrix of img (InC×InH×InW) to col.
func im2colGeneric[T Float](g kernels.ConvGeom, img, col []T) {
	oh, ow := g.OutH(), g.OutW()
	row := 0
	for c := 0; c < g.InC; c++ {
		for ki := 0; ki < g.KH; ki++ {
			for kj := 0; kj < g.KW; kj++ {
				dst := col[row*oh*ow : (row+1)*oh*ow]
				row++
				for y := 0; y < oh; y++ {
					iy := y*g.StrideH - g.PadH + ki*g.DilH
					d := dst[y*ow : (y+1)*ow]
					if iy < 0 || iy >= g.InH {
						clear(d)
						continue
					}
					src := img[(c*g.InH+iy)*g.InW : (c*g.InH+iy+1)*g.InW]
					for x := 0; x < ow; x++ {
						ix := x*g.StrideW - g.PadW + kj*g.DilW
						if ix < 0 || ix >= g.InW {
							d[x] = 0
						} else {
							d[x] = src[ix]
						}
					}
				}
			}
		}
	}
}

// col2imGeneric adds the patch matrix col back into img (the adjoint of im2colGeneric).
func col2imGeneric[T Float](g kernels.ConvGeom, col, img []T) {
	oh, ow := g.OutH(), g.OutW()
	row := 0
	for c := 0; c < g.InC; c++ {
		for ki := 0; ki < g.KH; ki++ {
			for kj := 0; kj < g.KW; kj++ {
				src := col[row*oh*ow : (row+1)*oh*ow]
				row++
				for y := 0; y < oh; y++ {
					iy := y*g.StrideH - g.PadH + ki*g.DilH
					if iy < 0 || iy >= g.InH {
						continue
					}
					dst := img[(c*g.InH+iy)*g.InW : (c*g.InH+iy+1)*g.InW]
					s := src[y*ow : (y+1)*ow]
					for x := 0; x < ow; x++ {
						ix := x*g.StrideW - g.PadW + kj*g.DilW
						if ix >= 0 && ix < g.InW {
							dst[ix] += s[x]
						}
					}
				}
			}
		}
	}
}
