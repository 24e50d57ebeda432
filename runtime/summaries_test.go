package runtime_test

import (
	"errors"
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// dropoutHead is x (1) → Linear(1→1, w = 1, b = 0) → MC dropout (p = 0.5) → Linear(1→out, w, b):
// a sample's outputs are b + 2x·w with the unit kept and b with it dropped, so the samples take
// two known values; task and noise variance as given, policy attached when not nil.
func dropoutHead(t *testing.T, task runtime.Task, w, b []float32, pol *runtime.Policy) *runtime.Model {
	t.Helper()
	out := len(b)
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: task, InputShape: []int{1},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 1, Out: 1, Bias: true},
			{Name: "1", Op: runtime.OpDropout, P: 0.5, MC: true},
			{Name: "2", Op: runtime.OpLinear, In: 1, Out: out, Bias: true},
		}}
	if task == runtime.Regression {
		spec.NoiseVar = 0.5
	}
	ts := runtime.Tensors{
		"0.weight": {Shape: []int{1, 1}, Data: []float32{1}},
		"0.bias":   {Shape: []int{1}, Data: []float32{0}},
		"2.weight": {Shape: []int{out, 1}, Data: w},
		"2.bias":   {Shape: []int{out}, Data: b},
	}
	m := newModel(t, spec, ts)
	if pol != nil {
		var err error
		if m, err = m.WithDeployment(nil, pol); err != nil {
			t.Fatal(err)
		}
	}
	return m
}

// TestRegressionVarianceFarFromZero: the epistemic variance of outputs far from zero that differ
// by one float32 ulp between samples is the two-pass variance of the kept samples (E[y²] − E[y]²
// in float64 gave 0 or 122 for a true 1.0 at a mean of 3e7), and the policy decides on it; a
// variance beyond float32 is an error at any K, never 0.
func TestRegressionVarianceFarFromZero(t *testing.T) {
	limit := 0.25
	pol := &runtime.Policy{Version: runtime.DeployVersion, MaxEpistemicStd: &limit}
	for _, b := range []float32{1e7, 3e7, 1e30} {
		ulp := math.Nextafter32(b, float32(math.Inf(1))) - b
		// x = 0.5: a kept unit adds 2·0.5·ulp, one ulp.
		m := dropoutHead(t, runtime.Regression, []float32{ulp}, []float32{b}, pol)
		for _, K := range []int{32, 1000, 10000} {
			p, err := m.NewPredictor(runtime.Options{Samples: K, Seed: 1, KeepSamples: true})
			if err != nil {
				t.Fatal(err)
			}
			var pr runtime.Prediction
			err = p.Predict([]float32{0.5}, &pr)
			s := 0.0
			for _, v := range pr.Outputs {
				s += float64(v)
			}
			mu := s / float64(K)
			ss := 0.0
			for _, v := range pr.Outputs {
				d := float64(v) - mu
				ss += d * d
			}
			want := ss / float64(K)
			if want > math.MaxFloat32 {
				if !errors.Is(err, runtime.ErrNonFinite) || pr.Decision.Act {
					t.Errorf("b=%g K=%d: variance %g beyond float32: err %v, decision %v", b, K, want, err, pr.Decision)
				}
				continue
			}
			if err != nil {
				t.Fatalf("b=%g K=%d: %v", b, K, err)
			}
			if got := float64(pr.EpistemicVar[0]); !(math.Abs(got-want) <= 1e-5*want) {
				t.Errorf("b=%g K=%d: epistemic variance %g, two-pass %g", b, K, got, want)
			}
			if got := float64(pr.Mean[0]); !(math.Abs(got-mu) <= float64(ulp)) {
				t.Errorf("b=%g K=%d: mean %g, two-pass %g", b, K, got, mu)
			}
			if act := math.Sqrt(want) <= limit; pr.Decision.Act != act {
				t.Errorf("b=%g K=%d: std %g against %g, decision %v", b, K, math.Sqrt(want), limit, pr.Decision)
			}
		}
	}
}

// TestNonFiniteNeverActs: a prediction whose outputs are not finite is an error, and its decision
// abstains (ReasonNonFinite) whatever the policy, its entropies NaN rather than numbers (with one
// sample and a mutual-information policy it had acted on MI 0).
func TestNonFiniteNeverActs(t *testing.T) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{1},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 1, Out: 2, Bias: true},
			{Name: "1", Op: runtime.OpLinear, In: 2, Out: 3, Bias: true},
		}}
	ts := runtime.Tensors{ // +Inf and −Inf hidden units, their sum NaN
		"0.weight": {Shape: []int{2, 1}, Data: []float32{3e38, -3e38}},
		"0.bias":   {Shape: []int{2}, Data: []float32{0, 0}},
		"1.weight": {Shape: []int{3, 2}, Data: []float32{1, 1, 1, 1, 1, 1}},
		"1.bias":   {Shape: []int{3}, Data: []float32{0, 0, 0}},
	}
	mi, conf := 0.1, 0.0
	for _, pol := range []*runtime.Policy{
		nil,
		{Version: runtime.DeployVersion, MaxMutualInfo: &mi},
		{Version: runtime.DeployVersion, MinConfidence: &conf},
	} {
		m := newModel(t, spec, ts)
		if pol != nil {
			var err error
			if m, err = m.WithDeployment(nil, pol); err != nil {
				t.Fatal(err)
			}
		}
		p, err := m.NewPredictor(runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var pr runtime.Prediction
		err = p.Predict([]float32{10}, &pr)
		if !errors.Is(err, runtime.ErrNonFinite) {
			t.Fatalf("policy %+v: err %v, want a non-finite error", pol, err)
		}
		if pr.Decision.Act || pr.Decision.Reason != runtime.ReasonNonFinite || pr.Decision.Reason.String() != "non_finite" {
			t.Errorf("policy %+v: decision %v (%v), want abstain (non_finite)", pol, pr.Decision, pr.Decision.Reason)
		}
		if d := m.Decide(&pr); d.Act {
			t.Errorf("policy %+v: Model.Decide acts on a non-finite prediction", pol)
		}
		if !math.IsNaN(pr.Entropy) || !math.IsNaN(pr.MutualInfo) || !math.IsNaN(pr.ExpectedEntropy) {
			t.Errorf("policy %+v: entropy %v, expected %v, MI %v; want NaN", pol, pr.Entropy, pr.ExpectedEntropy, pr.MutualInfo)
		}
	}
}

// TestEntropyOfEqualClasses: identical samples of c equal logits have predictive and expected
// entropy log c and mutual information 0 to float64 rounding (the float32 probabilities, which sum
// to 1 + 5e-8 for c = 1000, had given entropy above log c and MI 3e-7).
func TestEntropyOfEqualClasses(t *testing.T) {
	for _, c := range []int{2, 10, 1000, 10000} {
		m := dropoutHead(t, runtime.Classification, make([]float32, c), make([]float32, c), nil)
		p, err := m.NewPredictor(runtime.Options{Samples: 8, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		var pr runtime.Prediction
		if err := p.Predict([]float32{1}, &pr); err != nil {
			t.Fatal(err)
		}
		want := math.Log(float64(c))
		if !(math.Abs(pr.Entropy-want) <= 1e-12*want) || !(math.Abs(pr.ExpectedEntropy-want) <= 1e-9*want) || !(pr.MutualInfo <= 1e-9) {
			t.Errorf("c=%d: entropy %.17g, expected %.17g, MI %g; want %.17g, %.17g, 0", c, pr.Entropy, pr.ExpectedEntropy, pr.MutualInfo, want, want)
		}
	}
}
