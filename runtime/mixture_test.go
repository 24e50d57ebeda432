package runtime_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// mixtureGolden is the documented step between the seeds of a mixture's members
// (Options.Seed + k·0x9e3779b97f4a7c15 for member k).
const mixtureGolden = 0x9e3779b97f4a7c15

// buildMixture makes a mixture of M posteriors of spec's kind (random tensors per member) and
// the M single-posterior models.
func buildMixture(t testing.TB, spec *runtime.Spec, M int, seed uint64) (*runtime.Model, []*runtime.Model) {
	t.Helper()
	mix := *spec
	mix.Members = M
	all, per := ensembleTensors(&mix, M, seed)
	m := newModel(t, &mix, all)
	if !m.Mixture() || m.Members() != M || !m.Stochastic() {
		t.Fatalf("Mixture %v, Members %d, Stochastic %v", m.Mixture(), m.Members(), m.Stochastic())
	}
	var singles []*runtime.Model
	for _, ts := range per {
		sm := newModel(t, spec, ts)
		singles = append(singles, sm)
	}
	return m, singles
}

// TestMixtureMatchesMembers: sample s of a mixture's prediction is, bit for bit, member s mod M's
// sample s div M drawn alone with that member's seed — for every test model (inducing, FFG, FA,
// a CNN with BatchNorm and residual blocks), both strategies, sample counts that are and are not
// multiples of M, one and several threads; and the summaries are those of the pooled samples.
func TestMixtureMatchesMembers(t *testing.T) {
	const M, seed = 3, 41
	for _, tm := range testModels {
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
			for _, K := range []int{6, 7} {
				t.Run(fmt.Sprintf("%s/%v/K=%d", tm.name, st, K), func(t *testing.T) {
					m, singles := buildMixture(t, tm.spec(), M, 7)
					xs := randomInputs(m, 2, 5)
					opts := runtime.Options{Samples: K, Seed: seed, Strategy: st, KeepSamples: true, MaxBatch: 2}
					got := predictAll(t, m, opts, xs)
					c := m.OutputSize()
					for k, sm := range singles {
						kk := (K - k + M - 1) / M // member k's samples
						o := opts
						o.Samples, o.Seed = kk, seed+uint64(k)*mixtureGolden
						want := predictAll(t, sm, o, xs)
						for i := range got {
							for l := 0; l < kk; l++ {
								s := l*M + k
								g := got[i].Outputs[s*c : (s+1)*c]
								w := want[i].Outputs[l*c : (l+1)*c]
								for j := range g {
									if math.Float32bits(g[j]) != math.Float32bits(w[j]) {
										t.Fatalf("input %d, sample %d (member %d's %d), output %d: %v, member alone %v", i, s, k, l, j, g[j], w[j])
									}
								}
							}
						}
					}
					// The pooled samples' summaries: the same model's prediction with threads.
					o := opts
					o.Threads = 3
					for i, p := range predictAll(t, m, o, xs) {
						if err := samePrediction(&got[i], &p); err != nil {
							t.Fatalf("input %d: threads 3 vs 1: %v", i, err)
						}
					}
					if m.Task() == runtime.Classification {
						for i := range got {
							var mean float64
							for s := 0; s < K; s++ {
								mean += softmax64(got[i].Outputs[s*c : (s+1)*c])[got[i].Class] / float64(K)
							}
							if !(math.Abs(mean-float64(got[i].Probs[got[i].Class])) <= 1e-5) {
								t.Fatalf("input %d: mean probability of class %d over the kept samples %v, prediction %v", i, got[i].Class, mean, got[i].Probs[got[i].Class])
							}
						}
					}
				})
			}
		}
	}
}

// TestMixtureMean: Options.Mean draws each member's posterior mean once (Samples = M), so the
// prediction's kept outputs are the members' mean predictions.
func TestMixtureMean(t *testing.T) {
	const M = 3
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			m, singles := buildMixture(t, tm.spec(), M, 9)
			xs := randomInputs(m, 1, 3)
			got := predictAll(t, m, runtime.Options{Mean: true, KeepSamples: true}, xs)[0]
			if got.Samples != M {
				t.Fatalf("%d samples, want %d", got.Samples, M)
			}
			c := m.OutputSize()
			for k, sm := range singles {
				w := predictAll(t, sm, runtime.Options{Mean: true, KeepSamples: true}, xs)[0]
				for j := range c {
					if g := got.Outputs[k*c+j]; math.Float32bits(g) != math.Float32bits(w.Outputs[j]) {
						t.Fatalf("member %d output %d: %v, member's mean %v", k, j, g, w.Outputs[j])
					}
				}
			}
		})
	}
}

// TestMixtureDefaultsAllocs: a mixture's default sample count is at least 32 and a multiple of
// M; predicting allocates nothing after warm-up.
func TestMixtureDefaultsAllocs(t *testing.T) {
	m, _ := buildMixture(t, mlpSpec(), 5, 3)
	p, err := m.NewPredictor(runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if k := p.Options().Samples; k != 35 {
		t.Fatalf("default samples %d, want 35 (≥ 32, a multiple of 5)", k)
	}
	xs := randomInputs(m, 1, 1)
	var out runtime.Prediction
	if err := p.Predict(xs, &out); err != nil {
		t.Fatal(err)
	}
	if a := testing.AllocsPerRun(20, func() { _ = p.Predict(xs, &out) }); a != 0 {
		t.Fatalf("%v allocations per prediction", a)
	}
}

// TestMixturePosterior: the mixture's moments are the members' combined by the law of total
// covariance, and its mean weights the average of the members'.
func TestMixturePosterior(t *testing.T) {
	const M = 3
	for _, tm := range testModels[:2] { // mlp (inducing, ffg) and fa-mlp
		t.Run(tm.name, func(t *testing.T) {
			m, singles := buildMixture(t, tm.spec(), M, 13)
			got, err := m.Posterior(4096)
			if err != nil {
				t.Fatal(err)
			}
			var parts []*runtime.Posterior
			for _, sm := range singles {
				q, err := sm.Posterior(4096)
				if err != nil {
					t.Fatal(err)
				}
				parts = append(parts, q)
			}
			d := got.Dim
			for i := 0; i < d; i++ {
				var mu float64
				for _, q := range parts {
					mu += q.Mean[i] / M
				}
				if !(math.Abs(got.Mean[i]-mu) <= 1e-9*math.Max(1, math.Abs(mu))) {
					t.Fatalf("mean[%d] = %v, want %v", i, got.Mean[i], mu)
				}
				for j := 0; j < d; j += 7 {
					// Σ = E[Cov | member] + Cov[E | member].
					var within, mi, mj, mij float64
					for _, q := range parts {
						within += q.Cov[i*d+j] / M
						mi += q.Mean[i] / M
						mj += q.Mean[j] / M
						mij += q.Mean[i] * q.Mean[j] / M
					}
					want := within + mij - mi*mj
					if !(math.Abs(got.Cov[i*d+j]-want) <= 1e-9*math.Max(1, math.Abs(want))) {
						t.Fatalf("cov[%d,%d] = %v, want %v", i, j, got.Cov[i*d+j], want)
					}
				}
			}
			for _, li := range m.Layers() {
				w, r, c, err := m.MeanWeight(li.Name)
				if err != nil {
					t.Fatal(err)
				}
				for k, sm := range singles {
					wk, _, _, err := m.MemberWeight(li.Name, k)
					if err != nil {
						t.Fatal(err)
					}
					ws, _, _, _ := sm.MeanWeight(li.Name)
					for i := range wk {
						if wk[i] != ws[i] {
							t.Fatalf("layer %s member %d weight %d: %v, member alone %v", li.Name, k, i, wk[i], ws[i])
						}
					}
				}
				if len(w) != r*c {
					t.Fatalf("layer %s: %d weights for %d×%d", li.Name, len(w), r, c)
				}
			}
		})
	}
}

// TestMixtureErrors: a mixture missing one member's tensor or with one of the wrong shape is
// refused, naming the member and the tensor.
func TestMixtureErrors(t *testing.T) {
	spec := *mlpSpec()
	spec.Members = 3
	all, _ := ensembleTensors(&spec, 3, 1)
	delete(all, "member2/2.weight_mean")
	_, err := runtime.New(&spec, all)
	if err == nil || !strings.Contains(err.Error(), "mixture member 2") || !strings.Contains(err.Error(), "member2/2.weight_mean") {
		t.Fatalf("error %v: want it to name mixture member 2 and member2/2.weight_mean", err)
	}
	all, _ = ensembleTensors(&spec, 3, 1)
	all["member1/2.weight_mean"] = runtime.Tensor{Shape: []int{3}, Data: make([]float32, 3)}
	if _, err := runtime.New(&spec, all); err == nil || !strings.Contains(err.Error(), "mixture member 1") {
		t.Fatalf("error %v: want it to name mixture member 1", err)
	}
}

// TestMixtureAdaptive: adaptive sampling of a mixture draws, for every input, the first samples
// of the full-K prediction (bit for bit), in rounds across the members, and stops early for some.
func TestMixtureAdaptive(t *testing.T) {
	m, _ := buildMixture(t, mlpSpec(), 3, 21)
	conf := 0.3
	pol := &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: &conf}
	xs := randomInputs(m, 8, 2)
	base := runtime.Options{Samples: 48, Seed: 5, KeepSamples: true, MaxBatch: 8, Policy: pol}
	full := predictAll(t, m, base, xs)
	o := base
	o.Adaptive = true
	early := 0
	c := m.OutputSize()
	for i, a := range predictAll(t, m, o, xs) {
		if a.Samples < 48 {
			early++
		}
		if a.Samples%24 != 0 && a.Samples != 48 { // rounds of 3 members × a block of 8
			t.Fatalf("input %d stopped after %d samples, not a whole round", i, a.Samples)
		}
		for j, v := range a.Outputs[:a.Samples*c] {
			if math.Float32bits(v) != math.Float32bits(full[i].Outputs[j]) {
				t.Fatalf("input %d output %d: adaptive %v, full %v", i, j, v, full[i].Outputs[j])
			}
		}
	}
	if early == 0 {
		t.Fatal("no input stopped early")
	}
}
