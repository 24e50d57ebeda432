package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// node is one executable layer. forward computes out = f(in) for fc.block samples of n inputs
// each, laid out one after the other, sample-major (fc.block·n × inSize values in, as many rows
// out): row b·n+i is input i under sample fc.sample+b. Nodes that do not depend on the sample
// treat the fc.block·n rows alike. For inPlace nodes the executor passes the same slice as in and
// out.
type node interface {
	forward(fc *fwdCtx, in, out []float32, n int)
	inPlace() bool
	outSize() int
	// scratchSize is the shared scratch (float32 values) forward needs for blocks of B samples
	// of up to n inputs each under strategy st, at the posterior mean if mean.
	scratchSize(n, B int, st Strategy, mean bool) int64
	stochastic() bool
}

// activation is an elementwise nonlinearity.
type activation struct {
	op Op
	s  shape
}

func (a *activation) forward(fc *fwdCtx, in, out []float32, n int) {
	x := out[:fc.block*n*a.s.size()]
	switch a.op {
	case OpReLU:
		kernels.ReLU(x)
	case OpTanh:
		kernels.Tanh(x)
	case OpSigmoid:
		kernels.Sigmoid(x)
	case OpGELU:
		kernels.GELU(x)
	}
}
func (a *activation) inPlace() bool                                { return true }
func (a *activation) outSize() int                                 { return a.s.size() }
func (a *activation) scratchSize(int, int, Strategy, bool) int64   { return 0 }
func (a *activation) stochastic() bool                             { return false }
func (p *pool) inPlace() bool                                      { return false }
func (p *pool) outSize() int                                       { return p.out.size() }
func (p *pool) scratchSize(int, int, Strategy, bool) int64         { return 0 }
func (p *pool) stochastic() bool                                   { return false }
func (p *adaptivePool) inPlace() bool                              { return false }
func (p *adaptivePool) outSize() int                               { return p.out.size() }
func (p *adaptivePool) scratchSize(int, int, Strategy, bool) int64 { return 0 }
func (p *adaptivePool) stochastic() bool                           { return false }

// pool is MaxPool2d or AvgPool2d with PyTorch's semantics (padding, dilation for max pooling,
// ceil_mode, count_include_pad).
type pool struct {
	max                    bool
	kh, kw, sh, sw, ph, pw int
	dh, dw                 int
	countIncludePad        bool
	in, out                shape
}

func poolOut(in, k, s, p, d int, ceil bool) int {
	num := in + 2*p - d*(k-1) - 1
	if num < 0 {
		return 0
	}
	o := num / s
	if ceil && num%s != 0 {
		o++
		// PyTorch: the last window must start inside the input or left padding.
		if o*s >= in+p {
			o--
		}
	}
	return o + 1
}

func newPool(ls *LayerSpec, in shape) (*pool, error) {
	p := &pool{max: ls.Op == OpMaxPool2d, kh: ls.Kernel[0], kw: ls.Kernel[1],
		sh: ls.Stride[0], sw: ls.Stride[1], ph: ls.Padding[0], pw: ls.Padding[1],
		dh: ls.Dilation[0], dw: ls.Dilation[1], countIncludePad: ls.CountIncludePad, in: in}
	if p.sh == 0 && p.sw == 0 {
		p.sh, p.sw = p.kh, p.kw
	}
	if p.dh == 0 && p.dw == 0 {
		p.dh, p.dw = 1, 1
	}
	if p.kh < 1 || p.kw < 1 || p.sh < 1 || p.sw < 1 || p.dh < 1 || p.dw < 1 || p.ph < 0 || p.pw < 0 {
		return nil, fmt.Errorf("kernel %v, stride %v, padding %v, dilation %v are not valid", ls.Kernel, ls.Stride, ls.Padding, ls.Dilation)
	}
	if 2*p.ph > p.kh || 2*p.pw > p.kw {
		return nil, fmt.Errorf("padding %v must be at most half the kernel %v", ls.Padding, ls.Kernel)
	}
	if !p.max && (p.dh != 1 || p.dw != 1) {
		return nil, fmt.Errorf("avg pooling has no dilation")
	}
	if !spanFits(in.h, p.kh, p.ph, p.dh) || !spanFits(in.w, p.kw, p.pw, p.dw) {
		return nil, fmt.Errorf("output would be empty for input %v", in)
	}
	oh := poolOut(in.h, p.kh, p.sh, p.ph, p.dh, ls.CeilMode)
	ow := poolOut(in.w, p.kw, p.sw, p.pw, p.dw, ls.CeilMode)
	if oh < 1 || ow < 1 {
		return nil, fmt.Errorf("output would be empty for input %v", in)
	}
	p.out = shape{c: in.c, h: oh, w: ow}
	return p, nil
}

func (p *pool) forward(fc *fwdCtx, in, out []float32, n int) {
	ih, iw, oh, ow := p.in.h, p.in.w, p.out.h, p.out.w
	for img := 0; img < fc.block*n*p.in.c; img++ {
		src := in[img*ih*iw : (img+1)*ih*iw]
		dst := out[img*oh*ow : (img+1)*oh*ow]
		if p.max && p.simple2x2() && 2*oh <= ih && 2*ow <= iw {
			maxPool2x2(src, dst, iw, oh, ow)
			continue
		}
		for oy := 0; oy < oh; oy++ {
			y0 := oy*p.sh - p.ph
			for ox := 0; ox < ow; ox++ {
				x0 := ox*p.sw - p.pw
				if p.max {
					m := float32(math.Inf(-1))
					for ky := 0; ky < p.kh; ky++ {
						y := y0 + ky*p.dh
						if y < 0 || y >= ih {
							continue
						}
						for kx := 0; kx < p.kw; kx++ {
							x := x0 + kx*p.dw
							if x < 0 || x >= iw {
								continue
							}
							if v := src[y*iw+x]; v > m || v != v {
								m = v
							}
						}
					}
					dst[oy*ow+ox] = m
					continue
				}
				// Average pooling: the divisor follows PyTorch (window clipped to the padded input
				// when count_include_pad, else to the input).
				var sum float32
				yEnd, xEnd := min(y0+p.kh, ih+p.ph), min(x0+p.kw, iw+p.pw)
				cnt := (yEnd - y0) * (xEnd - x0)
				ya, yb := max(y0, 0), min(yEnd, ih)
				xa, xb := max(x0, 0), min(xEnd, iw)
				for y := ya; y < yb; y++ {
					for x := xa; x < xb; x++ {
						sum += src[y*iw+x]
					}
				}
				if !p.countIncludePad {
					cnt = (yb - ya) * (xb - xa)
				}
				dst[oy*ow+ox] = sum / float32(cnt)
			}
		}
	}
}

// simple2x2 reports the common 2×2, stride-2, unpadded, undilated window.
func (p *pool) simple2x2() bool {
	return p.kh == 2 && p.kw == 2 && p.sh == 2 && p.sw == 2 && p.ph == 0 && p.pw == 0 && p.dh == 1 && p.dw == 1
}

// maxPool2x2 is the 2×2 stride-2 max pool of one image plane (NaN propagates, as in PyTorch).
func maxPool2x2(src, dst []float32, iw, oh, ow int) {
	for oy := 0; oy < oh; oy++ {
		r0 := src[2*oy*iw : 2*oy*iw+2*ow]
		r1 := src[(2*oy+1)*iw : (2*oy+1)*iw+2*ow]
		d := dst[oy*ow : oy*ow+ow]
		for ox := range d {
			a, b, c, e := r0[2*ox], r0[2*ox+1], r1[2*ox], r1[2*ox+1]
			m := a
			if b > m || b != b {
				m = b
			}
			if c > m || c != c {
				m = c
			}
			if e > m || e != e {
				m = e
			}
			if a != a {
				m = a
			}
			d[ox] = m
		}
	}
}

// adaptivePool is AdaptiveAvgPool2d (PyTorch's start/end index rule).
type adaptivePool struct{ in, out shape }

func (p *adaptivePool) forward(fc *fwdCtx, in, out []float32, n int) {
	ih, iw, oh, ow := p.in.h, p.in.w, p.out.h, p.out.w
	for img := 0; img < fc.block*n*p.in.c; img++ {
		src := in[img*ih*iw : (img+1)*ih*iw]
		dst := out[img*oh*ow : (img+1)*oh*ow]
		for oy := 0; oy < oh; oy++ {
			y0, y1 := oy*ih/oh, ((oy+1)*ih+oh-1)/oh
			for ox := 0; ox < ow; ox++ {
				x0, x1 := ox*iw/ow, ((ox+1)*iw+ow-1)/ow
				var sum float32
				for y := y0; y < y1; y++ {
					for x := x0; x < x1; x++ {
						sum += src[y*iw+x]
					}
				}
				dst[oy*ow+ox] = sum / float32((y1-y0)*(x1-x0))
			}
		}
	}
}

// batchNorm is BatchNorm1d/2d in inference mode: y = x·scale + shift per channel, with scale and
// shift folded from the running statistics and the affine parameters at load time — one pair per
// member of an ensemble model (sample s uses member s mod K). After a deterministic Linear or
// Conv2d the builder merges it into that layer's output pass (dense.foldBatchNorm) and drops the
// node; the layer's weights are not copied, so a memory-mapped model file stays the only copy.
type batchNorm struct {
	s       shape
	members []bnMember
}

// bnMember is one network's folded BatchNorm: y = x·scale + shift per channel.
type bnMember struct{ scale, shift []float32 }

func (b *builder) batchNorm(ls *LayerSpec, in shape) (node, shape, error) {
	c := in.c
	if ls.In != 0 && ls.In != c {
		return nil, shape{}, fmt.Errorf("runtime: layer %q (batchnorm): num_features %d does not match the input %v", ls.Name, ls.In, in)
	}
	eps := ls.Eps
	if eps == 0 {
		eps = 1e-5
	}
	if !(eps > 0) || math.IsInf(eps, 0) {
		return nil, shape{}, fmt.Errorf("runtime: layer %q (batchnorm): eps %g is not a positive finite number", ls.Name, ls.Eps)
	}
	bn := &batchNorm{s: in}
	lc := *ls
	lc.In = c // num_features may be left out (0)
	decls := LayerTensors(&lc)
	defer func() { b.member = 0 }()
	for b.member = 0; b.member < b.m.members; b.member++ {
		t, err := b.layerTensors(ls.Name, decls, 0)
		if err != nil {
			return nil, shape{}, err
		}
		mean, variance, gamma, beta := t["running_mean"], t["running_var"], t["weight"], t["bias"]
		bm := bnMember{scale: make([]float32, c), shift: make([]float32, c)}
		for i := 0; i < c; i++ {
			if variance[i] < 0 {
				return nil, shape{}, fmt.Errorf("runtime: layer %q (batchnorm): tensor %q: running_var[%d] = %g is negative",
					ls.Name, b.fullName(ls.Name, "running_var"), i, variance[i])
			}
			s := 1 / math.Sqrt(float64(variance[i])+eps)
			if math.IsInf(s, 0) || float32(s) > math.MaxFloat32 {
				return nil, shape{}, fmt.Errorf("runtime: layer %q (batchnorm): channel %d: 1/√(running_var %g + eps %g) is not a finite float32", ls.Name, i, variance[i], eps)
			}
			g, be := 1.0, 0.0
			if gamma != nil {
				g, be = float64(gamma[i]), float64(beta[i])
			}
			bm.scale[i] = float32(s * g)
			bm.shift[i] = float32(be - float64(mean[i])*s*g)
		}
		bn.members = append(bn.members, bm)
	}
	return bn, in, nil
}

func (bn *batchNorm) forward(fc *fwdCtx, _, x []float32, n int) {
	hw := bn.s.h * bn.s.w
	for i := 0; i < fc.block*n; i++ {
		bm := &bn.members[(fc.sample+i/n)%len(bn.members)]
		for c := 0; c < bn.s.c; c++ {
			v := x[(i*bn.s.c+c)*hw : (i*bn.s.c+c+1)*hw]
			s, t := bm.scale[c], bm.shift[c]
			for j := range v {
				v[j] = v[j]*s + t
			}
		}
	}
}
func (bn *batchNorm) inPlace() bool                              { return true }
func (bn *batchNorm) outSize() int                               { return bn.s.size() }
func (bn *batchNorm) scratchSize(int, int, Strategy, bool) int64 { return 0 }
func (bn *batchNorm) stochastic() bool                           { return len(bn.members) > 1 }

// residual is body(x) + shortcut(x); the executor runs it (it needs extra activation buffers).
type residual struct {
	body, shortcut []node
	s              shape
}

func (r *residual) forward(*fwdCtx, []float32, []float32, int) {
	panic("runtime: residual blocks are run by the executor")
}
func (r *residual) inPlace() bool { return false }
func (r *residual) outSize() int  { return r.s.size() }
func (r *residual) scratchSize(n, B int, st Strategy, mean bool) int64 {
	s := int64(0)
	for _, c := range r.body {
		s = max(s, c.scratchSize(n, B, st, mean))
	}
	for _, c := range r.shortcut {
		s = max(s, c.scratchSize(n, B, st, mean))
	}
	return s
}
func (r *residual) stochastic() bool {
	for _, c := range r.body {
		if c.stochastic() {
			return true
		}
	}
	for _, c := range r.shortcut {
		if c.stochastic() {
			return true
		}
	}
	return false
}
