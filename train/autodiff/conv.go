package autodiff

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// Conv2DOptions configures Conv2D. Zero strides and dilations mean 1.
type Conv2DOptions struct {
	StrideH, StrideW int
	PadH, PadW       int
	DilH, DilW       int
}

func orOne(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

// Conv2D returns the 2-D cross-correlation of the batch x (N, C_in, H, W) with weight w
// (C_out, C_in, KH, KW) plus the optional bias b (C_out) or nil, with zero padding, stride and
// dilation from opt: shape (N, C_out, OH, OW) with OH = ⌊(H + 2·PadH − DilH·(KH−1) − 1)/StrideH⌋ + 1
// (torch.nn.functional.conv2d, groups=1). It lowers each image with im2col and multiplies by the
// weight viewed as (C_out, C_in·KH·KW).
func (t *Tape[T]) Conv2D(x, w, b *Var[T], opt Conv2DOptions) *Var[T] {
	ins := []*Var[T]{x, w}
	if b != nil {
		ins = append(ins, b)
	}
	if !t.check("Conv2D", ins...) {
		return t.placeholder()
	}
	if len(x.shape) != 4 || len(w.shape) != 4 || x.shape[1] != w.shape[1] {
		return t.failf("Conv2D: input shape %v and weight shape %v do not match (need (N,C,H,W) and (C_out,C,KH,KW))", x.shape, w.shape)
	}
	cout := w.shape[0]
	if b != nil && (len(b.shape) != 1 || b.shape[0] != cout) {
		return t.failf("Conv2D: bias shape %v, want (%d)", b.shape, cout)
	}
	if opt.StrideH < 0 || opt.StrideW < 0 || opt.DilH < 0 || opt.DilW < 0 {
		return t.failf("Conv2D: negative stride or dilation in %+v", opt)
	}
	g := kernels.ConvGeom{
		InC: x.shape[1], InH: x.shape[2], InW: x.shape[3], KH: w.shape[2], KW: w.shape[3],
		StrideH: orOne(opt.StrideH), StrideW: orOne(opt.StrideW), PadH: opt.PadH, PadW: opt.PadW,
		DilH: orOne(opt.DilH), DilW: orOne(opt.DilW),
	}
	if err := g.Validate(); err != nil {
		return t.fail(fmt.Errorf("autodiff: Conv2D: input %v, weight %v, options %+v: %w", x.shape, w.shape, opt, err))
	}
	if x.shape[0] == 0 || w.shape[0] == 0 {
		return t.failf("Conv2D: empty batch or no output channels (input %v, weight %v)", x.shape, w.shape)
	}
	oh, ow := g.OutH(), g.OutW()
	n := x.shape[0]
	k := g.InC * g.KH * g.KW
	p := oh * ow
	inSize := g.InC * g.InH * g.InW
	out := t.newVar([]int{n, cout, oh, ow}, false)
	// Each image is its own product (the images split among the workers, SetWorkers).
	flops := int64(n) * int64(cout) * int64(p) * int64(k)
	parts := t.parts(n, flops, minParallelFlops)
	cols := t.getCols(parts, k*p)
	runParts(parts, func(part int) {
		col := cols[part]
		lo, hi := span(n, parts, part)
		for i := lo; i < hi; i++ {
			im2col(g, x.value[i*inSize:(i+1)*inSize], col)
			o := out.value[i*cout*p : (i+1)*cout*p]
			gemm(false, false, cout, p, k, 1, w.value, k, col, p, 0, o, p)
			if b != nil {
				for c := 0; c < cout; c++ {
					bc := b.value[c]
					for j := range o[c*p : (c+1)*p] {
						o[c*p+j] += bc
					}
				}
			}
		}
	})
	t.putCols(cols)
	t.record(out, func() {
		gx, gw := x.gradBuf(), w.gradBuf()
		var gb []T
		if b != nil {
			gb = b.gradBuf()
		}
		// The weight and bias gradients sum over the images in order: one chain, part 0. The
		// input gradient of each image is its own: the images split among the other parts (all
		// of them when there is no chain).
		chain := gw != nil || gb != nil
		parts := t.parts(n, flops, minParallelFlops)
		xparts := parts // parts taking input gradients; 0: one part does all, image by image
		switch {
		case parts == 1 || gx == nil:
			parts, xparts = 1, 0
		case chain:
			xparts--
		}
		cols := t.getCols(parts, k*p)
		defer t.putCols(cols)
		runParts(parts, func(part int) {
			col := cols[part]
			if xparts == 0 {
				for i := 0; i < n; i++ {
					convBackImage(g, x, w, out, gx, gw, gb, col, i, cout, k, p, inSize)
				}
				return
			}
			if chain && part == 0 {
				for i := 0; i < n; i++ {
					convBackImage(g, x, w, out, nil, gw, gb, col, i, cout, k, p, inSize)
				}
				return
			}
			if chain {
				part--
			}
			lo, hi := span(n, xparts, part)
			for i := lo; i < hi; i++ {
				convBackImage(g, x, w, out, gx, nil, nil, col, i, cout, k, p, inSize)
			}
		})
	}, ins...)
	return out
}

// convBackImage adds image i's share of Conv2D's gradients — of the weight to gw, of the bias to
// gb, of the input to gx (each skipped when nil) — using col (k×p) as scratch.
func convBackImage[T Float](g kernels.ConvGeom, x, w, out *Var[T], gx, gw, gb, col []T, i, cout, k, p, inSize int) {
	gout := out.grad[i*cout*p : (i+1)*cout*p]
	if gw != nil {
		im2col(g, x.value[i*inSize:(i+1)*inSize], col)
		gemm(false, true, cout, k, p, 1, gout, p, col, p, 1, gw, k)
	}
	if gx != nil {
		gemm(true, false, k, p, cout, 1, w.value, k, gout, p, 0, col, p)
		col2im(g, col, gx[i*inSize:(i+1)*inSize])
	}
	if gb != nil {
		biasGrad(gout, gb, cout, p)
	}
}

// biasGrad adds to gb[c] the sum of row c of the cout×p gout, each row summed in order from 0 as
// a plain loop does, four rows at a time: four independent chains of additions where one chain
// waits for each addition to finish (the same sums, faster).
func biasGrad[T Float](gout, gb []T, cout, p int) {
	c := 0
	for ; c+4 <= cout; c += 4 {
		r0, r1, r2, r3 := gout[c*p:(c+1)*p], gout[(c+1)*p:(c+2)*p], gout[(c+2)*p:(c+3)*p], gout[(c+3)*p:(c+4)*p]
		var s0, s1, s2, s3 T
		for j, v := range r0 {
			s0 += v
			s1 += r1[j]
			s2 += r2[j]
			s3 += r3[j]
		}
		gb[c] += s0
		gb[c+1] += s1
		gb[c+2] += s2
		gb[c+3] += s3
	}
	for ; c < cout; c++ {
		var s T
		for _, v := range gout[c*p : (c+1)*p] {
			s += v
		}
		gb[c] += s
	}
}

// Pool2DOptions configures MaxPool2D and AvgPool2D: a KH×KW window, strides (0 means the window
// size, PyTorch's default) and zero/−∞ padding of at most half the window.
type Pool2DOptions struct {
	KH, KW           int
	StrideH, StrideW int
	PadH, PadW       int
}

// poolGeom checks x and opt (failing the tape when they do not fit) and returns the strides
// and the output size.
func (t *Tape[T]) poolGeom(name string, x *Var[T], opt Pool2DOptions) (sh, sw, oh, ow int, ok bool) {
	if !t.check(name, x) {
		return 0, 0, 0, 0, false
	}
	if len(x.shape) != 4 {
		t.failf("%s: need an (N,C,H,W) input, got shape %v", name, x.shape)
		return 0, 0, 0, 0, false
	}
	sh, sw = opt.StrideH, opt.StrideW
	if sh == 0 {
		sh = opt.KH
	}
	if sw == 0 {
		sw = opt.KW
	}
	if opt.KH <= 0 || opt.KW <= 0 || sh <= 0 || sw <= 0 || opt.PadH < 0 || opt.PadW < 0 ||
		2*opt.PadH > opt.KH || 2*opt.PadW > opt.KW {
		t.failf("%s: invalid options %+v (padding must be at most half the window)", name, opt)
		return 0, 0, 0, 0, false
	}
	h, w := x.shape[2], x.shape[3]
	oh = (h+2*opt.PadH-opt.KH)/sh + 1
	ow = (w+2*opt.PadW-opt.KW)/sw + 1
	if h+2*opt.PadH < opt.KH || w+2*opt.PadW < opt.KW {
		t.failf("%s: window %dx%d larger than padded input %v", name, opt.KH, opt.KW, x.shape)
		return 0, 0, 0, 0, false
	}
	return sh, sw, oh, ow, true
}

// MaxPool2D returns the maximum over each window of x (N, C, H, W) with −∞ padding:
// shape (N, C, OH, OW), OH = ⌊(H + 2·PadH − KH)/StrideH⌋ + 1 (torch.nn.functional.max_pool2d,
// floor mode). The gradient goes to the first maximal element of each window.
func (t *Tape[T]) MaxPool2D(x *Var[T], opt Pool2DOptions) *Var[T] {
	sh, sw, oh, ow, ok := t.poolGeom("MaxPool2D", x, opt)
	if !ok {
		return t.placeholder()
	}
	nc, h, w := x.shape[0]*x.shape[1], x.shape[2], x.shape[3]
	out := t.newVar([]int{x.shape[0], x.shape[1], oh, ow}, false)
	arg := t.getInts(len(out.value))
	out.ints = arg
	// Each channel of each image is its own (the images' channels split among the workers).
	parts := t.parts(nc, int64(len(x.value)), minParallelElems)
	two := opt.KH == 2 && opt.KW == 2 && sh == 2 && sw == 2 && opt.PadH == 0 && opt.PadW == 0
	runParts(parts, func(part int) {
		c0, c1 := span(nc, parts, part)
		if two {
			maxPool2x2(x.value, out.value, arg, false, c0, c1, h, w, oh, ow)
		} else {
			maxPoolWindows(x.value, out.value, arg, c0, c1, h, w, oh, ow, sh, sw, opt)
		}
	})
	t.record(out, func() {
		gx := x.gradBuf()
		// A window's element lies in its channel: the parts' gradients are disjoint.
		runParts(parts, func(part int) {
			c0, c1 := span(nc, parts, part)
			o0, o1 := c0*oh*ow, c1*oh*ow
			for o, g := range out.grad[o0:o1] {
				gx[arg[o0+o]] += g
			}
		})
	}, x)
	return out
}

// maxPoolWindows writes the maximum of every window of the images (h×w) c0 to c1−1 of x to out
// and the flat index of the element it came from to arg: the first maximum in row-major window
// order, or a NaN (which stops the scan of its window row) where the window holds one, as
// torch.max_pool2d propagates NaN.
func maxPoolWindows[T Float](x, out []T, arg []int, c0, c1, h, w, oh, ow, sh, sw int, opt Pool2DOptions) {
	for c := c0; c < c1; c++ {
		img := x[c*h*w : (c+1)*h*w]
		for y := 0; y < oh; y++ {
			for z := 0; z < ow; z++ {
				best, bi := T(math.Inf(-1)), -1
				for ki := 0; ki < opt.KH; ki++ {
					iy := y*sh - opt.PadH + ki
					if iy < 0 || iy >= h {
						continue
					}
					for kj := 0; kj < opt.KW; kj++ {
						ix := z*sw - opt.PadW + kj
						if ix < 0 || ix >= w {
							continue
						}
						if v := img[iy*w+ix]; bi < 0 || v > best || v != v {
							best, bi = v, iy*w+ix
							if v != v {
								break
							}
						}
					}
				}
				o := (c*oh+y)*ow + z
				out[o] = best
				arg[o] = c*h*w + bi
			}
		}
	}
}

// maxPool2x2 is maxPoolWindows for 2×2 windows at stride 2 without padding (the pooling of
// most CNNs) of x, or with relu of ReLU's values max(x, 0) without storing them, with the same
// choice of element: without branches on the data (comparisons of random activations
// mispredict) except for the rare window that holds a NaN. (relu is a branch the predictor
// always gets right; max(x, −∞) for the plain pool costs 1.35× its time.)
func maxPool2x2[T Float](x, out []T, arg []int, relu bool, c0, c1, h, w, oh, ow int) {
	for c := c0; c < c1; c++ {
		base := c * h * w
		for y := 0; y < oh; y++ {
			i0, i1 := base+2*y*w, base+(2*y+1)*w
			r0, r1 := x[i0:i0+w], x[i1:i1+w]
			o := (c*oh + y) * ow
			outRow, argRow := out[o:o+ow], arg[o:o+ow]
			for z := range outRow {
				i := 2 * z
				a, b, cc, d := r0[i], r0[i+1], r1[i], r1[i+1]
				if relu {
					a, b, cc, d = max(a, 0), max(b, 0), max(cc, 0), max(d, 0)
				}
				m := max(max(a, b), max(cc, d))
				if m != m {
					outRow[z], argRow[z] = maxPoolNaN(a, b, cc, d, i0+i, i1+i)
					continue
				}
				// the first maximum of each row, then row 1's only if strictly greater: the scan's
				// choice, by SETcc and CMOV, not branches
				k0 := i0 + i + b2i(b > a)
				k1 := i1 + i + b2i(d > cc)
				up := b2i(max(cc, d) > max(a, b))
				k0 += up * (k1 - k0) // (if up { k0 = k1 } compiles to a branch)
				v := x[k0]           // x[k0], not m: max(−0, +0) is +0 where the scan keeps −0
				if relu {
					v = m // = max(x[k0], 0): ReLU's values are never −0
				}
				outRow[z], argRow[z] = v, k0
			}
		}
	}
}

// ReLUMaxPool2D returns MaxPool2D(ReLU(x), opt) — the same values, and the same gradient into x
// bit for bit when the ReLU's output would feed nothing else (a ReLU layer followed by a
// max-pool layer) — without the ReLU's output and its gradient: for 2×2 windows at stride 2
// without padding (each element in at most one window) the window maxima of max(x, 0) are
// taken directly from x, and the reverse pass adds 0 + g (the ReLU's output gradient, a fresh
// buffer) to the chosen element where x > 0, as the two ops' passes do; elsewhere those add
// +0 to a gradient that is at least as fresh, which changes nothing. Other windows take
// MaxPool2D(ReLU(x)).
func (t *Tape[T]) ReLUMaxPool2D(x *Var[T], opt Pool2DOptions) *Var[T] {
	sh, sw, oh, ow, ok := t.poolGeom("MaxPool2D", x, opt)
	if !ok {
		return t.placeholder()
	}
	if opt.KH != 2 || opt.KW != 2 || sh != 2 || sw != 2 || opt.PadH != 0 || opt.PadW != 0 {
		return t.MaxPool2D(t.ReLU(x), opt)
	}
	nc, h, w := x.shape[0]*x.shape[1], x.shape[2], x.shape[3]
	out := t.newVar([]int{x.shape[0], x.shape[1], oh, ow}, false)
	arg := t.getInts(len(out.value))
	out.ints = arg
	parts := t.parts(nc, int64(len(x.value)), minParallelElems)
	runParts(parts, func(part int) {
		c0, c1 := span(nc, parts, part)
		maxPool2x2(x.value, out.value, arg, true, c0, c1, h, w, oh, ow)
	})
	xv := x.value
	t.record(out, func() {
		gx := x.gradBuf()
		runParts(parts, func(part int) {
			c0, c1 := span(nc, parts, part)
			o0, o1 := c0*oh*ow, c1*oh*ow
			var zero T
			for o, g := range out.grad[o0:o1] {
				if k := arg[o0+o]; xv[k] > 0 {
					gx[k] += zero + g
				}
			}
		})
	}, x)
	return out
}

// b2i is 1 for true and 0 for false (a SETcc, not a branch).
func b2i(b bool) int {
	var i int
	if b {
		i = 1
	}
	return i
}

// maxPoolNaN is maxPoolWindows' scan of one 2×2 window a b / c d (rows starting at flat
// indices i0 and i1) that holds a NaN.
func maxPoolNaN[T Float](a, b, c, d T, i0, i1 int) (T, int) {
	best, k := a, i0
	if a == a { // a NaN ends the scan of its row
		if b > best || b != b {
			best, k = b, i0+1
		}
	}
	if c > best || c != c {
		best, k = c, i1
		if c == c {
			if d > best || d != d {
				best, k = d, i1+1
			}
		}
	} else if d > best || d != d {
		best, k = d, i1+1
	}
	return best, k
}

// AvgPool2D returns the mean over each window of x (N, C, H, W) with zero padding counted in
// the divisor KH·KW (torch.nn.functional.avg_pool2d with count_include_pad=True, floor mode).
func (t *Tape[T]) AvgPool2D(x *Var[T], opt Pool2DOptions) *Var[T] {
	sh, sw, oh, ow, ok := t.poolGeom("AvgPool2D", x, opt)
	if !ok {
		return t.placeholder()
	}
	nc, h, w := x.shape[0]*x.shape[1], x.shape[2], x.shape[3]
	out := t.newVar([]int{x.shape[0], x.shape[1], oh, ow}, false)
	inv := 1 / T(opt.KH*opt.KW)
	visit := func(c, y, z int, fn func(i int)) {
		for ki := 0; ki < opt.KH; ki++ {
			iy := y*sh - opt.PadH + ki
			if iy < 0 || iy >= h {
				continue
			}
			for kj := 0; kj < opt.KW; kj++ {
				ix := z*sw - opt.PadW + kj
				if ix >= 0 && ix < w {
					fn(c*h*w + iy*w + ix)
				}
			}
		}
	}
	for c := 0; c < nc; c++ {
		for y := 0; y < oh; y++ {
			for z := 0; z < ow; z++ {
				var s T
				visit(c, y, z, func(i int) { s += x.value[i] })
				out.value[(c*oh+y)*ow+z] = s * inv
			}
		}
	}
	t.record(out, func() {
		gx := x.gradBuf()
		for c := 0; c < nc; c++ {
			for y := 0; y < oh; y++ {
				for z := 0; z < ow; z++ {
					g := out.grad[(c*oh+y)*ow+z] * inv
					visit(c, y, z, func(i int) { gx[i] += g })
				}
			}
		}
	}, x)
	return out
}

// GlobalAvgPool2D averages each channel of x (N, C, H, W) over its H·W positions: shape
// (N, C, 1, 1) (torch.nn.functional.adaptive_avg_pool2d(x, 1)).
func (t *Tape[T]) GlobalAvgPool2D(x *Var[T]) *Var[T] {
	if !t.check("GlobalAvgPool2D", x) {
		return t.placeholder()
	}
	if len(x.shape) != 4 || x.shape[2]*x.shape[3] == 0 {
		return t.failf("GlobalAvgPool2D: need a non-empty (N,C,H,W) input, got shape %v", x.shape)
	}
	hw := x.shape[2] * x.shape[3]
	nc := x.shape[0] * x.shape[1]
	out := t.newVar([]int{x.shape[0], x.shape[1], 1, 1}, false)
	inv := 1 / T(hw)
	for c := 0; c < nc; c++ {
		var s T
		for _, v := range x.value[c*hw : (c+1)*hw] {
			s += v
		}
		out.value[c] = s * inv
	}
	t.record(out, func() {
		gx := x.gradBuf()
		for c := 0; c < nc; c++ {
			g := out.grad[c] * inv
			dst := gx[c*hw : (c+1)*hw]
			for i := range dst {
				dst[i] += g
			}
		}
	}, x)
	return out
}
