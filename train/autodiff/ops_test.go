package autodiff

import (
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// Forward values are compared with naive float64 references written independently of the ops.

func randSlice(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = r.NormFloat64()
	}
	return x
}

func assertClose(t *testing.T, name string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: got %d values, want %d", name, len(got), len(want))
	}
	for i := range got {
		if d := math.Abs(got[i] - want[i]); !(d <= tol*math.Max(1, math.Abs(want[i]))) {
			t.Fatalf("%s: element %d: got %.12g, want %.12g", name, i, got[i], want[i])
		}
	}
}

func assertShape(t *testing.T, name string, got []int, want ...int) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: shape %v, want %v", name, got, want)
	}
}

func mustOK[T Float](t *testing.T, tp *Tape[T]) {
	t.Helper()
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestMatMulForward(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for _, tc := range []struct {
		m, k, n        int
		transA, transB bool
	}{{3, 4, 5, false, false}, {3, 4, 5, true, false}, {2, 7, 3, false, true}, {5, 1, 2, true, true}, {1, 1, 1, false, false}} {
		a, b := randSlice(r, tc.m*tc.k), randSlice(r, tc.k*tc.n)
		at := func(i, p int) float64 {
			if tc.transA {
				return a[p*tc.m+i]
			}
			return a[i*tc.k+p]
		}
		bt := func(p, j int) float64 {
			if tc.transB {
				return b[j*tc.k+p]
			}
			return b[p*tc.n+j]
		}
		want := make([]float64, tc.m*tc.n)
		for i := 0; i < tc.m; i++ {
			for j := 0; j < tc.n; j++ {
				for p := 0; p < tc.k; p++ {
					want[i*tc.n+j] += at(i, p) * bt(p, j)
				}
			}
		}
		tp := NewTape[float64]()
		sa, sb := []int{tc.m, tc.k}, []int{tc.k, tc.n}
		if tc.transA {
			sa = []int{tc.k, tc.m}
		}
		if tc.transB {
			sb = []int{tc.n, tc.k}
		}
		c := tp.MatMulTrans(tp.Const(a, sa...), tp.Const(b, sb...), tc.transA, tc.transB)
		mustOK(t, tp)
		assertShape(t, "MatMul", c.Shape(), tc.m, tc.n)
		assertClose(t, "MatMul", c.Value(), want, 1e-12)
	}
}

func TestBroadcastForward(t *testing.T) {
	r := rand.New(rand.NewPCG(2, 2))
	a, b := randSlice(r, 3*1*4), randSlice(r, 2*1)
	tp := NewTape[float64]()
	va, vb := tp.Const(a, 3, 1, 4), tp.Const(b, 2, 1)
	for _, tc := range []struct {
		name string
		got  *Var[float64]
		f    func(x, y float64) float64
	}{
		{"Add", tp.Add(va, vb), func(x, y float64) float64 { return x + y }},
		{"Sub", tp.Sub(va, vb), func(x, y float64) float64 { return x - y }},
		{"Mul", tp.Mul(va, vb), func(x, y float64) float64 { return x * y }},
		{"Div", tp.Div(va, vb), func(x, y float64) float64 { return x / y }},
	} {
		mustOK(t, tp)
		assertShape(t, tc.name, tc.got.Shape(), 3, 2, 4)
		want := make([]float64, 24)
		for i := 0; i < 3; i++ {
			for j := 0; j < 2; j++ {
				for k := 0; k < 4; k++ {
					want[(i*2+j)*4+k] = tc.f(a[i*4+k], b[j])
				}
			}
		}
		assertClose(t, tc.name, tc.got.Value(), want, 1e-15)
	}
	// Incompatible shapes are an error, not a panic.
	tp.Add(tp.Const(a, 3, 4), tp.Const(randSlice(r, 3), 3))
	if tp.Err() == nil {
		t.Fatal("Add of (3,4) and (3) did not fail")
	}
}

func TestReductionsAndShapesForward(t *testing.T) {
	x := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24} // (2,3,4)
	tp := NewTape[float64]()
	v := tp.Const(x, 2, 3, 4)
	s1 := tp.SumAxis(v, 1, false)
	assertShape(t, "SumAxis", s1.Shape(), 2, 4)
	assertClose(t, "SumAxis", s1.Value(), []float64{15, 18, 21, 24, 51, 54, 57, 60}, 0)
	m2 := tp.MeanAxis(v, -1, true)
	assertShape(t, "MeanAxis", m2.Shape(), 2, 3, 1)
	assertClose(t, "MeanAxis", m2.Value(), []float64{2.5, 6.5, 10.5, 14.5, 18.5, 22.5}, 1e-15)
	assertClose(t, "Sum", tp.Sum(v).Value(), []float64{300}, 0)
	assertClose(t, "Mean", tp.Mean(v).Value(), []float64{12.5}, 0)
	p := tp.Permute(v, 2, 0, 1)
	assertShape(t, "Permute", p.Shape(), 4, 2, 3)
	want := make([]float64, 24)
	for i := 0; i < 2; i++ {
		for j := 0; j < 3; j++ {
			for k := 0; k < 4; k++ {
				want[(k*2+i)*3+j] = x[(i*3+j)*4+k]
			}
		}
	}
	assertClose(t, "Permute", p.Value(), want, 0)
	tr := tp.Transpose(tp.Const(x[:6], 2, 3))
	assertClose(t, "Transpose", tr.Value(), []float64{1, 4, 2, 5, 3, 6}, 0)
	sl := tp.Slice(v, 2, 3, 4) // last column: a bias column
	assertShape(t, "Slice", sl.Shape(), 2, 3, 1)
	assertClose(t, "Slice", sl.Value(), []float64{4, 8, 12, 16, 20, 24}, 0)
	cc := tp.Concat(1, tp.Const([]float64{1, 2}, 2, 1), tp.Const([]float64{3, 4, 5, 6}, 2, 2))
	assertClose(t, "Concat", cc.Value(), []float64{1, 3, 4, 2, 5, 6}, 0)
	rs := tp.Reshape(v, -1, 6)
	assertShape(t, "Reshape", rs.Shape(), 4, 6)
	g := tp.Gather(tp.Const(x[:4], 4), []int{3, 3, 0}, 3)
	assertClose(t, "Gather", g.Value(), []float64{4, 4, 1}, 0)
	sc := tp.Scatter(tp.Const([]float64{1, 2, 3}, 3), []int{1, 1, 3}, 2, 2)
	assertClose(t, "Scatter", sc.Value(), []float64{0, 3, 0, 3}, 0)
	d := tp.Diag(tp.Const(x[:18], 2, 3, 3))
	assertClose(t, "Diag", d.Value(), []float64{1, 5, 9, 10, 14, 18}, 0)
	de := tp.DiagEmbed(tp.Const([]float64{1, 2}, 2))
	assertClose(t, "DiagEmbed", de.Value(), []float64{1, 0, 0, 2}, 0)
	mustOK(t, tp)
	if got := TrilIndices(3, -1); !slices.Equal(got, []int{3, 6, 7}) {
		t.Fatalf("TrilIndices(3,-1) = %v", got)
	}
	if got := TrilIndices(2, 0); !slices.Equal(got, []int{0, 2, 3}) {
		t.Fatalf("TrilIndices(2,0) = %v", got)
	}
}

func TestVecToCholForward(t *testing.T) {
	tp := NewTape[float64]()
	v := []float64{0, 1, -2, 7, 8, 9}
	l := tp.VecToChol(tp.Const(v, 6))
	mustOK(t, tp)
	sp := func(x float64) float64 { return math.Log(1 + math.Exp(x)) }
	want := []float64{sp(0), 0, 0, 7, sp(1), 0, 8, 9, sp(-2)}
	assertClose(t, "VecToChol", l.Value(), want, 1e-15)
	tp.VecToChol(tp.Const(v[:5], 5))
	if tp.Err() == nil {
		t.Fatal("VecToChol of length 5 did not fail")
	}
}

func TestUnaryForward(t *testing.T) {
	x := []float64{-800, -30, -1, -0.25, 0, 0.25, 1, 30, 800}
	tp := NewTape[float64]()
	v := tp.Const(x, len(x))
	type ref func(float64) float64
	for _, tc := range []struct {
		name string
		got  *Var[float64]
		f    ref
	}{
		{"Softplus", tp.Softplus(v), func(x float64) float64 {
			if x > 30 {
				return x // log(1+e^x) = x + log(1+e^-x) ≈ x to double precision beyond ~37; 1e-13 here
			}
			return math.Log(1 + math.Exp(x))
		}},
		{"Sigmoid", tp.Sigmoid(v), func(x float64) float64 {
			if x < -700 {
				return 0
			}
			return 1 / (1 + math.Exp(-x))
		}},
		{"Tanh", tp.Tanh(v), math.Tanh},
		{"ReLU", tp.ReLU(v), func(x float64) float64 { return math.Max(x, 0) }},
		{"Abs", tp.Abs(v), math.Abs},
		{"Square", tp.Square(v), func(x float64) float64 { return x * x }},
		{"GELU", tp.GELU(v), func(x float64) float64 { return x * 0.5 * math.Erfc(-x/math.Sqrt2) }},
		{"Clamp", tp.Clamp(v, -1, 0.5), func(x float64) float64 { return math.Min(math.Max(x, -1), 0.5) }},
		{"Neg", tp.Neg(v), func(x float64) float64 { return -x }},
	} {
		mustOK(t, tp)
		want := make([]float64, len(x))
		for i, xi := range x {
			want[i] = tc.f(xi)
		}
		assertClose(t, tc.name, tc.got.Value(), want, 1e-12)
	}
	// Softplus must be finite and exact where the naive formula under/overflows.
	sp := tp.Softplus(v).Value()
	if sp[0] != math.Exp(-800) || sp[8] != 800 || math.IsInf(sp[8], 0) {
		t.Fatalf("Softplus(±800) = %v, %v", sp[0], sp[8])
	}
	if g := tp.GELU(tp.Scalar(1)).Item(); !(math.Abs(g-0.8413447460685429) <= 1e-15) {
		t.Fatalf("GELU(1) = %v", g)
	}
}

// TestClampGradient checks PyTorch's convention: gradient 1 on the closed interval [lo, hi].
func TestClampGradient(t *testing.T) {
	tp := NewTape[float64]()
	x := tp.Leaf([]float64{-2, -1, 0, 1, 2}, 5)
	if err := tp.Backward(tp.Sum(tp.Clamp(x, -1, 1))); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "Clamp grad", x.Grad(), []float64{0, 1, 1, 1, 0}, 0)
}

func TestSoftmaxCrossEntropyForward(t *testing.T) {
	logits := []float64{1, 2, 3, 1000, 1000, -1000}
	tp := NewTape[float64]()
	v := tp.Const(logits, 2, 3)
	sm := tp.Softmax(v).Value()
	z := math.Exp(1) + math.Exp(2) + math.Exp(3)
	assertClose(t, "Softmax", sm, []float64{math.Exp(1) / z, math.Exp(2) / z, math.Exp(3) / z, 0.5, 0.5, 0}, 1e-14)
	ls := tp.LogSoftmax(v).Value()
	assertClose(t, "LogSoftmax", ls[:3], []float64{1 - math.Log(z), 2 - math.Log(z), 3 - math.Log(z)}, 1e-14)
	assertClose(t, "LogSoftmax stable", ls[3:5], []float64{-math.Ln2, -math.Ln2}, 1e-14)
	nll := tp.NLLPerExample(v, []int{0, 1}).Value()
	assertClose(t, "NLL", nll, []float64{math.Log(z) - 1, math.Ln2}, 1e-14)
	ce := tp.CrossEntropy(v, []int{0, 1}).Item()
	assertClose(t, "CrossEntropy", []float64{ce}, []float64{(math.Log(z) - 1 + math.Ln2) / 2}, 1e-14)
	mustOK(t, tp)
	tp.CrossEntropy(v, []int{0, 3})
	if tp.Err() == nil {
		t.Fatal("label 3 of 3 classes did not fail")
	}
}

func TestGaussianNLLForward(t *testing.T) {
	tp := NewTape[float64]()
	mu, y := tp.Const([]float64{0, 1}, 2), tp.Const([]float64{1, 3}, 2)
	got := tp.GaussianNLL(mu, y, tp.Scalar(4)).Item()
	// ½(τ d² − log τ + log 2π), d = 1, 2, τ = 4.
	want := 0.5 * ((4*1 - math.Log(4) + math.Log(2*math.Pi)) + (4*4 - math.Log(4) + math.Log(2*math.Pi))) / 2
	assertClose(t, "GaussianNLL", []float64{got}, []float64{want}, 1e-14)
	mustOK(t, tp)
}

// naiveConv is a direct 7-loop convolution.
func naiveConv(x []float64, xs []int, w []float64, ws []int, b []float64, o Conv2DOptions) ([]float64, int, int) {
	n, c, h, wd := xs[0], xs[1], xs[2], xs[3]
	co, kh, kw := ws[0], ws[2], ws[3]
	sh, sw, dh, dw := orOne(o.StrideH), orOne(o.StrideW), orOne(o.DilH), orOne(o.DilW)
	oh := (h+2*o.PadH-dh*(kh-1)-1)/sh + 1
	ow := (wd+2*o.PadW-dw*(kw-1)-1)/sw + 1
	out := make([]float64, n*co*oh*ow)
	for in := 0; in < n; in++ {
		for oc := 0; oc < co; oc++ {
			for y := 0; y < oh; y++ {
				for z := 0; z < ow; z++ {
					s := 0.0
					if b != nil {
						s = b[oc]
					}
					for ic := 0; ic < c; ic++ {
						for i := 0; i < kh; i++ {
							for j := 0; j < kw; j++ {
								iy, ix := y*sh-o.PadH+i*dh, z*sw-o.PadW+j*dw
								if iy >= 0 && iy < h && ix >= 0 && ix < wd {
									s += x[((in*c+ic)*h+iy)*wd+ix] * w[((oc*c+ic)*kh+i)*kw+j]
								}
							}
						}
					}
					out[((in*co+oc)*oh+y)*ow+z] = s
				}
			}
		}
	}
	return out, oh, ow
}

func TestConv2DForward(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for _, tc := range []struct {
		xs, ws []int
		bias   bool
		o      Conv2DOptions
	}{
		{[]int{2, 3, 7, 6}, []int{4, 3, 3, 3}, true, Conv2DOptions{PadH: 1, PadW: 1}},
		{[]int{1, 2, 9, 9}, []int{3, 2, 3, 3}, false, Conv2DOptions{StrideH: 2, StrideW: 3, DilH: 2, DilW: 2, PadH: 2}},
		{[]int{3, 1, 4, 4}, []int{2, 1, 4, 4}, true, Conv2DOptions{}},
	} {
		x, w := randSlice(r, tc.xs[0]*tc.xs[1]*tc.xs[2]*tc.xs[3]), randSlice(r, tc.ws[0]*tc.ws[1]*tc.ws[2]*tc.ws[3])
		var b []float64
		tp := NewTape[float64]()
		var bv *Var[float64]
		if tc.bias {
			b = randSlice(r, tc.ws[0])
			bv = tp.Const(b, tc.ws[0])
		}
		want, oh, ow := naiveConv(x, tc.xs, w, tc.ws, b, tc.o)
		got := tp.Conv2D(tp.Const(x, tc.xs...), tp.Const(w, tc.ws...), bv, tc.o)
		mustOK(t, tp)
		assertShape(t, "Conv2D", got.Shape(), tc.xs[0], tc.ws[0], oh, ow)
		assertClose(t, "Conv2D", got.Value(), want, 1e-12)
	}
}

func TestPoolForward(t *testing.T) {
	// One 4×4 channel, values 0..15.
	x := make([]float64, 16)
	for i := range x {
		x[i] = float64(i)
	}
	tp := NewTape[float64]()
	v := tp.Const(x, 1, 1, 4, 4)
	mp := tp.MaxPool2D(v, Pool2DOptions{KH: 2, KW: 2})
	assertClose(t, "MaxPool2D", mp.Value(), []float64{5, 7, 13, 15}, 0)
	ap := tp.AvgPool2D(v, Pool2DOptions{KH: 2, KW: 2})
	assertClose(t, "AvgPool2D", ap.Value(), []float64{2.5, 4.5, 10.5, 12.5}, 0)
	// 3×3, stride 2, pad 1: windows centred on (0,0), (0,2), (2,0), (2,2); zero padding counted.
	ap2 := tp.AvgPool2D(v, Pool2DOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	assertShape(t, "AvgPool2D pad", ap2.Shape(), 1, 1, 2, 2)
	assertClose(t, "AvgPool2D pad", ap2.Value(), []float64{(0 + 1 + 4 + 5) / 9.0, (1 + 2 + 3 + 5 + 6 + 7) / 9.0,
		(4 + 5 + 8 + 9 + 12 + 13) / 9.0, (5 + 6 + 7 + 9 + 10 + 11 + 13 + 14 + 15) / 9.0}, 1e-15)
	mp2 := tp.MaxPool2D(tp.Neg(v), Pool2DOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1})
	assertClose(t, "MaxPool2D pad", mp2.Value(), []float64{0, -1, -4, -5}, 0)
	gp := tp.GlobalAvgPool2D(v)
	assertShape(t, "GlobalAvgPool2D", gp.Shape(), 1, 1, 1, 1)
	assertClose(t, "GlobalAvgPool2D", gp.Value(), []float64{7.5}, 0)
	mustOK(t, tp)
	tp.MaxPool2D(v, Pool2DOptions{KH: 2, KW: 2, PadH: 2})
	if tp.Err() == nil {
		t.Fatal("padding larger than half the window did not fail")
	}
}

// TestMaxPool2x2MatchesWindows checks the unrolled 2×2 stride-2 path against the general
// window scan on inputs full of ties, NaNs and −∞ (drawn from seven values, ±0 among them), odd and even sizes:
// the same maxima and the same source indices, bit for bit.
func TestMaxPool2x2MatchesWindows(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	vals := []float32{0, float32(math.Copysign(0, -1)), 1, 2, float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1))}
	for _, sz := range [][3]int{{1, 2, 2}, {3, 4, 4}, {2, 5, 7}, {4, 6, 3}, {1, 26, 26}, {2, 11, 11}} {
		nc, h, w := sz[0], sz[1], sz[2]
		t.Run(strconv.Itoa(nc)+"x"+strconv.Itoa(h)+"x"+strconv.Itoa(w), func(t *testing.T) {
			for trial := 0; trial < 50; trial++ {
				x := make([]float32, nc*h*w)
				for i := range x {
					x[i] = vals[r.IntN(len(vals))]
				}
				oh, ow := h/2, w/2
				got, want := make([]float32, nc*oh*ow), make([]float32, nc*oh*ow)
				gotArg, wantArg := make([]int, len(got)), make([]int, len(got))
				maxPool2x2(x, got, gotArg, false, 0, nc, h, w, oh, ow)
				maxPoolWindows(x, want, wantArg, 0, nc, h, w, oh, ow, 2, 2, Pool2DOptions{KH: 2, KW: 2})
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) || gotArg[i] != wantArg[i] {
						t.Fatalf("output %d: 2x2 path %v from %d, window scan %v from %d (input %v)", i, got[i], gotArg[i], want[i], wantArg[i], x)
					}
				}
			}
		})
	}
}

// BenchmarkMaxPool2D compares the 2×2 stride-2 path with the general window scan on the first
// pooling of a 3×3-conv CNN on Fashion-MNIST (batch 160, 32 channels of 26×26), in one run:
// the ratio of the two ns/op is the gain.
func BenchmarkMaxPool2D(b *testing.B) {
	const nc, h, w = 160 * 32, 26, 26
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, nc*h*w)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	oh, ow := h/2, w/2
	out, arg := make([]float32, nc*oh*ow), make([]int, nc*oh*ow)
	b.Run("2x2", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			maxPool2x2(x, out, arg, false, 0, nc, h, w, oh, ow)
		}
	})
	b.Run("windows", func(b *testing.B) {
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			maxPoolWindows(x, out, arg, 0, nc, h, w, oh, ow, 2, 2, Pool2DOptions{KH: 2, KW: 2})
		}
	})
	b.Run("relu-2x2", func(b *testing.B) { // ReLUMaxPool2D's
		b.SetBytes(int64(4 * len(x)))
		for b.Loop() {
			maxPool2x2(x, out, arg, true, 0, nc, h, w, oh, ow)
		}
	})
}

func TestBatchNormForwardAndRunningStats(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	n, c, hw := 3, 2, 5
	x := randSlice(r, n*c*hw)
	gamma, beta := []float64{1.5, -0.5}, []float64{0.25, 2}
	st := NewBatchNormState[float64](c)
	tp := NewTape[float64]()
	y := tp.BatchNorm(tp.Const(x, n, c, hw), tp.Const(gamma, c), tp.Const(beta, c), st, true)
	mustOK(t, tp)
	m := float64(n * hw)
	for ch := 0; ch < c; ch++ {
		var vals []float64
		for i := 0; i < n; i++ {
			vals = append(vals, x[(i*c+ch)*hw:(i*c+ch+1)*hw]...)
		}
		mu, ss := 0.0, 0.0
		for _, v := range vals {
			mu += v
		}
		mu /= m
		for _, v := range vals {
			ss += (v - mu) * (v - mu)
		}
		for i := 0; i < n; i++ {
			for k := 0; k < hw; k++ {
				idx := (i*c+ch)*hw + k
				want := (x[idx]-mu)/math.Sqrt(ss/m+1e-5)*gamma[ch] + beta[ch]
				assertClose(t, "BatchNorm train", y.Value()[idx:idx+1], []float64{want}, 1e-12)
			}
		}
		assertClose(t, "running mean", st.RunningMean[ch:ch+1], []float64{0.1 * mu}, 1e-14)
		assertClose(t, "running var", st.RunningVar[ch:ch+1], []float64{0.9 + 0.1*ss/(m-1)}, 1e-14)
	}
	if st.NumBatchesTracked != 1 {
		t.Fatalf("NumBatchesTracked = %d", st.NumBatchesTracked)
	}
	ye := tp.BatchNorm(tp.Const(x, n, c, hw), nil, nil, st, false)
	for i, v := range ye.Value() {
		ch := (i / hw) % c
		want := (x[i] - st.RunningMean[ch]) / math.Sqrt(st.RunningVar[ch]+1e-5)
		if !(math.Abs(v-want) <= 1e-12) {
			t.Fatalf("BatchNorm eval element %d: %v, want %v", i, v, want)
		}
	}
	tp.BatchNorm(tp.Const(x[:2], 1, 2), nil, nil, st, true)
	if tp.Err() == nil {
		t.Fatal("training BatchNorm with one value per channel did not fail")
	}
}

func TestCholeskyAndSolvesForward(t *testing.T) {
	tp := NewTape[float64]()
	l := tp.Cholesky(tp.Const([]float64{4, 2, 2, 3}, 2, 2))
	assertClose(t, "Cholesky", l.Value(), []float64{2, 0, 1, math.Sqrt2}, 1e-15)
	ld := tp.LogDetChol(l)
	assertClose(t, "LogDetChol", ld.Value(), []float64{math.Log(8)}, 1e-15)
	x := tp.CholeskySolve(l, tp.Const([]float64{1, 0, 0, 1}, 2, 2)) // inverse of [[4,2],[2,3]]
	assertClose(t, "CholeskySolve", x.Value(), []float64{3.0 / 8, -2.0 / 8, -2.0 / 8, 4.0 / 8}, 1e-15)
	jc := tp.JitteredCholesky(tp.Const([]float64{4, 2, 2, 3}, 2, 2), 0.1) // + 0.35·I
	assertClose(t, "JitteredCholesky", jc.Value(), []float64{math.Sqrt(4.35), 0, 2 / math.Sqrt(4.35), math.Sqrt(3.35 - 4/4.35)}, 1e-14)
	mustOK(t, tp)

	r := rand.New(rand.NewPCG(5, 5))
	k, o := 4, 3
	a := randSlice(r, k*k)
	for i := 0; i < k; i++ {
		a[i*k+i] = 2 + math.Abs(a[i*k+i])
	}
	for _, left := range []bool{true, false} {
		for _, lower := range []bool{true, false} {
			for _, trans := range []bool{false, true} {
				// Effective triangular matrix op(tri(A)).
				mat := func(i, j int) float64 {
					if trans {
						i, j = j, i
					}
					if (lower && j > i) || (!lower && j < i) {
						return 0
					}
					return a[i*k+j]
				}
				bs := []int{k, o}
				if !left {
					bs = []int{o, k}
				}
				b := randSlice(r, bs[0]*bs[1])
				xv := tp.SolveTriangular(tp.Const(a, k, k), tp.Const(b, bs...), left, lower, trans).Value()
				mustOK(t, tp)
				// Residual op(A)·X − B or X·op(A) − B, computed naively.
				res := make([]float64, len(b))
				for i := 0; i < bs[0]; i++ {
					for j := 0; j < bs[1]; j++ {
						s := -b[i*bs[1]+j]
						for p := 0; p < k; p++ {
							if left {
								s += mat(i, p) * xv[p*bs[1]+j]
							} else {
								s += xv[i*bs[1]+p] * mat(p, j)
							}
						}
						res[i*bs[1]+j] = s
					}
				}
				assertClose(t, "SolveTriangular residual", res, make([]float64, len(res)), 1e-12)
			}
		}
	}
	tp.Cholesky(tp.Const([]float64{1, 2, 2, 1}, 2, 2))
	if tp.Err() == nil {
		t.Fatal("Cholesky of an indefinite matrix did not fail")
	}
}

// TestJitteredCholeskyGradient checks that the jitter is a constant: the gradient equals that of
// Cholesky(A + j·I) with j fixed at its forward value.
func TestJitteredCholeskyGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(6, 6))
	n := 4
	x := randSlice(r, n*n)
	seed := randSlice(r, n*n)
	grad := func(jittered bool) []float64 {
		tp := NewTape[float64]()
		xv := tp.Leaf(append([]float64(nil), x...), n, n)
		a := spd(tp, xv)
		var l *Var[float64]
		if jittered {
			l = tp.JitteredCholesky(a, 0.01)
		} else {
			var s float64
			for i := 0; i < n; i++ {
				s += a.Value()[i*n+i]
			}
			l = tp.Cholesky(tp.Add(a, tp.Scale(tp.Const(identity(n), n, n), 0.01*s/float64(n))))
		}
		if err := tp.BackwardFrom(l, seed); err != nil {
			t.Fatal(err)
		}
		return xv.Grad()
	}
	assertClose(t, "JitteredCholesky grad", grad(true), grad(false), 1e-12)
}

func identity(n int) []float64 {
	e := make([]float64, n*n)
	for i := 0; i < n; i++ {
		e[i*n+i] = 1
	}
	return e
}

func TestDropout(t *testing.T) {
	tp := NewTape[float64]()
	x := make([]float64, 20000)
	for i := range x {
		x[i] = 1
	}
	v := tp.Const(x, len(x))
	if tp.Dropout(v, 0.5, false, nil) != v {
		t.Fatal("eval-mode Dropout is not the identity")
	}
	d := tp.Dropout(v, 0.25, true, rand.New(rand.NewPCG(7, 7)))
	mustOK(t, tp)
	zeros := 0
	for _, y := range d.Value() {
		switch y {
		case 0:
			zeros++
		case 1 / 0.75:
		default:
			t.Fatalf("Dropout output %v is neither 0 nor 1/(1-p)", y)
		}
	}
	if f := float64(zeros) / float64(len(x)); !(math.Abs(f-0.25) <= 0.02) {
		t.Fatalf("Dropout zeroed a fraction %.3f, want 0.25", f)
	}
	for _, y := range tp.Dropout(v, 1, true, rand.New(rand.NewPCG(1, 1))).Value() {
		if y != 0 {
			t.Fatal("Dropout with p=1 kept a value")
		}
	}
	tp.Dropout(v, 1.5, true, nil)
	if tp.Err() == nil {
		t.Fatal("Dropout with p=1.5 did not fail")
	}
}

func TestParamAccumulationAndZeroGrad(t *testing.T) {
	p, err := NewParam("w", []float64{1, 2, 3}, 3)
	if err != nil {
		t.Fatal(err)
	}
	tp := NewTape[float64]()
	for step := 1; step <= 2; step++ {
		tp.Reset()
		w := tp.Param(p)
		// d/dw Σ w² = 2w; two uses of the same parameter accumulate.
		loss := tp.Add(tp.Sum(tp.Square(w)), tp.Sum(tp.Param(p)))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		want := []float64{3, 5, 7}
		for i := range want {
			want[i] *= float64(step)
		}
		assertClose(t, "accumulated grad", p.Grad, want, 0)
	}
	p.ZeroGrad()
	assertClose(t, "ZeroGrad", p.Grad, []float64{0, 0, 0}, 0)
	if _, err := NewParam("bad", []float64{1, 2}, 3); err == nil {
		t.Fatal("NewParam with a mismatched shape did not fail")
	}
}

func TestNoGradAndDetach(t *testing.T) {
	p, _ := NewParam("w", []float64{2}, 1)
	tp := NewTape[float64]()
	tp.NoGrad(func() {
		w := tp.Param(p)
		if w.RequiresGrad() || tp.Square(w).RequiresGrad() {
			t.Fatal("Var created under NoGrad requires a gradient")
		}
	})
	w := tp.Param(p)
	loss := tp.Sum(tp.Mul(w, tp.Detach(w))) // d/dw (w·stopgrad(w)) = w
	if err := tp.Backward(loss); err != nil {
		t.Fatal(err)
	}
	assertClose(t, "Detach", p.Grad, []float64{2}, 0)
}

func TestErrorsDoNotPanic(t *testing.T) {
	tp := NewTape[float64]()
	a := tp.Leaf([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	bad := tp.MatMul(a, a) // (2,3)·(2,3)
	if tp.Err() == nil {
		t.Fatal("MatMul of (2,3)·(2,3) did not fail")
	}
	first := tp.Err()
	// Later ops are no-ops returning placeholders; the first error is kept.
	out := tp.Sum(tp.Exp(tp.Reshape(bad, 7, 9)))
	if !errors.Is(tp.Backward(out), first) {
		t.Fatalf("Backward error %v, want the first error %v", tp.Backward(out), first)
	}
	for name, f := range map[string]func(tp *Tape[float64]){
		"nil input":     func(tp *Tape[float64]) { tp.Exp(nil) },
		"Gather range":  func(tp *Tape[float64]) { tp.Gather(tp.Scalar(1), []int{1}, 1) },
		"Scatter range": func(tp *Tape[float64]) { tp.Scatter(tp.Scalar(1), []int{-1}, 1) },
		"Slice range":   func(tp *Tape[float64]) { tp.Slice(tp.Full(1, 2, 2), 1, 1, 3) },
		"axis":          func(tp *Tape[float64]) { tp.SumAxis(tp.Full(1, 2, 2), 2, false) },
		"Permute":       func(tp *Tape[float64]) { tp.Permute(tp.Full(1, 2, 2), 0, 0) },
		"Concat":        func(tp *Tape[float64]) { tp.Concat(0, tp.Full(1, 2, 2), tp.Full(1, 2, 3)) },
		"Conv2D": func(tp *Tape[float64]) {
			tp.Conv2D(tp.Full(1, 1, 2, 3, 3), tp.Full(1, 1, 3, 2, 2), nil, Conv2DOptions{})
		},
		"Const shape":     func(tp *Tape[float64]) { tp.Const([]float64{1}, 2) },
		"SolveTriangular": func(tp *Tape[float64]) { tp.SolveTriangular(tp.Full(0, 2, 2), tp.Full(1, 2, 1), true, true, false) },
		"other tape":      func(tp *Tape[float64]) { tp.Exp(NewTape[float64]().Scalar(1)) },
		"nil param":       func(tp *Tape[float64]) { tp.Param(nil) },
		"nil BN state":    func(tp *Tape[float64]) { tp.BatchNorm(tp.Full(1, 2, 2), nil, nil, nil, true) },
	} {
		tp.Reset()
		f(tp)
		if tp.Err() == nil {
			t.Errorf("%s: no error recorded", name)
		}
	}
	tp.Reset()
	if err := tp.Backward(tp.Leaf([]float64{1, 2}, 2)); !errors.Is(err, ErrNotScalar) {
		t.Fatalf("Backward of a vector: %v, want ErrNotScalar", err)
	}
}

// TestResetReusesBuffers checks that a repeated fixed-shape step draws every tensor buffer
// from the pool: after the first step, a step allocates only small bookkeeping (closures,
// shape slices), far fewer than one allocation per float buffer byte.
func TestResetReusesBuffers(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	w1, _ := NewParam("w1", randSlice(r, 16*32), 16, 32)
	b1, _ := NewParam("b1", randSlice(r, 16), 16)
	x := randSlice(r, 8*32)
	labels := []int{0, 1, 2, 3, 4, 5, 6, 7}
	tp := NewTape[float64]()
	step := func() {
		tp.Reset()
		h := tp.ReLU(tp.Linear(tp.Const(x, 8, 32), tp.Param(w1), tp.Param(b1)))
		if err := tp.Backward(tp.CrossEntropy(h, labels)); err != nil {
			t.Fatal(err)
		}
	}
	step()
	allocs := testing.AllocsPerRun(5, step)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := 0; i < 10; i++ {
		step()
	}
	runtime.ReadMemStats(&after)
	perStep := float64(after.TotalAlloc-before.TotalAlloc) / 10
	t.Logf("warm step: %.0f allocations, %.0f bytes", allocs, perStep)
	// The activations alone are 8·16 float64s = 1 KiB per buffer; the step records several.
	if !(allocs <= 40) || !(perStep <= 4096) {
		t.Fatalf("a warm step made %.0f allocations of %.0f bytes, want ≤ 40 and ≤ 4096", allocs, perStep)
	}
}

// TestZeroGradsRepeatedVJP checks that ZeroGrads lets one recorded graph give several
// vector-Jacobian products: the rows of the Jacobian of y = (a·b, a + b) (hand-derived).
func TestZeroGradsRepeatedVJP(t *testing.T) {
	tp := NewTape[float64]()
	p, err := NewParam("p", []float64{2, 3}, 2)
	if err != nil {
		t.Fatal(err)
	}
	v := tp.Param(p)
	a, b := tp.Slice(v, 0, 0, 1), tp.Slice(v, 0, 1, 2)
	y := tp.Concat(0, tp.Mul(a, b), tp.Add(a, b))
	want := [][]float64{{3, 2}, {1, 1}} // ∂(ab)/∂(a,b) = (b, a); ∂(a+b)/∂(a,b) = (1, 1)
	for q, row := range want {
		tp.ZeroGrads()
		seed := make([]float64, 2)
		seed[q] = 1
		if err := tp.BackwardFrom(y, seed); err != nil {
			t.Fatal(err)
		}
		for i := range row {
			if p.Grad[i] != row[i] {
				t.Errorf("row %d: grad %v, want %v", q, p.Grad, row)
				break
			}
		}
	}
}

// TestCustom: a Custom op computing y = x² with a hand-written backward matches Square.
func TestCustom(t *testing.T) {
	tp := NewTape[float64]()
	x := tp.Leaf([]float64{1, -2, 3}, 3)
	y := tp.Custom("sq", []int{3}, []float64{1, 4, 9}, func(g []float64, gs [][]float64) {
		for i := range g {
			gs[0][i] += 2 * x.Value()[i] * g[i]
		}
	}, x)
	if err := tp.Backward(tp.Sum(tp.Scale(y, 0.5))); err != nil {
		t.Fatal(err)
	}
	for i, v := range []float64{1, -2, 3} {
		if x.Grad()[i] != v {
			t.Errorf("grad %d = %g, want %g", i, x.Grad()[i], v)
		}
	}
	tp.Reset()
	if v := tp.Custom("bad", []int{2}, []float64{1}, nil); tp.Err() == nil || v.Len() != 1 {
		t.Errorf("shape mismatch accepted")
	}
}
