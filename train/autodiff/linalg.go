package autodiff

import "github.com/edgebnn/edgebnn/kernels"

// This file holds the dense linear-algebra helpers used by the ops. They are simple generic
// loops; for float32 the heavy ones dispatch to the kernels package (see kernels_dispatch.go).

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
