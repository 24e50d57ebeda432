package bnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// bernsteinSpec: a deterministic Linear body and a Bernstein last layer.
func bernsteinSpec(m int) *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{3},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 3, Out: 4, Bias: true},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 4, Out: 2, Bias: true,
				Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, PriorSD: 0.7, TableSize: 33}},
		}}
}

// TestBernsteinGradients checks the training objective's gradient (cross-entropy of a sampled
// pass plus the Monte-Carlo KL of the same sample) with respect to every parameter — the body's
// and the flows' raw parameters — against central finite differences at fixed noise.
func TestBernsteinGradients(t *testing.T) {
	for _, m := range []int{1, 4} {
		rng := rand.New(rand.NewPCG(3, uint64(m)))
		n, err := New[float64](bernsteinSpec(m), nil, rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range n.Trainable() {
			for i := range p.Value {
				p.Value[i] += 0.3 * rng.NormFloat64()
			}
		}
		x := make([]float64, 5*3)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		y := []int{0, 1, 1, 0, 1}
		tp := autodiff.NewTape[float64]()
		loss := func() *autodiff.Var[float64] {
			tp.Reset()
			n.Begin()
			n.Seed(11, 0)
			out := n.Forward(tp, tp.Const(x, 5, 3), true)
			return tp.Add(tp.CrossEntropy(out, y), tp.Scale(n.KL(tp), 0.1))
		}
		for _, p := range n.Trainable() {
			p.ZeroGrad()
		}
		l := loss()
		if err := tp.Backward(l); err != nil {
			t.Fatal(err)
		}
		checked := 0
		for _, p := range n.Trainable() {
			g := append([]float64(nil), p.Grad...)
			for i := range p.Value {
				const h = 1e-5
				v := p.Value[i]
				p.Value[i] = v + h
				lp := loss().Item()
				p.Value[i] = v - h
				lm := loss().Item()
				p.Value[i] = v
				fd := (lp - lm) / (2 * h)
				if !(math.Abs(fd-g[i]) <= 1e-5*math.Max(1, math.Abs(fd))) {
					t.Errorf("M=%d %s[%d]: autodiff %g, finite difference %g", m, p.Name, i, g[i], fd)
				}
				checked++
			}
		}
		if tp.Err() != nil {
			t.Fatal(tp.Err())
		}
		t.Logf("M=%d: %d partial derivatives checked", m, checked)
	}
}

// TestBernsteinNetRuntime: the Net's tensors load in the runtime, whose mean prediction matches
// ForwardMean (the same trapezoid mean of the quantile table) and whose Monte-Carlo mean matches
// the Net's sampled passes within Monte-Carlo error.
func TestBernsteinNetRuntime(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n, err := New[float64](bernsteinSpec(6), nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range n.Trainable() {
		for i := range p.Value {
			p.Value[i] += 0.3 * rng.NormFloat64()
		}
	}
	mod := netModel(t, n)
	x := []float64{0.3, -1, 0.7}
	tp := autodiff.NewTape[float64]()
	want := n.ForwardMean(tp, tp.Const(x, 1, 3)).Value()
	pm, err := mod.NewPredictor(runtime.Options{Mean: true})
	if err != nil {
		t.Fatal(err)
	}
	in := []float32{0.3, -1, 0.7}
	var pred runtime.Prediction
	if err := pm.Predict(in, &pred); err != nil {
		t.Fatal(err)
	}
	// Classification: compare the logits through KeepSamples of a one-sample mean predictor.
	pk, err := mod.NewPredictor(runtime.Options{Mean: true, KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := pk.Predict(in, &pred); err != nil {
		t.Fatal(err)
	}
	for o, w := range want {
		if d := math.Abs(float64(pred.Outputs[o]) - w); !(d <= 1e-4*math.Max(1, math.Abs(w))) {
			t.Errorf("logit %d: runtime mean %g, Net ForwardMean %g", o, pred.Outputs[o], w)
		}
	}
}
