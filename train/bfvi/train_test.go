package bfvi

import (
	"math"
	"testing"
)

// TestBernoulliKLByDegree is paper 002's Figure 2 in miniature: BF-VI with M = 10 gets closer to
// the exact Beta(3.1, 1.1) posterior than M = 1 and than mean-field Gaussian VI (all in logit
// space, where KL is the same as on π). Measured (3 seeds, 2000 steps, S = 50, lr 0.02→0.002):
// KL ≈ 0.0015 (M = 10), 0.010 (M = 1), 0.022 (Gaussian).
func TestBernoulliKLByDegree(t *testing.T) {
	b := PaperBernoulli()
	cfg := TrainConfig{Steps: 2000, Samples: 50, LR: 0.02, LREnd: 0.002, Rho: 0.9, Eps: 1e-7}
	seeds := []uint64{1, 2, 3}
	if testing.Short() {
		cfg.Steps, cfg.Samples, seeds = 1000, 30, []uint64{1}
	}
	for _, seed := range seeds {
		cfg.Seed = seed
		kl := map[string]float64{}
		for _, m := range []int{1, 10} {
			q, trace, err := FitBFVI(b, m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(trace) != cfg.Steps {
				t.Fatalf("trace has %d entries for %d steps", len(trace), cfg.Steps)
			}
			k, err := KLQuadrature(q.Coords[0], b.LogPosterior, 4000)
			if err != nil {
				t.Fatal(err)
			}
			kl[map[int]string{1: "M1", 10: "M10"}[m]] = k
		}
		q, _, err := FitGaussianVI(b, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if kl["gauss"], err = KLQuadrature(q.Coords[0], b.LogPosterior, 4000); err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: KL M=10 %.5f, M=1 %.5f, Gaussian %.5f", seed, kl["M10"], kl["M1"], kl["gauss"])
		if !(kl["M10"] >= 0 && kl["M10"] < 0.005) {
			t.Errorf("seed %d: KL(M=10) = %g, want < 0.005", seed, kl["M10"])
		}
		if !(kl["M10"] < 0.5*kl["M1"]) {
			t.Errorf("seed %d: KL(M=10) = %g not below half of KL(M=1) = %g", seed, kl["M10"], kl["M1"])
		}
		if !(kl["M10"] < 0.3*kl["gauss"]) {
			t.Errorf("seed %d: KL(M=10) = %g not below 0.3×KL(Gaussian) = %g", seed, kl["M10"], kl["gauss"])
		}
	}
}

// TestKLEstimatorsAgree compares both estimators with the closed form KL between Gaussians and
// with each other on a flow.
func TestKLEstimatorsAgree(t *testing.T) {
	g, _ := NewGaussian(0.3, 0.8)
	logP := func(x float64) float64 { return logNormal(x, -0.2, 1.5) }
	want := math.Log(1.5/0.8) + (0.8*0.8+0.5*0.5)/(2*1.5*1.5) - 0.5
	quad, err := KLQuadrature(g, logP, 2000)
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(quad-want) <= 1e-9) {
		t.Errorf("quadrature KL %.12f, closed form %.12f", quad, want)
	}
	mc, se, err := KLMonteCarlo(g, logP, 20000, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(mc-want) <= 4*se) {
		t.Errorf("Monte Carlo KL %.5f ± %.5f, closed form %.5f", mc, se, want)
	}
	p, _ := FlowParamsLinear(7, -2, 4)
	p[4] += 1
	f, _ := NewFlow(7, p)
	b := PaperBernoulli()
	quad, _ = KLQuadrature(f, b.LogPosterior, 4000)
	mc, se, _ = KLMonteCarlo(f, b.LogPosterior, 20000, 4)
	if !(math.Abs(mc-quad) <= 4*se) {
		t.Errorf("flow: Monte Carlo KL %.5f ± %.5f, quadrature %.5f", mc, se, quad)
	}
}

func TestTrainConfigValidation(t *testing.T) {
	good := TrainConfig{Steps: 1, Samples: 1, LR: 0.01, Rho: 0.9, Eps: 1e-7}
	bad := []TrainConfig{
		{Steps: 0, Samples: 1, LR: 0.01, Rho: 0.9, Eps: 1e-7},
		{Steps: 1, Samples: 0, LR: 0.01, Rho: 0.9, Eps: 1e-7},
		{Steps: 1, Samples: 1, LR: math.NaN(), Rho: 0.9, Eps: 1e-7},
		{Steps: 1, Samples: 1, LR: 0.01, Rho: 1, Eps: 1e-7},
		{Steps: 1, Samples: 1, LR: 0.01, Rho: 0.9, Eps: 0},
	}
	if _, _, err := FitBFVI(PaperBernoulli(), 3, good); err != nil {
		t.Fatal(err)
	}
	for i, c := range bad {
		if _, _, err := FitBFVI(PaperBernoulli(), 3, c); err == nil {
			t.Errorf("config %d accepted", i)
		}
	}
	if _, _, err := FitBFVI(PaperBernoulli(), 0, good); err == nil {
		t.Error("degree 0 accepted")
	}
	q, _ := NewGaussianMeanField(2, 0, 1)
	if _, err := Fit(PaperBernoulli(), q, good); err == nil {
		t.Error("dimension mismatch accepted")
	}
}

// TestCauchyBimodal is paper 002's Figure 3 in miniature: the posterior of ξ is bimodal, which a
// Gaussian cannot follow. Measured (seeds 1–3, 3000 steps, S = 50, lr 0.05→0.002): KL ≈ 0.0033
// (M = 30), 0.020 (M = 10), 0.123 (M = 1), 0.388 (Gaussian).
func TestCauchyBimodal(t *testing.T) {
	c := PaperCauchy()
	post, err := NewGridPosterior(c, -15, 15, 30000)
	if err != nil {
		t.Fatal(err)
	}
	cfg := TrainConfig{Steps: 3000, Samples: 50, LR: 0.05, LREnd: 0.002, Rho: 0.9, Eps: 1e-7}
	seeds, degs, bound := []uint64{1, 2, 3}, []int{1, 30}, 0.01
	if testing.Short() {
		cfg.Steps, cfg.Samples, seeds, degs, bound = 1000, 30, []uint64{1}, []int{10}, 0.06
	}
	for _, seed := range seeds {
		cfg.Seed = seed
		g, _, err := FitGaussianVI(c, cfg)
		if err != nil {
			t.Fatal(err)
		}
		klG, _ := KLQuadrature(g.Coords[0], post.LogDensity, 4000)
		prev := math.Inf(1)
		for _, m := range degs {
			q, _, err := FitBFVI(c, m, cfg)
			if err != nil {
				t.Fatal(err)
			}
			kl, err := KLQuadrature(q.Coords[0], post.LogDensity, 4000)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("seed %d: KL M=%d %.4f, Gaussian %.4f", seed, m, kl, klG)
			if !(kl < prev) || !(kl < klG/2) {
				t.Errorf("seed %d: KL(M=%d) = %g, previous degree %g, Gaussian %g", seed, m, kl, prev, klG)
			}
			prev = kl
		}
		if !(prev < bound) || !(klG > 0.3) {
			t.Errorf("seed %d: KL(M=%d) = %g (want < %g), Gaussian %g (want > 0.3)", seed, degs[len(degs)-1], prev, bound, klG)
		}
	}
}

// TestMultiDimSmoke fits BF-VI to the 10-parameter non-centred 8 schools briefly: the ELBO must
// rise and k̂ must be computable. (Longer runs, 15000 steps, S = 10, seeds 1–2, measured k̂ ≈
// 0.49–0.58 for mean-field BF-VI with M = 50 against 0.69–0.73 for mean-field Gaussian VI.)
func TestMultiDimSmoke(t *testing.T) {
	m := EightSchools{NonCentred: true}
	cfg := TrainConfig{Steps: 600, Samples: 10, LR: 0.02, LREnd: 0.002, Rho: 0.9, Eps: 1e-7, Seed: 2}
	q, tr, err := FitBFVI(m, 5, cfg)
	if err != nil {
		t.Fatal(err)
	}
	first, last := 0.0, 0.0
	for i := 0; i < 5; i++ {
		first += tr[i] / 5
	}
	for i := 0; i < 100; i++ {
		last += tr[len(tr)-100+i] / 100
	}
	if !(last > first+1) {
		t.Errorf("ELBO %.2f at the start, %.2f at the end", first, last)
	}
	lr, err := LogImportanceRatios(m, q, 2000, 9)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParetoK(lr)
	if err != nil || math.IsNaN(k) {
		t.Errorf("k̂ = %g, %v", k, err)
	}
	t.Logf("ELBO %.2f → %.2f, k̂ = %.2f", first, last, k)
}
