package runtime_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// The layer implementations against naive float64 code written from PyTorch's definitions
// (Conv2d, MaxPool2d, AvgPool2d, AdaptiveAvgPool2d, BatchNorm in eval mode, residual sums).

// act is one input's activation: c×h×w (h = w = 1 for feature vectors).
type act struct {
	c, h, w int
	v       []float64
}

func (a act) at(c, y, x int) float64 { return a.v[(c*a.h+y)*a.w+x] }

// naiveNet evaluates a spec at its posterior mean weights: deterministic weights, ffg weight_mean
// and bias_mean, or the fa mean c.
type naiveNet struct {
	ts    runtime.Tensors
	faOff map[string]int
}

func newNaiveNet(spec *runtime.Spec, ts runtime.Tensors) *naiveNet {
	n := &naiveNet{ts: ts, faOff: map[string]int{}}
	off := 0
	var walk func(ls []runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for _, l := range ls {
			walk(l.Body)
			walk(l.Shortcut)
			if l.Posterior != nil && l.Posterior.Kind == runtime.KindFA {
				n.faOff[l.Name] = off
				k := l.In
				if l.Op == runtime.OpConv2d {
					k *= l.Kernel[0] * l.Kernel[1]
				}
				if l.Bias {
					k++
				}
				off += l.Out * k
			}
		}
	}
	walk(spec.Layers)
	return n
}

// weights returns the layer's weight (Out × k, PyTorch layout) and bias (nil without one).
func (n *naiveNet) weights(l runtime.LayerSpec, k int) (w, b []float64) {
	p := l.Posterior
	switch {
	case p == nil || p.Kind == runtime.KindDeterministic:
		w = to64s(n.ts[l.Name+".weight"].Data)
		if l.Bias {
			b = to64s(n.ts[l.Name+".bias"].Data)
		}
	case p.Kind == runtime.KindFFG:
		w = to64s(n.ts[l.Name+".weight_mean"].Data)
		if l.Bias {
			b = to64s(n.ts[l.Name+".bias_mean"].Data)
		}
	case p.Kind == runtime.KindFA:
		c := to64s(n.ts["fa.mean"].Data)[n.faOff[l.Name]:]
		w = c[:l.Out*k]
		if l.Bias {
			b = c[l.Out*k : l.Out*k+l.Out]
		}
	}
	return w, b
}

func def(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

// poolOutSize is PyTorch's pooling_output_shape.
func poolOutSize(in, k, s, p, d int, ceil bool) int {
	num := in + 2*p - d*(k-1) - 1
	if ceil {
		num += s - 1
	}
	o := int(math.Floor(float64(num)/float64(s))) + 1
	if ceil && (o-1)*s >= in+p {
		o--
	}
	return o
}

func (n *naiveNet) seq(ls []runtime.LayerSpec, a act) act {
	for _, l := range ls {
		a = n.layer(l, a)
	}
	return a
}

func (n *naiveNet) layer(l runtime.LayerSpec, a act) act {
	switch l.Op {
	case runtime.OpLinear:
		w, b := n.weights(l, l.In)
		o := act{c: l.Out, h: 1, w: 1, v: make([]float64, l.Out)}
		for i := 0; i < l.Out; i++ {
			s := 0.0
			if b != nil {
				s = b[i]
			}
			for j := 0; j < l.In; j++ {
				s += w[i*l.In+j] * a.v[j]
			}
			o.v[i] = s
		}
		return o
	case runtime.OpConv2d:
		kh, kw := l.Kernel[0], l.Kernel[1]
		sh, sw := def(l.Stride[0], 1), def(l.Stride[1], 1)
		dh, dw := def(l.Dilation[0], 1), def(l.Dilation[1], 1)
		ph, pw := l.Padding[0], l.Padding[1]
		oh := (a.h+2*ph-dh*(kh-1)-1)/sh + 1
		ow := (a.w+2*pw-dw*(kw-1)-1)/sw + 1
		w, b := n.weights(l, l.In*kh*kw)
		o := act{c: l.Out, h: oh, w: ow, v: make([]float64, l.Out*oh*ow)}
		for co := 0; co < l.Out; co++ {
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					s := 0.0
					if b != nil {
						s = b[co]
					}
					for ci := 0; ci < l.In; ci++ {
						for ky := 0; ky < kh; ky++ {
							for kx := 0; kx < kw; kx++ {
								iy, ix := y*sh-ph+ky*dh, x*sw-pw+kx*dw
								if iy < 0 || iy >= a.h || ix < 0 || ix >= a.w {
									continue
								}
								s += w[((co*l.In+ci)*kh+ky)*kw+kx] * a.at(ci, iy, ix)
							}
						}
					}
					o.v[(co*oh+y)*ow+x] = s
				}
			}
		}
		return o
	case runtime.OpReLU, runtime.OpTanh, runtime.OpSigmoid, runtime.OpGELU:
		o := act{c: a.c, h: a.h, w: a.w, v: make([]float64, len(a.v))}
		for i, x := range a.v {
			switch l.Op {
			case runtime.OpReLU:
				o.v[i] = math.Max(x, 0)
			case runtime.OpTanh:
				o.v[i] = math.Tanh(x)
			case runtime.OpSigmoid:
				o.v[i] = 1 / (1 + math.Exp(-x))
			case runtime.OpGELU:
				o.v[i] = 0.5 * x * (1 + math.Erf(x/math.Sqrt2))
			}
		}
		return o
	case runtime.OpFlatten:
		return act{c: len(a.v), h: 1, w: 1, v: a.v}
	case runtime.OpDropout, runtime.OpIdentity:
		return a
	case runtime.OpBatchNorm:
		eps := l.Eps
		if eps == 0 {
			eps = 1e-5
		}
		o := act{c: a.c, h: a.h, w: a.w, v: make([]float64, len(a.v))}
		mean, vr := n.ts[l.Name+".running_mean"].Data, n.ts[l.Name+".running_var"].Data
		for c := 0; c < a.c; c++ {
			g, be := 1.0, 0.0
			if l.Affine {
				g, be = float64(n.ts[l.Name+".weight"].Data[c]), float64(n.ts[l.Name+".bias"].Data[c])
			}
			for i := c * a.h * a.w; i < (c+1)*a.h*a.w; i++ {
				o.v[i] = (a.v[i]-float64(mean[c]))/math.Sqrt(float64(vr[c])+eps)*g + be
			}
		}
		return o
	case runtime.OpMaxPool2d, runtime.OpAvgPool2d:
		kh, kw := l.Kernel[0], l.Kernel[1]
		sh, sw := def(l.Stride[0], kh), def(l.Stride[1], kw)
		dh, dw := def(l.Dilation[0], 1), def(l.Dilation[1], 1)
		ph, pw := l.Padding[0], l.Padding[1]
		oh := poolOutSize(a.h, kh, sh, ph, dh, l.CeilMode)
		ow := poolOutSize(a.w, kw, sw, pw, dw, l.CeilMode)
		o := act{c: a.c, h: oh, w: ow, v: make([]float64, a.c*oh*ow)}
		for c := 0; c < a.c; c++ {
			for y := 0; y < oh; y++ {
				for x := 0; x < ow; x++ {
					var r float64
					if l.Op == runtime.OpMaxPool2d {
						r = math.Inf(-1)
						for ky := 0; ky < kh; ky++ {
							for kx := 0; kx < kw; kx++ {
								iy, ix := y*sh-ph+ky*dh, x*sw-pw+kx*dw
								if iy >= 0 && iy < a.h && ix >= 0 && ix < a.w {
									r = math.Max(r, a.at(c, iy, ix))
								}
							}
						}
					} else {
						// PyTorch's avg_pool2d: the window is clipped to the padded input for the
						// divisor when count_include_pad, else to the input.
						hs, ws := y*sh-ph, x*sw-pw
						he, we := min(hs+kh, a.h+ph), min(ws+kw, a.w+pw)
						poolSize := (he - hs) * (we - ws)
						hs, ws = max(hs, 0), max(ws, 0)
						he, we = min(he, a.h), min(we, a.w)
						sum := 0.0
						for iy := hs; iy < he; iy++ {
							for ix := ws; ix < we; ix++ {
								sum += a.at(c, iy, ix)
							}
						}
						div := poolSize
						if !l.CountIncludePad {
							div = (he - hs) * (we - ws)
						}
						r = sum / float64(div)
					}
					o.v[(c*oh+y)*ow+x] = r
				}
			}
		}
		return o
	case runtime.OpAdaptiveAvgPool2d:
		oh, ow := l.OutputSize[0], l.OutputSize[1]
		o := act{c: a.c, h: oh, w: ow, v: make([]float64, a.c*oh*ow)}
		for c := 0; c < a.c; c++ {
			for y := 0; y < oh; y++ {
				y0 := int(math.Floor(float64(y*a.h) / float64(oh)))
				y1 := int(math.Ceil(float64((y+1)*a.h) / float64(oh)))
				for x := 0; x < ow; x++ {
					x0 := int(math.Floor(float64(x*a.w) / float64(ow)))
					x1 := int(math.Ceil(float64((x+1)*a.w) / float64(ow)))
					sum := 0.0
					for iy := y0; iy < y1; iy++ {
						for ix := x0; ix < x1; ix++ {
							sum += a.at(c, iy, ix)
						}
					}
					o.v[(c*oh+y)*ow+x] = sum / float64((y1-y0)*(x1-x0))
				}
			}
		}
		return o
	case runtime.OpResidual:
		body := n.seq(l.Body, a)
		sc := n.seq(l.Shortcut, a)
		o := act{c: body.c, h: body.h, w: body.w, v: make([]float64, len(body.v))}
		for i := range o.v {
			o.v[i] = body.v[i] + sc.v[i]
		}
		return o
	}
	panic("naive: unknown op " + string(l.Op))
}

func conv(name string, in, out int, k, s, p, d [2]int, bias bool) runtime.LayerSpec {
	return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Kernel: k, Stride: s, Padding: p,
		Dilation: d, Bias: bias}
}

func regression(in []int, layers ...runtime.LayerSpec) func() *runtime.Spec {
	return func() *runtime.Spec {
		// A deep copy: tests edit the layers (posteriors) of the Spec they get.
		data, err := json.Marshal(layers)
		if err != nil {
			panic(err)
		}
		var own []runtime.LayerSpec
		if err := json.Unmarshal(data, &own); err != nil {
			panic(err)
		}
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: in, Layers: own}
	}
}

var (
	flat    = runtime.LayerSpec{Name: "flat", Op: runtime.OpFlatten}
	layerNN = []struct {
		name string
		spec func() *runtime.Spec
	}{
		{"conv-stride-pad-maxpool-ceil", regression([]int{2, 9, 8},
			conv("c", 2, 3, [2]int{3, 3}, [2]int{2, 2}, [2]int{1, 1}, [2]int{}, true),
			runtime.LayerSpec{Name: "r", Op: runtime.OpReLU},
			runtime.LayerSpec{Name: "p", Op: runtime.OpMaxPool2d, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true},
			flat,
			runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: 3 * 3 * 3, Out: 4, Bias: true})},
		{"conv-dilated-rect-avgpool-include-pad", regression([]int{3, 10, 9},
			conv("c", 3, 2, [2]int{3, 2}, [2]int{1, 2}, [2]int{2, 1}, [2]int{2, 1}, true),
			runtime.LayerSpec{Name: "t", Op: runtime.OpTanh},
			runtime.LayerSpec{Name: "p", Op: runtime.OpAvgPool2d, Kernel: [2]int{3, 3}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1},
				CeilMode: true, CountIncludePad: true},
			flat)},
		{"pointwise-batchnorm-avgpool-exclude-pad-adaptive", regression([]int{3, 7, 7},
			conv("c", 3, 4, [2]int{1, 1}, [2]int{}, [2]int{}, [2]int{}, false),
			runtime.LayerSpec{Name: "bn", Op: runtime.OpBatchNorm, In: 4, Affine: true, Eps: 1e-3},
			runtime.LayerSpec{Name: "s", Op: runtime.OpSigmoid},
			runtime.LayerSpec{Name: "p", Op: runtime.OpAvgPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true},
			runtime.LayerSpec{Name: "a", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{3, 2}},
			flat)},
		{"residual-conv-shortcut-dilated-maxpool", regression([]int{2, 8, 8},
			runtime.LayerSpec{Name: "res", Op: runtime.OpResidual,
				Body: []runtime.LayerSpec{
					conv("b1", 2, 3, [2]int{3, 3}, [2]int{}, [2]int{1, 1}, [2]int{}, true),
					{Name: "bbn", Op: runtime.OpBatchNorm, In: 3},
					{Name: "g", Op: runtime.OpGELU},
					conv("b2", 3, 3, [2]int{3, 3}, [2]int{}, [2]int{2, 2}, [2]int{2, 2}, false),
				},
				Shortcut: []runtime.LayerSpec{conv("sc", 2, 3, [2]int{1, 1}, [2]int{}, [2]int{}, [2]int{}, true)}},
			runtime.LayerSpec{Name: "res2", Op: runtime.OpResidual, Body: []runtime.LayerSpec{{Name: "r", Op: runtime.OpReLU}}},
			runtime.LayerSpec{Name: "p", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1},
				Dilation: [2]int{2, 2}},
			runtime.LayerSpec{Name: "a", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{2, 3}},
			flat,
			runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: 18, Out: 3, Bias: true})},
		{"maxpool-ceil-last-window-in-padding", regression([]int{1, 5, 6},
			runtime.LayerSpec{Name: "p", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true},
			runtime.LayerSpec{Name: "q", Op: runtime.OpAvgPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}, Padding: [2]int{1, 1}, CeilMode: true},
			flat)},
		{"mlp-batchnorm1d", regression([]int{6},
			runtime.LayerSpec{Name: "l1", Op: runtime.OpLinear, In: 6, Out: 5, Bias: true},
			runtime.LayerSpec{Name: "bn", Op: runtime.OpBatchNorm, In: 5, Affine: true},
			runtime.LayerSpec{Name: "g", Op: runtime.OpGELU},
			runtime.LayerSpec{Name: "l2", Op: runtime.OpLinear, In: 5, Out: 2})},
	}
)

// withPosterior returns spec with every Linear and Conv2d layer given posterior p (nil keeps them
// deterministic).
func withPosterior(spec *runtime.Spec, p func() *runtime.PosteriorSpec) *runtime.Spec {
	if p == nil {
		return spec
	}
	found := false
	var walk func(ls []runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for i := range ls {
			if ls[i].Op == runtime.OpLinear || ls[i].Op == runtime.OpConv2d {
				ls[i].Posterior = p()
				found = true
			}
			walk(ls[i].Body)
			walk(ls[i].Shortcut)
		}
	}
	walk(spec.Layers)
	if found && p().Kind == runtime.KindFA {
		spec.FA = &runtime.FASpec{Rank: 2}
	}
	return spec
}

// TestLayersAgainstNaive: deterministic networks (and the same networks with ffg and fa
// posteriors under the Mean option) match naive float64 code within 1e-5 relative.
func TestLayersAgainstNaive(t *testing.T) {
	posts := []struct {
		name string
		p    func() *runtime.PosteriorSpec
	}{{"deterministic", nil}, {"ffg-mean", ffgPost}, {"fa-mean", faPosterior}}
	for _, c := range layerNN {
		for _, post := range posts {
			t.Run(c.name+"/"+post.name, func(t *testing.T) {
				spec := withPosterior(c.spec(), post.p)
				ts := randomTensors(spec, 21)
				m := newModel(t, spec, ts)
				const n = 3
				xs := randomInputs(m, n, 22)
				for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
					out := predictAll(t, m, runtime.Options{Mean: post.p != nil, KeepSamples: true, MaxBatch: 2, Strategy: st}, xs)
					nn := newNaiveNet(spec, ts)
					in := m.InputSize()
					for i := 0; i < n; i++ {
						s := spec.InputShape
						a := act{c: s[0], h: 1, w: 1, v: to64s(xs[i*in : (i+1)*in])}
						if len(s) == 3 {
							a.h, a.w = s[1], s[2]
						}
						want := nn.seq(spec.Layers, a).v
						got := out[i].Outputs
						if len(got) != len(want) {
							t.Fatalf("input %d: %d outputs, naive %d", i, len(got), len(want))
						}
						for j := range want {
							if !(math.Abs(float64(got[j])-want[j]) <= 1e-5*math.Max(1, math.Abs(want[j]))) {
								t.Errorf("%v: input %d, output %d: %.7g, naive %.7g", st, i, j, got[j], want[j])
							}
							if math.Float32bits(out[i].Mean[j]) != math.Float32bits(got[j]) || out[i].EpistemicVar[j] != 0 {
								t.Errorf("%v: input %d, output %d: one sample but Mean %v, EpistemicVar %v", st, i, j, out[i].Mean[j], out[i].EpistemicVar[j])
							}
						}
					}
				}
			})
		}
	}
}

// TestActivationValues: the values of one example's forward pass, counted by hand — the input,
// then every layer's output, a residual block's inner layers included.
func TestActivationValues(t *testing.T) {
	conv := func(name string, in, out int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Bias: true, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}}
	}
	for _, tc := range []struct {
		name string
		spec *runtime.Spec
		want int64
	}{
		{"mlp", &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{4},
			Layers: []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: 4, Out: 3, Bias: true}, {Name: "1", Op: runtime.OpReLU},
				{Name: "2", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true}}}, 4 + 3 + 3 + 2},
		// 2×6×6 input; conv to 3×6×6 (108); a residual block: conv 3→3 (108), ReLU (108), its
		// own output (108); max-pool to 3×3×3 (27); flatten (a view: nothing new); linear to 2.
		{"cnn", &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 6, 6},
			Layers: []runtime.LayerSpec{conv("0", 2, 3),
				{Name: "1", Op: runtime.OpResidual, Body: []runtime.LayerSpec{conv("c", 3, 3), {Name: "r", Op: runtime.OpReLU}}},
				{Name: "2", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}},
				{Name: "3", Op: runtime.OpFlatten}, {Name: "4", Op: runtime.OpLinear, In: 27, Out: 2, Bias: true}}}, 72 + 108 + 108 + 108 + 108 + 27 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newModel(t, tc.spec, randomTensors(tc.spec, 1))
			if got := m.ActivationValues(); got != tc.want {
				t.Errorf("ActivationValues = %d, want %d", got, tc.want)
			}
		})
	}
}
