package runtime_test

import (
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// dropoutLogitsModel is x (1) → Linear(1→1, w=1) → MC dropout (p = 0.5) → Linear(1→c, w, b): every
// sample's logits are b or b + 2x·w, so the samples of a near-one-hot prediction are known exactly.
func dropoutLogitsModel(t *testing.T, w, b []float32) *runtime.Model {
	t.Helper()
	c := len(b)
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{1},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 1, Out: 1, Bias: true},
			{Name: "1", Op: runtime.OpDropout, P: 0.5, MC: true},
			{Name: "2", Op: runtime.OpLinear, In: 1, Out: c, Bias: true},
		}}
	ts := runtime.Tensors{
		"0.weight": {Shape: []int{1, 1}, Data: []float32{1}},
		"0.bias":   {Shape: []int{1}, Data: []float32{0}},
		"2.weight": {Shape: []int{c, 1}, Data: w},
		"2.bias":   {Shape: []int{c}, Data: b},
	}
	m, err := runtime.New(spec, ts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// klMutualInfo is the mutual information (1/K) Σ_k KL(p_k ‖ p̄) of the K per-sample logits, in
// float64 with log-softmax (no cancellation for near-one-hot rows).
func klMutualInfo(logits []float32, K, c int) float64 {
	lp := make([]float64, K*c)
	pbar := make([]float64, c)
	for k := 0; k < K; k++ {
		z := logits[k*c : (k+1)*c]
		mx := math.Inf(-1)
		for _, v := range z {
			mx = math.Max(mx, float64(v))
		}
		s := 0.0
		for _, v := range z {
			s += math.Exp(float64(v) - mx)
		}
		for j, v := range z {
			lp[k*c+j] = float64(v) - mx - math.Log(s)
			pbar[j] += math.Exp(lp[k*c+j]) / float64(K)
		}
	}
	mi := 0.0
	for k := 0; k < K; k++ {
		for j := 0; j < c; j++ {
			if p := math.Exp(lp[k*c+j]); p > 0 {
				mi += p * (lp[k*c+j] - math.Log(pbar[j])) / float64(K)
			}
		}
	}
	return mi
}

// TestMutualInfoNearOneHot: a confident prediction's mutual information agrees within 10 % with
// the float64 KL form over the same samples. Each sample's entropy needs ln Σe with Σe = 1 + ε,
// ε below float32's resolution at 1 for near-one-hot rows: from the float32 sum the MI was off by
// about 1e-7 nats, several times its value (0 for a true 6e-8, 3e-7 for a true 2e-8).
func TestMutualInfoNearOneHot(t *testing.T) {
	mk := func(c int, top, spread float32) ([]float32, []float32) {
		w, b := make([]float32, c), make([]float32, c)
		b[0] = top
		for j := 1; j < c; j++ {
			w[j] = spread * float32(j%3)
		}
		return w, b
	}
	type tc struct {
		name string
		w, b []float32
	}
	var cases []tc
	cases = append(cases, tc{"3 classes", []float32{0, 1, 0}, []float32{15, 0, 0}})
	w, b := mk(100, 16, 0.2)
	cases = append(cases, tc{"100 classes", w, b})
	w, b = mk(1000, 20, 0.2)
	cases = append(cases, tc{"1000 classes", w, b})
	for _, c := range cases {
		m := dropoutLogitsModel(t, c.w, c.b)
		const K = 64
		p, err := m.NewPredictor(runtime.Options{Samples: K, Seed: 3, KeepSamples: true})
		if err != nil {
			t.Fatal(err)
		}
		var pr runtime.Prediction
		if err := p.Predict([]float32{0.5}, &pr); err != nil {
			t.Fatal(err)
		}
		want := klMutualInfo(pr.Outputs, K, len(c.b))
		if got := pr.MutualInfo; !(math.Abs(got-want) <= 0.1*want+1e-9) {
			t.Errorf("%s: mutual information %.4g, want %.4g (float64 KL form over the same samples): relative error %.0f%%",
				c.name, got, want, 100*math.Abs(got-want)/want)
		}
	}
}

// TestMutualInfoNearTie: two classes whose logits differ by one float32 ulp of 1
// (1 and 1 − 2⁻²³), the same in every sample (dropout feeds a zero weight). Σe = 2 − 2⁻²³ < 2,
// so expSum64 takes the confident branch, where the float32 probabilities are 0.5 + 2⁻²⁴ and
// exactly 0.5: skipping both (a first version did) took Σe as 1 and each sample's entropy as 0
// instead of ln 2. Identical samples have mutual information 0 and expected entropy ln 2.
func TestMutualInfoNearTie(t *testing.T) {
	b := []float32{1, math.Nextafter32(math.Nextafter32(1, 0), 0)}
	if b[1] != 1-0x1p-23 {
		t.Fatalf("b[1] = %v", b[1])
	}
	m := dropoutLogitsModel(t, []float32{0, 0}, b)
	p, err := m.NewPredictor(runtime.Options{Samples: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var pr runtime.Prediction
	if err := p.Predict([]float32{0.5}, &pr); err != nil {
		t.Fatal(err)
	}
	t.Logf("probs %v entropy %.9g expected %.9g MI %.9g", pr.Probs, pr.Entropy, pr.ExpectedEntropy, pr.MutualInfo)
	if !(pr.MutualInfo <= 1e-6) || !(math.Abs(pr.ExpectedEntropy-math.Ln2) <= 1e-6) {
		t.Errorf("identical samples at p ≈ (½, ½): expected entropy %.9g (want ln 2 = %.9g), mutual information %.9g (want 0)",
			pr.ExpectedEntropy, math.Ln2, pr.MutualInfo)
	}
}

// TestExpectedEntropyNearTies: identical samples of two classes whose logits are 1 to 64 float32
// ulps apart, at several magnitudes, and of a third class far below: the expected entropy is the
// float64 entropy of the softmax of the logits (within 1e-6 nats) and the mutual information 0.
func TestExpectedEntropyNearTies(t *testing.T) {
	for _, top := range []float32{0.3, 1, 1.5, 7, 40} {
		b1 := top
		for k := 1; k <= 64; k++ {
			b1 = math.Nextafter32(b1, 0)
			b := []float32{top, b1, top - 30}
			m := dropoutLogitsModel(t, []float32{0, 0, 0}, b)
			p, err := m.NewPredictor(runtime.Options{Samples: 4, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			var pr runtime.Prediction
			if err := p.Predict([]float32{0.5}, &pr); err != nil {
				t.Fatal(err)
			}
			p.Close()
			z := []float64{0, float64(b1) - float64(top), -30}
			s := 0.0
			for _, v := range z {
				s += math.Exp(v)
			}
			want := 0.0
			for _, v := range z {
				q := math.Exp(v) / s
				want -= q * math.Log(q)
			}
			if !(math.Abs(pr.ExpectedEntropy-want) <= 1e-6) || !(pr.MutualInfo <= 1e-6) {
				t.Fatalf("logits %v: expected entropy %.9g, want %.9g; mutual information %.3g, want 0", b, pr.ExpectedEntropy, want, pr.MutualInfo)
			}
		}
	}
}
