package autodiff

import (
	"fmt"
	"math"
)

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

// choleskyGeneric factors the symmetric positive-definite n×n matrix a (only its lower triangle
// is read) in place into L with A = L·Lᵀ; the strict upper triangle is zeroed.
func choleskyGeneric[T Float](a []T, n int) error {
	for j := 0; j < n; j++ {
		d := float64(a[j*n+j])
		for p := 0; p < j; p++ {
			d -= float64(a[j*n+p]) * float64(a[j*n+p])
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return fmt.Errorf("matrix is not positive definite (pivot %d is %g)", j, d)
		}
		ljj := math.Sqrt(d)
		a[j*n+j] = T(ljj)
		for i := j + 1; i < n; i++ {
			s := float64(a[i*n+j])
			for p := 0; p < j; p++ {
				s -= float64(a[i*n+p]) * float64(a[j*n+p])
			}
			a[i*n+j] = T(s / ljj)
		}
		for i := 0; i < j; i++ {
			a[i*n+j] = 0
		}
	}
	return nil
}

// trsmGeneric solves op(A)·X = B (left) or X·op(A) = B (right) in place in b (m×n, leading
// dimension ldb). A is triangular (lower or upper) of order m (left) or n (right); only that
// triangle is read.
func trsmGeneric[T Float](left, lower, trans bool, m, n int, a []T, lda int, b []T, ldb int) {
	// M = op(A); at(i, j) = M[i][j].
	at := func(i, j int) T {
		if trans {
			return a[j*lda+i]
		}
		return a[i*lda+j]
	}
	mLower := lower != trans
	if left {
		if mLower {
			for i := 0; i < m; i++ {
				bi := b[i*ldb : i*ldb+n]
				for j := 0; j < i; j++ {
					s := at(i, j)
					if s == 0 {
						continue
					}
					bj := b[j*ldb : j*ldb+n]
					for c := range bi {
						bi[c] -= s * bj[c]
					}
				}
				d := at(i, i)
				for c := range bi {
					bi[c] /= d
				}
			}
		} else {
			for i := m - 1; i >= 0; i-- {
				bi := b[i*ldb : i*ldb+n]
				for j := i + 1; j < m; j++ {
					s := at(i, j)
					if s == 0 {
						continue
					}
					bj := b[j*ldb : j*ldb+n]
					for c := range bi {
						bi[c] -= s * bj[c]
					}
				}
				d := at(i, i)
				for c := range bi {
					bi[c] /= d
				}
			}
		}
		return
	}
	// Right: each row x of X solves x·M = b, i.e. x_j = (b_j − Σ_{i≠j} x_i M[i][j]) / M[j][j].
	for r := 0; r < m; r++ {
		x := b[r*ldb : r*ldb+n]
		if mLower {
			// M lower: M[i][j] ≠ 0 only for i ≥ j, so solve from the last column down.
			for j := n - 1; j >= 0; j-- {
				s := x[j]
				for i := j + 1; i < n; i++ {
					s -= x[i] * at(i, j)
				}
				x[j] = s / at(j, j)
			}
		} else {
			for j := 0; j < n; j++ {
				s := x[j]
				for i := 0; i < j; i++ {
					s -= x[i] * at(i, j)
				}
				x[j] = s / at(j, j)
			}
		}
	}
}

// convGeom describes one image's 2-D convolution lowering (same fields as kernels.ConvGeom).
type convGeom struct {
	InC, InH, InW, KH, KW, StrideH, StrideW, PadH, PadW, DilH, DilW int
}

func (g convGeom) OutH() int { return (g.InH+2*g.PadH-g.DilH*(g.KH-1)-1)/g.StrideH + 1 }
func (g convGeom) OutW() int { return (g.InW+2*g.PadW-g.DilW*(g.KW-1)-1)/g.StrideW + 1 }

// im2colGeneric writes the (InC·KH·KW) × (OutH·OutW) patch matrix of img (InC×InH×InW) to col.
func im2colGeneric[T Float](g convGeom, img, col []T) {
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
func col2imGeneric[T Float](g convGeom, col, img []T) {
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
