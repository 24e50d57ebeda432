package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// dropoutOnlySpec is a regression model of d features whose only layer is an MC dropout layer of
// rate p: each sample's output is the input times that sample's keep mask.
func dropoutOnlySpec(d int, p float64) *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{d},
		Layers: []runtime.LayerSpec{{Name: "drop", Op: runtime.OpDropout, P: p, MC: true}}}
}

// TestMCDropoutMask: with an input of ones, every per-sample output is 0 or exactly
// float32(1/(1−p)); the fraction kept over K·d draws is within 5 standard errors
// (√(p(1−p)/(K·d))) of 1−p, the mean output within 5 standard errors (√(p/(1−p)/(K·d))) of 1
// (inverted dropout keeps the expectation), and samples draw different masks.
func TestMCDropoutMask(t *testing.T) {
	const d, K = 64, 512
	for _, p := range []float64{0, 0.1, 0.5, 0.9} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			m := newModel(t, dropoutOnlySpec(d, p), runtime.Tensors{})
			if !m.Stochastic() {
				t.Fatal("an MC dropout model is not stochastic")
			}
			x := make([]float32, d)
			for i := range x {
				x[i] = 1
			}
			out := predictAll(t, m, runtime.Options{Samples: K, Seed: 7, KeepSamples: true}, x)[0]
			scale := float32(1 / (1 - p))
			kept, sum := 0, 0.0
			for i, v := range out.Outputs {
				switch v {
				case 0:
				case scale:
					kept++
				default:
					t.Fatalf("output %d is %v, want 0 or %v", i, v, scale)
				}
				sum += float64(v)
			}
			N := float64(K * d)
			if frac, se := float64(kept)/N, math.Sqrt(p*(1-p)/N); !(math.Abs(frac-(1-p)) <= 5*se+1e-12) {
				t.Errorf("kept fraction %v, want %v ± %v", frac, 1-p, 5*se)
			}
			if mean, se := sum/N, math.Sqrt(p/(1-p)/N); !(math.Abs(mean-1) <= 5*se+1e-6) {
				t.Errorf("mean output %v, want 1 ± %v", mean, 5*se)
			}
			if p > 0 {
				same := true
				for j := 0; j < d; j++ {
					same = same && out.Outputs[j] == out.Outputs[d+j]
				}
				if same {
					t.Error("samples 0 and 1 drew the same mask")
				}
			}
			mean := predictAll(t, m, runtime.Options{Mean: true}, x)[0]
			for j, v := range mean.Mean {
				if v != 1 {
					t.Fatalf("Mean: output %d is %v, want the input 1", j, v)
				}
			}
		})
	}
}

// TestMCDropoutLinearExpectation: for y = W·dropout(x) + b, E[y] = W x + b and
// Var[y_o] = p/(1−p) Σ_j W_oj² x_j² (the masks are independent). The predictive mean over K
// samples is within 5 standard errors of the first; the epistemic variance within 10 % of the
// second; Options.Mean gives the first up to float32 rounding.
func TestMCDropoutLinearExpectation(t *testing.T) {
	const din, dout, K = 12, 3, 1 << 14
	for _, st := range strategies {
		for _, p := range []float64{0.2, 0.5} {
			t.Run(fmt.Sprintf("%v/%v", st, p), func(t *testing.T) {
				spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{din},
					Layers: []runtime.LayerSpec{
						{Name: "drop", Op: runtime.OpDropout, P: p, MC: true},
						{Name: "fc", Op: runtime.OpLinear, In: din, Out: dout, Bias: true},
					}}
				r := rand.New(rand.NewPCG(3, 4))
				w, b := randn(r, dout*din, 1), randn(r, dout, 1)
				m := newModel(t, spec, runtime.Tensors{"fc.weight": tensor(w, dout, din), "fc.bias": tensor(b, dout)})
				x := randomInputs(m, 1, 5)
				got := predictAll(t, m, runtime.Options{Samples: K, Seed: 11, Strategy: st}, x)[0]
				mean := predictAll(t, m, runtime.Options{Mean: true, Strategy: st}, x)[0]
				for o := 0; o < dout; o++ {
					mu, v := float64(b[o]), 0.0
					for j := 0; j < din; j++ {
						wx := float64(w[o*din+j]) * float64(x[j])
						mu += wx
						v += wx * wx * p / (1 - p)
					}
					if se := math.Sqrt(v / K); !(math.Abs(float64(got.Mean[o])-mu) <= 5*se) {
						t.Errorf("output %d: mean %v, want %v ± %v", o, got.Mean[o], mu, 5*se)
					}
					if ev := float64(got.EpistemicVar[o]); !(math.Abs(ev-v) <= 0.1*v) {
						t.Errorf("output %d: epistemic variance %v, want %v ± 10%%", o, ev, v)
					}
					if !(math.Abs(float64(mean.Mean[o])-mu) <= 1e-5*(1+math.Abs(mu))) {
						t.Errorf("output %d: Mean prediction %v, want %v", o, mean.Mean[o], mu)
					}
				}
			})
		}
	}
}

// TestMCDropoutMeanIsNetworkWithoutDropout: Options.Mean of an MC dropout model is the same
// network with its dropout layers switched off (mc false, as files without mc read), bit for
// bit, and that network is deterministic; sampling gives mutual information > 0.
func TestMCDropoutMeanIsNetworkWithoutDropout(t *testing.T) {
	spec := mcDropoutSpec()
	ts := randomTensors(spec, 8)
	mc := newModel(t, spec, ts)
	off := mcDropoutSpec()
	for i := range off.Layers {
		if off.Layers[i].Op == runtime.OpDropout {
			off.Layers[i].P, off.Layers[i].MC = 0, false // a file that predates p and mc
		}
	}
	plain := newModel(t, off, ts)
	if plain.Stochastic() {
		t.Fatal("dropout without mc made the model stochastic")
	}
	xs := randomInputs(mc, 4, 2)
	want := predictAll(t, plain, runtime.Options{MaxBatch: 4}, xs)
	for _, st := range strategies {
		got := predictAll(t, mc, runtime.Options{Mean: true, MaxBatch: 4, Strategy: st}, xs)
		sampled := predictAll(t, mc, runtime.Options{Samples: 64, MaxBatch: 4, Strategy: st}, xs)
		for i := range want {
			if err := samePrediction(&got[i], &want[i]); err != nil {
				t.Errorf("%v: input %d: Mean differs from the network without dropout: %v", st, i, err)
			}
			if !(sampled[i].MutualInfo > 0) {
				t.Errorf("%v: input %d: mutual information %v, want > 0", st, i, sampled[i].MutualInfo)
			}
		}
	}
}

// TestMCDropoutNaN: a non-finite activation stays non-finite in every sample, dropped or not
// (0 · ∞ is NaN, as PyTorch's x · mask gives), so the prediction reports ErrNonFinite instead
// of averaging finite samples from masks that happened to drop it.
func TestMCDropoutNaN(t *testing.T) {
	const K = 32
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{1},
		Layers: []runtime.LayerSpec{
			{Name: "up", Op: runtime.OpLinear, In: 1, Out: 4},
			{Name: "drop", Op: runtime.OpDropout, P: 0.9, MC: true},
			{Name: "fc", Op: runtime.OpLinear, In: 4, Out: 1, Bias: true},
		}}
	big := []float32{3e38, 3e38, 3e38, 3e38}
	m, err := runtime.New(spec, runtime.Tensors{"up.weight": tensor(big, 4, 1),
		"fc.weight": tensor([]float32{1, 1, 1, 1}, 1, 4), "fc.bias": tensor([]float32{0}, 1)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := m.NewPredictor(runtime.Options{Samples: K, Seed: 1, KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	var out runtime.Prediction
	err = p.Predict([]float32{10}, &out)
	if !errors.Is(err, runtime.ErrNonFinite) {
		t.Fatalf("error %v, want ErrNonFinite", err)
	}
	for k, v := range out.Outputs {
		if !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) {
			t.Errorf("sample %d: output %v is finite", k, v)
		}
	}
}

// TestDropoutSpec: p must lie in [0, 1) (errors name the layer), p and mc belong to dropout
// layers only, and they round-trip through JSON; a dropout layer without them (older files) is
// the identity.
func TestDropoutSpec(t *testing.T) {
	mk := func(l runtime.LayerSpec) *runtime.Spec {
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{2},
			Layers: []runtime.LayerSpec{l}}
	}
	for _, c := range []struct {
		name string
		l    runtime.LayerSpec
		err  string
	}{
		{"p=0", runtime.LayerSpec{Name: "d", Op: runtime.OpDropout, P: 0, MC: true}, ""},
		{"p=0.99", runtime.LayerSpec{Name: "d", Op: runtime.OpDropout, P: 0.99, MC: true}, ""},
		{"no mc", runtime.LayerSpec{Name: "d", Op: runtime.OpDropout, P: 0.5}, ""},
		{"p=1", runtime.LayerSpec{Name: "d7", Op: runtime.OpDropout, P: 1, MC: true}, `layer "d7": dropout rate p 1 outside [0, 1)`},
		{"p<0", runtime.LayerSpec{Name: "d7", Op: runtime.OpDropout, P: -0.1}, `layer "d7": dropout rate p -0.1 outside [0, 1)`},
		{"p NaN", runtime.LayerSpec{Name: "d7", Op: runtime.OpDropout, P: math.NaN()}, `layer "d7": dropout rate p NaN`},
		{"p on relu", runtime.LayerSpec{Name: "r", Op: runtime.OpReLU, P: 0.5}, `layer "r": op relu has no dropout rate`},
		{"mc on identity", runtime.LayerSpec{Name: "i", Op: runtime.OpIdentity, MC: true}, `layer "i": op identity has no dropout rate`},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := mk(c.l).Validate()
			testutil.WantError(t, err, c.err)
		})
	}
	s, err := runtime.ParseSpec([]byte(`{"version":1,"task":"regression","noise_var":1,"input_shape":[2],
		"layers":[{"name":"d","op":"dropout","p":0.25,"mc":true}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if l := s.Layers[0]; l.P != 0.25 || !l.MC {
		t.Fatalf("parsed %+v", l)
	}
	old, err := runtime.ParseSpec([]byte(`{"version":1,"task":"regression","noise_var":1,"input_shape":[2],
		"layers":[{"name":"d","op":"dropout"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m := newModel(t, old, runtime.Tensors{})
	if m.Stochastic() {
		t.Fatal("a dropout layer without p and mc is stochastic")
	}
	got := predictAll(t, m, runtime.Options{}, []float32{1.5, -2})[0]
	if got.Mean[0] != 1.5 || got.Mean[1] != -2 {
		t.Fatalf("identity dropout gave %v", got.Mean)
	}
}
