package kernels

import "fmt"

// ConvGeom describes a 2-D convolution of one InC×InH×InW image with KH×KW kernels: strides,
// zero padding (added on both sides) and dilations, as in torch.nn.Conv2d.
type ConvGeom struct{ InC, InH, InW, KH, KW, StrideH, StrideW, PadH, PadW, DilH, DilW int }

// OutH returns the output height, (InH + 2·PadH − DilH·(KH−1) − 1)/StrideH + 1. The result is
// meaningful only for a geometry that passes Validate.
func (g ConvGeom) OutH() int {
	if g.StrideH <= 0 {
		return 0
	}
	return floorDiv(g.InH+2*g.PadH-g.DilH*(g.KH-1)-1, g.StrideH) + 1
}

// OutW returns the output width, (InW + 2·PadW − DilW·(KW−1) − 1)/StrideW + 1. The result is
// meaningful only for a geometry that passes Validate.
func (g ConvGeom) OutW() int {
	if g.StrideW <= 0 {
		return 0
	}
	return floorDiv(g.InW+2*g.PadW-g.DilW*(g.KW-1)-1, g.StrideW) + 1
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Validate reports whether the geometry is usable: positive sizes, strides and dilations,
// non-negative padding, and an output of at least 1×1.
func (g ConvGeom) Validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"InC", g.InC}, {"InH", g.InH}, {"InW", g.InW}, {"KH", g.KH}, {"KW", g.KW},
		{"StrideH", g.StrideH}, {"StrideW", g.StrideW}, {"DilH", g.DilH}, {"DilW", g.DilW}} {
		if f.v <= 0 {
			return fmt.Errorf("kernels: conv geometry %+v: %s = %d must be positive", g, f.name, f.v)
		}
	}
	if g.PadH < 0 || g.PadW < 0 {
		return fmt.Errorf("kernels: conv geometry %+v: padding must be non-negative", g)
	}
	// In int64 first: OutH's d·(k − 1) can wrap around on 32-bit platforms to a kernel that seems
	// to fit.
	if int64(g.DilH)*int64(g.KH-1) >= int64(g.InH)+2*int64(g.PadH) || int64(g.DilW)*int64(g.KW-1) >= int64(g.InW)+2*int64(g.PadW) {
		return fmt.Errorf("kernels: conv geometry %+v: the dilated kernel does not fit the padded input", g)
	}
	if g.OutH() < 1 || g.OutW() < 1 {
		return fmt.Errorf("kernels: conv geometry %+v: empty output %d×%d", g, g.OutH(), g.OutW())
	}
	return nil
}

// colSizes validates g and the buffer lengths for Im2Col/Col2Im and returns OutH, OutW.
func (g ConvGeom) colSizes(fn string, img, col []float32) (oh, ow int) {
	if err := g.Validate(); err != nil {
		panic(fmt.Sprintf("%s: %v", fn, err))
	}
	oh, ow = g.OutH(), g.OutW()
	// In int64: on 32-bit platforms the products can wrap around to a size the buffers pass.
	if need := int64(g.InC) * int64(g.InH) * int64(g.InW); int64(len(img)) < need {
		panic(fmt.Sprintf("%s: image has %d elements, need %d", fn, len(img), need))
	}
	if need := int64(g.InC) * int64(g.KH) * int64(g.KW) * int64(oh) * int64(ow); int64(len(col)) < need {
		panic(fmt.Sprintf("%s: col has %d elements, need %d", fn, len(col), need))
	}
	return oh, ow
}

// validRange returns the half-open range [lo, hi) of output positions o in [0, out) whose input
// coordinate o*stride + off lies in [0, in).
func validRange(out, in, stride, off int) (lo, hi int) {
	// o*stride + off >= 0  ⇔  o >= ceil(-off/stride)
	if off < 0 {
		lo = (-off + stride - 1) / stride
	}
	// o*stride + off <= in-1  ⇔  o <= floor((in-1-off)/stride)
	if in-1-off < 0 {
		return lo, lo
	}
	hi = min(out, (in-1-off)/stride+1)
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

// Im2Col writes col, of shape (InC·KH·KW) × (OutH·OutW) row-major (rows in PyTorch's weight
// flattening order c_in, kh, kw), from the InC×InH×InW image img, with zero padding. A weight
// matrix of shape C_out × (InC·KH·KW) times col is then the convolution. It panics if g is invalid
// or a buffer is too short.
func Im2Col(g ConvGeom, img, col []float32) {
	oh, ow := g.colSizes("kernels.Im2Col", img, col)
	if g.StrideH == 1 && g.StrideW == 1 && ow == g.InW {
		im2colSameWidth(g, img, col, oh)
		return
	}
	im2colRows(g, img, col, oh, ow)
}

// im2colRows is Im2Col row by row of the output, for any geometry.
func im2colRows(g ConvGeom, img, col []float32, oh, ow int) {
	np := oh * ow
	row := 0
	for c := 0; c < g.InC; c++ {
		plane := img[c*g.InH*g.InW : (c+1)*g.InH*g.InW]
		for kh := 0; kh < g.KH; kh++ {
			offH := kh*g.DilH - g.PadH
			for kw := 0; kw < g.KW; kw++ {
				offW := kw*g.DilW - g.PadW
				dst := col[row*np : (row+1)*np]
				row++
				lo, hi := validRange(ow, g.InW, g.StrideW, offW)
				for y := 0; y < oh; y++ {
					d := dst[y*ow : (y+1)*ow]
					ih := y*g.StrideH + offH
					if ih < 0 || ih >= g.InH || lo >= hi {
						clear(d)
						continue
					}
					clear(d[:lo])
					clear(d[hi:])
					src := plane[ih*g.InW : (ih+1)*g.InW]
					if g.StrideW == 1 {
						copy(d[lo:hi], src[lo+offW:hi+offW])
						continue
					}
					iw := lo*g.StrideW + offW
					for x := lo; x < hi; x++ {
						d[x] = src[iw]
						iw += g.StrideW
					}
				}
			}
		}
	}
}

// im2colSameWidth is Im2Col for stride 1 with as many output columns as input columns (a
// "same"-padded convolution, a ResNet's 3×3 ones): the rows a (c, kh, kw) row of col reads are
// consecutive input rows shifted by the same offset, so each is one copy of the plane followed by
// zeroing the few entries of each row that fall in the horizontal padding (the copy put the
// neighbouring row's values there) — instead of a copy per output row, which costs more than the
// row itself for the 4- and 8-wide rows of late stages.
func im2colSameWidth(g ConvGeom, img, col []float32, oh int) {
	ow := g.InW
	np := oh * ow
	size := g.InH * g.InW
	row := 0
	for c := 0; c < g.InC; c++ {
		plane := img[c*size : (c+1)*size]
		for kh := 0; kh < g.KH; kh++ {
			offH := kh*g.DilH - g.PadH
			ylo, yhi := max(0, -offH), min(oh, g.InH-offH)
			for kw := 0; kw < g.KW; kw++ {
				offW := kw*g.DilW - g.PadW
				dst := col[row*np : (row+1)*np]
				row++
				lo, hi := validRange(ow, g.InW, 1, offW)
				if ylo >= yhi || lo >= hi {
					clear(dst)
					continue
				}
				clear(dst[:ylo*ow])
				clear(dst[yhi*ow:])
				// dst[y·ow + x] = plane[(y + offH)·InW + x + offW] for ylo ≤ y < yhi, clamped to
				// the plane; whatever is not written lies outside [lo, hi) and is zeroed below.
				run := dst[ylo*ow : yhi*ow]
				base := (ylo+offH)*g.InW + offW
				j0, j1 := max(0, -base), min(len(run), size-base)
				copy(run[j0:j1], plane[base+j0:base+j1])
				// Element stores: the edges are a column or two, too short for a clear call.
				for y := 0; y < len(run); y += ow {
					r := run[y : y+ow]
					for x := 0; x < lo; x++ {
						r[x] = 0
					}
					for x := hi; x < ow; x++ {
						r[x] = 0
					}
				}
			}
		}
	}
}

// Col2Im accumulates (adds) col, of shape (InC·KH·KW) × (OutH·OutW), back into the InC×InH×InW
// image img: the adjoint of Im2Col, used for the input gradient of a convolution. Entries that
// Im2Col would have read from the padding are dropped. It panics if g is invalid or a buffer is
// too short.
func Col2Im(g ConvGeom, col, img []float32) {
	oh, ow := g.colSizes("kernels.Col2Im", img, col)
	np := oh * ow
	row := 0
	for c := 0; c < g.InC; c++ {
		plane := img[c*g.InH*g.InW : (c+1)*g.InH*g.InW]
		for kh := 0; kh < g.KH; kh++ {
			offH := kh*g.DilH - g.PadH
			for kw := 0; kw < g.KW; kw++ {
				offW := kw*g.DilW - g.PadW
				src := col[row*np : (row+1)*np]
				row++
				lo, hi := validRange(ow, g.InW, g.StrideW, offW)
				if lo >= hi {
					continue
				}
				for y := 0; y < oh; y++ {
					ih := y*g.StrideH + offH
					if ih < 0 || ih >= g.InH {
						continue
					}
					s := src[y*ow : (y+1)*ow]
					dst := plane[ih*g.InW : (ih+1)*g.InW]
					iw := lo*g.StrideW + offW
					if g.StrideW == 1 {
						// the same additions over two slices of one length: no bounds checks
						d, s := dst[iw:iw+hi-lo], s[lo:hi]
						for x, v := range s {
							d[x] += v
						}
						continue
					}
					for x := lo; x < hi; x++ {
						dst[iw] += s[x]
						iw += g.StrideW
					}
				}
			}
		}
	}
}
