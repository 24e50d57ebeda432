package runtime_test

import (
	"math"
	"sort"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestStudentQuantile compares the Cornish–Fisher quantile with tabulated Student-t quantiles.
func TestStudentQuantile(t *testing.T) {
	for _, c := range []struct{ p, nu, want float64 }{
		{0.975, 5, 2.5706}, {0.995, 10, 3.1693}, {0.999, 7, 4.7853}, {0.9995, 30, 3.6460},
		{0.99, 3, 4.5407}, {0.9999, 15, 4.8800}, {0.975, 1e9, 1.9600},
	} {
		got := runtime.StudentQuantile(c.p, c.nu)
		if !(math.Abs(got-c.want) <= 0.03*c.want) {
			t.Errorf("t(%v; ν=%v) = %v, want %v ± 3 %%", c.p, c.nu, got, c.want)
		}
	}
}

// policyAtMedians returns a policy whose thresholds are the medians of the full-K predictions'
// confidence and mutual information, so that about half the inputs fall on each side of each.
func policyAtMedians(preds []runtime.Prediction) *runtime.Policy {
	conf, mi := make([]float64, len(preds)), make([]float64, len(preds))
	for i, p := range preds {
		conf[i], mi[i] = float64(p.Confidence), p.MutualInfo
	}
	sort.Float64s(conf)
	sort.Float64s(mi)
	// Midway between the two middle values, so that no input sits on a threshold, where the
	// batch size's rounding (GEMM summation order) could flip its decision.
	h := len(conf) / 2
	c, m := (conf[h-1]+conf[h])/2, (mi[h-1]+mi[h])/2
	return &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: &c, MaxMutualInfo: &m}
}

// TestAdaptiveAgreesWithFullK: with thresholds at the medians (the hardest place for early
// stopping), adaptive predictions decide as the full-K ones for at least 1 − 2δ of the inputs
// while drawing fewer samples on average (on the MLP); an input that runs to K gets exactly the full-K
// prediction.
func TestAdaptiveAgreesWithFullK(t *testing.T) {
	const K = 64
	n := 400
	if testing.Short() {
		n = 100
	}
	for _, tm := range []testModel{{"mlp", mlpSpec}, {"cnn", cnnSpec}} {
		t.Run(tm.name, func(t *testing.T) {
			m := buildModel(t, tm.spec(), 11)
			xs := randomInputs(m, n, 5)
			for i := range xs {
				xs[i] *= 3 // spread the confidences
			}
			base := runtime.Options{Samples: K, Seed: 9, Strategy: runtime.Weight, MaxBatch: 1}
			full := predictAll(t, m, base, xs)
			pol := policyAtMedians(full)
			opts := base
			opts.Policy, opts.Adaptive, opts.AdaptiveDelta = pol, true, 0.01
			ad := predictAll(t, m, opts, xs)
			agree, used := 0, 0
			for i := range ad {
				fullDec := pol.Decide(&full[i])
				if ad[i].Decision.Act == fullDec.Act {
					agree++
				}
				used += ad[i].Samples
				if ad[i].Samples == K {
					if err := samePrediction(&ad[i], &full[i]); err != nil {
						t.Fatalf("input %d ran all %d samples but differs from the full prediction: %v", i, K, err)
					}
				}
				if ad[i].Samples < 8 || ad[i].Samples > K || ad[i].Samples%8 != 0 {
					t.Fatalf("input %d: %d samples", i, ad[i].Samples)
				}
			}
			rate := float64(agree) / float64(n)
			mean := float64(used) / float64(n)
			t.Logf("%s: agreement %.4f, mean samples %.1f of %d", tm.name, rate, mean, K)
			// δ = 0.01 per input; allow 2δ plus three binomial standard errors.
			if limit := 1 - 0.02 - 3*math.Sqrt(0.02/float64(n)); !(rate >= limit) {
				t.Errorf("decisions agree with full K for %.4f of inputs, want ≥ %.4f", rate, limit)
			}
			// The random CNN's confidences cluster at the median, where nothing can stop early.
			if tm.name == "mlp" && !(mean < 0.9*K) {
				t.Errorf("mean samples %.1f of %d: adaptive sampling saves nothing", mean, K)
			}
		})
	}
}

// TestAdaptiveBatchMatchesSingle: inputs stop independently inside a batch, so a batch gives each
// input the decision and sample count it gets alone; KeepSamples keeps exactly the samples used.
func TestAdaptiveBatchMatchesSingle(t *testing.T) {
	m := buildModel(t, mlpSpec(), 3)
	xs := randomInputs(m, 12, 8)
	full := predictAll(t, m, runtime.Options{Samples: 32, Seed: 2, Strategy: runtime.Local}, xs)
	pol := policyAtMedians(full)
	opts := runtime.Options{Samples: 32, Seed: 2, Strategy: runtime.Local, Policy: pol, Adaptive: true, KeepSamples: true}
	single := predictAll(t, m, opts, xs)
	opts.MaxBatch = 5
	batch := predictAll(t, m, opts, xs)
	for i := range single {
		if single[i].Samples != batch[i].Samples || single[i].Decision != batch[i].Decision {
			t.Errorf("input %d: alone %d samples %v, in a batch %d samples %v", i, single[i].Samples, single[i].Decision, batch[i].Samples, batch[i].Decision)
		}
		if len(batch[i].Outputs) != batch[i].Samples*m.OutputSize() {
			t.Errorf("input %d: %d kept outputs for %d samples", i, len(batch[i].Outputs), batch[i].Samples)
		}
		if err := closePrediction(&single[i], &batch[i], 1e-5); err != nil {
			t.Errorf("input %d: %v", i, err)
		}
	}
}

func TestAdaptiveOptions(t *testing.T) {
	m := buildModel(t, mlpSpec(), 3)
	c := 0.5
	pol := &runtime.Policy{Version: 1, MinConfidence: &c}
	for _, o := range []struct {
		opts runtime.Options
		want string
	}{
		{runtime.Options{Adaptive: true}, "needs a policy"},
		{runtime.Options{Adaptive: true, Policy: pol, AdaptiveRound: 2}, "round of 2 samples"},
		{runtime.Options{Adaptive: true, Policy: pol, AdaptiveDelta: 1}, "delta 1"},
		{runtime.Options{Adaptive: true, Policy: pol, AdaptiveDelta: math.NaN()}, "delta NaN"},
		{runtime.Options{Policy: &runtime.Policy{Version: 1, MaxEpistemicStd: &c}}, "Options.Policy: policy: max_epistemic_std"},
	} {
		if _, err := m.NewPredictor(o.opts); err == nil || !strings.Contains(err.Error(), o.want) {
			t.Errorf("%+v: error %v, want one containing %q", o.opts, err, o.want)
		}
	}
	// The mean forward draws one sample: Adaptive has nothing to do.
	p, err := m.NewPredictor(runtime.Options{Adaptive: true, Policy: pol, Mean: true})
	if err != nil {
		t.Fatal(err)
	}
	var pr runtime.Prediction
	if err := p.Predict(randomInputs(m, 1, 1), &pr); err != nil || pr.Samples != 1 {
		t.Fatalf("mean: %v, %d samples", err, pr.Samples)
	}
}

// TestAdaptiveWithoutThresholds: under a policy that sets no threshold (calibrate's for a
// coverage target of 1) every input acts, so each stops after the first round — for a
// classifier and a regression model alike (it had been refused as "needs a policy with a
// threshold").
func TestAdaptiveWithoutThresholds(t *testing.T) {
	for _, c := range []struct {
		name string
		spec *runtime.Spec
	}{{"classifier", mlpSpec()}, {"regression", faSpec()}} {
		m := buildModel(t, c.spec, 4)
		xs := randomInputs(m, 6, 5)
		opts := runtime.Options{Samples: 32, Seed: 1, Policy: &runtime.Policy{Version: 1}, Adaptive: true}
		for i, pr := range predictAll(t, m, opts, xs) {
			if pr.Samples != 8 || !pr.Decision.Act || pr.Decision.Reason != runtime.ReasonCertain {
				t.Errorf("%s input %d: %d samples, decision %v (%v); want 8 (the first round), act (certain)",
					c.name, i, pr.Samples, pr.Decision, pr.Decision.Reason)
			}
		}
	}
}

// TestAdaptiveRegression: a regression policy on the epistemic standard deviation stops early
// and agrees with the full-K decision.
func TestAdaptiveRegression(t *testing.T) {
	m := buildModel(t, faSpec(), 4)
	n := 200
	if testing.Short() {
		n = 60
	}
	xs := randomInputs(m, n, 3)
	base := runtime.Options{Samples: 64, Seed: 1}
	full := predictAll(t, m, base, xs)
	stds := make([]float64, n)
	for i, p := range full {
		for _, v := range p.EpistemicVar {
			stds[i] = max(stds[i], math.Sqrt(float64(v)))
		}
	}
	sort.Float64s(stds)
	limit := stds[n/2]
	pol := &runtime.Policy{Version: 1, MaxEpistemicStd: &limit}
	opts := base
	opts.Policy, opts.Adaptive = pol, true
	ad := predictAll(t, m, opts, xs)
	agree, used := 0, 0
	for i := range ad {
		if ad[i].Decision.Act == pol.Decide(&full[i]).Act {
			agree++
		}
		used += ad[i].Samples
	}
	t.Logf("agreement %d/%d, mean samples %.1f of 64", agree, n, float64(used)/float64(n))
	if !(float64(agree) >= (1-0.02-3*math.Sqrt(0.02/float64(n)))*float64(n)) || used >= 64*n {
		t.Errorf("agreement %d/%d, %d samples in all", agree, n, used)
	}
}

// TestAdaptiveZeroAllocs: adaptive predictions allocate nothing after warm-up.
func TestAdaptiveZeroAllocs(t *testing.T) {
	m := buildModel(t, mlpSpec(), 3)
	c := 0.6
	p, err := m.NewPredictor(runtime.Options{Samples: 32, Adaptive: true, MaxBatch: 4,
		Policy: &runtime.Policy{Version: 1, MinConfidence: &c}})
	if err != nil {
		t.Fatal(err)
	}
	xs := randomInputs(m, 6, 2)
	out := make([]runtime.Prediction, 6)
	if err := p.PredictBatch(xs, out); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(5, func() { _ = p.PredictBatch(xs, out) }); a != 0 {
		t.Errorf("%v allocations per adaptive PredictBatch", a)
	}
}
