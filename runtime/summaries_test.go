package runtime_test

import (
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestSummaries: the predictive summaries (MATH.md §3) recomputed in float64 from the kept
// per-sample outputs: classification p̄, per-class sd, class and confidence, total and expected
// entropy and mutual information; regression mean, epistemic and total variance.
func TestSummaries(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			spec := tm.spec()
			m := buildModel(t, spec, 13)
			const k = 17
			xs := randomInputs(m, 2, 14)
			out := predictAll(t, m, runtime.Options{Samples: k, Seed: 3, KeepSamples: true, MaxBatch: 2}, xs)
			c := m.OutputSize()
			near := func(what string, got, want float64) {
				t.Helper()
				if math.Abs(got-want) > 1e-5*math.Max(1, math.Abs(want)) {
					t.Errorf("%s = %.8g, want %.8g", what, got, want)
				}
			}
			for i := range out {
				o := &out[i]
				if len(o.Outputs) != k*c {
					t.Fatalf("input %d: %d outputs kept, want %d", i, len(o.Outputs), k*c)
				}
				if spec.Task == runtime.Regression {
					for j := 0; j < c; j++ {
						s, s2 := 0.0, 0.0
						for q := 0; q < k; q++ {
							v := float64(o.Outputs[q*c+j])
							s += v
							s2 += v * v
						}
						mu := s / k
						ev := s2/k - mu*mu
						near("Mean", float64(o.Mean[j]), mu)
						near("EpistemicVar", float64(o.EpistemicVar[j]), ev)
						near("Var", float64(o.Var[j]), ev+spec.NoiseVar)
					}
					if len(o.Probs) != 0 {
						t.Errorf("regression prediction has %d probabilities", len(o.Probs))
					}
					continue
				}
				pbar, p2 := make([]float64, c), make([]float64, c)
				eh := 0.0
				for q := 0; q < k; q++ {
					for j, p := range softmax64(o.Outputs[q*c : (q+1)*c]) {
						pbar[j] += p / k
						p2[j] += p * p / k
						if p > 0 {
							eh -= p * math.Log(p) / k
						}
					}
				}
				h, best := 0.0, 0
				for j, p := range pbar {
					near("Probs", float64(o.Probs[j]), p)
					near("Std", float64(o.Std[j]), math.Sqrt(math.Max(p2[j]-p*p, 0)))
					h -= p * math.Log(p)
					if p > pbar[best] {
						best = j
					}
				}
				if o.Class != best {
					t.Errorf("Class = %d, want %d", o.Class, best)
				}
				near("Confidence", float64(o.Confidence), pbar[best])
				near("Entropy", o.Entropy, h)
				near("ExpectedEntropy", o.ExpectedEntropy, eh)
				near("MutualInfo", o.MutualInfo, h-eh)
				if o.MutualInfo < 0 || len(o.Mean) != 0 {
					t.Errorf("MutualInfo %g, %d regression means", o.MutualInfo, len(o.Mean))
				}
			}
		})
	}
}

// TestDeterministicModel: a network without posteriors uses one sample whatever Samples says and
// has no epistemic uncertainty.
func TestDeterministicModel(t *testing.T) {
	spec := layerNN[0].spec()
	spec.Task = runtime.Classification
	m := buildModel(t, spec, 3)
	if m.Stochastic() {
		t.Fatal("deterministic network reports Stochastic")
	}
	p, err := m.NewPredictor(runtime.Options{Samples: 10, KeepSamples: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Options().Samples != 1 {
		t.Errorf("Samples = %d, want 1", p.Options().Samples)
	}
	var pr runtime.Prediction
	if err := p.Predict(randomInputs(m, 1, 1), &pr); err != nil {
		t.Fatal(err)
	}
	if len(pr.Outputs) != m.OutputSize() || math.Abs(pr.MutualInfo) > 1e-6 {
		t.Errorf("%d outputs, mutual information %g", len(pr.Outputs), pr.MutualInfo)
	}
}

// TestOneSampleMutualInfo: with one sample (Options.Mean, or Samples = 1) the mutual information
// is exactly 0 and the expected entropy the entropy — not the rounding difference of their two
// computations, which would rank inputs by noise (an OOD AUROC of 0.45 instead of 0.5).
func TestOneSampleMutualInfo(t *testing.T) {
	m := buildModel(t, mlpSpec(), 3)
	xs := randomInputs(m, 16, 4)
	for _, o := range []runtime.Options{{Mean: true, MaxBatch: 16}, {Samples: 1, MaxBatch: 16}} {
		for i, p := range predictAll(t, m, o, xs) {
			if p.MutualInfo != 0 || p.ExpectedEntropy != p.Entropy {
				t.Fatalf("%+v input %d: MI %g, expected entropy %v vs entropy %v", o, i, p.MutualInfo, p.ExpectedEntropy, p.Entropy)
			}
		}
	}
}
