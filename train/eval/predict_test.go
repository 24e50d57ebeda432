package eval_test

import (
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// TestPredictAppliesPreprocess: a model that records an input transformation gets, from a data
// set whose loader scaled the stored values by d.Scale, exactly the inputs the transformation makes
// of the stored values — computed here by hand — including for an HWC model (whose reordering
// does not apply: data sets are channel-major).
func TestPredictAppliesPreprocess(t *testing.T) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 1, 2},
		Layers: []runtime.LayerSpec{{Name: "f", Op: runtime.OpFlatten}, {Name: "fc", Op: runtime.OpLinear, In: 4, Out: 3, Bias: true}}}
	w := []float32{1, -2, 0.5, 3, -1, 0, 2, 1, 0.25, -0.5, 1, -3}
	base, err := runtime.New(spec, runtime.Tensors{
		"fc.weight": {Shape: []int{3, 4}, Data: w},
		"fc.bias":   {Shape: []int{3}, Data: []float32{0.1, -0.2, 0.3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := [][]float32{{10, 20, 30, 40}, {0, 255, 128, 7}}
	d := &data.Dataset{Name: "t", N: 2, Dim: 4, Shape: []int{2, 1, 2}, Classes: 3, Labels: []int{0, 1}, Scale: 0.5}
	for _, x := range stored {
		for _, v := range x {
			d.X = append(d.X, v*0.5)
		}
	}
	for _, layout := range []runtime.Layout{runtime.LayoutCHW, runtime.LayoutHWC} {
		pre := &runtime.Preprocess{Version: 1, Layout: layout, Scale: 0.25, Mean: []float64{1, -1}, Std: []float64{2, 4}}
		m, err := base.WithDeployment(pre, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := eval.Predict(m, d, runtime.Options{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := base.NewPredictor(runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range stored {
			in := make([]float32, 4)
			for j, v := range x {
				c := j / 2 // channel-major: values 0, 1 are channel 0
				in[j] = float32((float64(v)*0.25 - pre.Mean[c]) / pre.Std[c])
			}
			var want runtime.Prediction
			if err := p.Predict(in, &want); err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				if g := got.Probs[i*3+k]; !(math.Abs(float64(g-want.Probs[k])) <= 1e-6) {
					t.Errorf("%s: input %d class %d: %v, want %v", layout, i, k, g, want.Probs[k])
				}
			}
			if got.Samples[i] != 1 || !got.Act[i] {
				t.Errorf("input %d: samples %d, act %v", i, got.Samples[i], got.Act[i])
			}
		}
	}
}

// ffgModel is a 2 → 4 → outputs mean-field Gaussian network (weights' sd softplus(−1) ≈ 0.31,
// so that samples disagree) for the task.
func ffgModel(t *testing.T, task runtime.Task, outputs int, noiseVar float64) *runtime.Model {
	t.Helper()
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: task, InputShape: []int{2}, NoiseVar: noiseVar,
		Layers: []runtime.LayerSpec{
			{Name: "fc1", Op: runtime.OpLinear, In: 2, Out: 4, Bias: true, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1}},
			{Name: "relu", Op: runtime.OpReLU},
			{Name: "fc2", Op: runtime.OpLinear, In: 4, Out: outputs, Bias: true, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1}},
		}}
	fill := func(n int, v func(i int) float32) []float32 {
		out := make([]float32, n)
		for i := range out {
			out[i] = v(i)
		}
		return out
	}
	mean := func(i int) float32 { return float32(math.Sin(float64(3*i + 1))) }
	sd := func(int) float32 { return -1 }
	m, err := runtime.New(spec, runtime.Tensors{
		"fc1.weight_mean": {Shape: []int{4, 2}, Data: fill(8, mean)},
		"fc1._weight_sd":  {Shape: []int{4, 2}, Data: fill(8, sd)},
		"fc1.bias_mean":   {Shape: []int{4}, Data: fill(4, mean)},
		"fc1._bias_sd":    {Shape: []int{4}, Data: fill(4, sd)},
		"fc2.weight_mean": {Shape: []int{outputs, 4}, Data: fill(4*outputs, mean)},
		"fc2._weight_sd":  {Shape: []int{outputs, 4}, Data: fill(4*outputs, sd)},
		"fc2.bias_mean":   {Shape: []int{outputs}, Data: fill(outputs, mean)},
		"fc2._bias_sd":    {Shape: []int{outputs}, Data: fill(outputs, sd)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// inputs returns n two-feature inputs spread over [−2, 2]².
func inputs(n int) []float32 {
	x := make([]float32, 2*n)
	for i := range x {
		x[i] = float32(2 * math.Sin(float64(7*i+2)))
	}
	return x
}

// keptSamples predicts x (n inputs) in one batch with the per-sample outputs kept.
func keptSamples(t *testing.T, m *runtime.Model, x []float32, n int, opt runtime.Options) []runtime.Prediction {
	t.Helper()
	opt.KeepSamples, opt.MaxBatch = true, n
	p, err := m.NewPredictor(opt)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := make([]runtime.Prediction, n)
	if err := p.PredictBatch(x, out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPredictMD2: Predict's model-disagreement score equals Σ_c (1/S) Σ_s (p_c(θ_s) − p̄_c)²
// computed in two passes (mean, then squared deviations) from the kept logits' softmaxes.
func TestPredictMD2(t *testing.T) {
	const n, classes, S = 12, 3, 16
	m := ffgModel(t, runtime.Classification, classes, 0)
	x := inputs(n)
	d := &data.Dataset{Name: "t", N: n, Dim: 2, Shape: []int{2}, Classes: classes, X: x, Labels: make([]int, n)}
	opt := runtime.Options{Samples: S, Seed: 9, Strategy: runtime.Weight, MaxBatch: n}
	got, err := eval.Predict(m, d, opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept := keptSamples(t, m, x, n, opt)
	anyPositive := false
	for i := range n {
		z := kept[i].Outputs
		probs := make([][]float64, S)
		for s := range S {
			mx := math.Inf(-1)
			for c := range classes {
				mx = math.Max(mx, float64(z[s*classes+c]))
			}
			sum := 0.0
			probs[s] = make([]float64, classes)
			for c := range classes {
				probs[s][c] = math.Exp(float64(z[s*classes+c]) - mx)
				sum += probs[s][c]
			}
			for c := range classes {
				probs[s][c] /= sum
			}
		}
		want := 0.0
		for c := range classes {
			mean := 0.0
			for s := range S {
				mean += probs[s][c]
			}
			mean /= S
			v := 0.0
			for s := range S {
				v += (probs[s][c] - mean) * (probs[s][c] - mean)
			}
			want += v / S
		}
		if !(math.Abs(got.MD2[i]-want) <= 1e-6*math.Max(want, 1e-3)) {
			t.Errorf("input %d: MD² %v, want %v", i, got.MD2[i], want)
		}
		anyPositive = anyPositive || want > 1e-4
	}
	if !anyPositive {
		t.Error("the samples agree everywhere: the test checks nothing")
	}
	u, err := got.Uncertainty("md2")
	if err != nil || u[0] != got.MD2[0] {
		t.Errorf("Uncertainty(md2) = %v, %v", u, err)
	}
}

// TestPredictMixtureLogLik: Predict's per-input mixture log-likelihood is the naive float64
// log((1/S) Σ_s Π_j N(y_j; f_sj, σ²)) of the kept samples, and FromPredictions reports minus its
// mean per target value as mixture_nll, with L the sample count.
func TestPredictMixtureLogLik(t *testing.T) {
	const n, outputs, S, noise = 10, 2, 20, 0.3
	m := ffgModel(t, runtime.Regression, outputs, noise)
	x := inputs(n)
	y := make([]float32, n*outputs)
	for i := range y {
		y[i] = float32(math.Cos(float64(5 * i)))
	}
	d := &data.Dataset{Name: "t", N: n, Dim: 2, Shape: []int{2}, X: x, Targets: y, Outputs: outputs}
	opt := runtime.Options{Samples: S, Seed: 4, Strategy: runtime.Weight, MaxBatch: n}
	got, err := eval.Predict(m, d, opt, 1)
	if err != nil {
		t.Fatal(err)
	}
	kept := keptSamples(t, m, x, n, opt)
	sum := 0.0
	for i := range n {
		mix := 0.0
		for s := range S {
			p := 1.0
			for j := range outputs {
				r := float64(y[i*outputs+j]) - float64(kept[i].Outputs[s*outputs+j])
				p *= math.Exp(-r*r/(2*noise)) / math.Sqrt(2*math.Pi*noise)
			}
			mix += p / S
		}
		want := math.Log(mix)
		if !(math.Abs(got.LogLik[i]-want) <= 1e-9) {
			t.Errorf("input %d: log-likelihood %v, want %v", i, got.LogLik[i], want)
		}
		sum += want
	}
	r, err := eval.FromPredictions(got, d, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := r.Regression
	if g.MixtureNLL == nil || !(math.Abs(*g.MixtureNLL+sum/(n*outputs)) <= 1e-9) || g.MixtureSamples != S {
		t.Errorf("mixture_nll %v (L %d), want %v (L %d)", g.MixtureNLL, g.MixtureSamples, -sum/(n*outputs), S)
	}
	// The samples differ, so the mixture is not the moment-matched Gaussian.
	if !(math.Abs(*g.MixtureNLL-g.NLL) >= 1e-4) {
		t.Errorf("mixture NLL %v equals the moment-matched NLL %v", *g.MixtureNLL, g.NLL)
	}
}

// TestMixtureNLLDeterministic: for a deterministic network every sample is the same, so the
// mixture of L equal Gaussians is the moment-matched one: both NLLs are
// ½ log(2πσ²) + mean (y − f)²/(2σ²), computed here by hand from the network's weights.
func TestMixtureNLLDeterministic(t *testing.T) {
	const noise = 0.5
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, InputShape: []int{2}, NoiseVar: noise,
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 1, Bias: true}}}
	m, err := runtime.New(spec, runtime.Tensors{
		"fc.weight": {Shape: []int{1, 2}, Data: []float32{2, -1}},
		"fc.bias":   {Shape: []int{1}, Data: []float32{0.5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 0, 0, 1, 1, 1}
	y := []float32{3, 0.5, -1} // f = 2.5, −0.5, 1.5: residuals 0.5, 1, −2.5
	d := &data.Dataset{Name: "t", N: 3, Dim: 2, Shape: []int{2}, X: x, Targets: y, Outputs: 1}
	r, err := eval.Evaluate(m, d, nil, runtime.Options{Samples: 5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := 0.5*math.Log(2*math.Pi*noise) + (0.25+1+6.25)/3/(2*noise)
	g := r.Regression
	if g.MixtureNLL == nil || !(math.Abs(*g.MixtureNLL-want) <= 1e-6) || !(math.Abs(g.NLL-want) <= 1e-6) {
		t.Errorf("mixture NLL %v, NLL %v, want both %v", g.MixtureNLL, g.NLL, want)
	}
	if !(math.Abs(g.RMSE-math.Sqrt((0.25+1+6.25)/3)) <= 1e-6) {
		t.Errorf("RMSE %v", g.RMSE)
	}
}
