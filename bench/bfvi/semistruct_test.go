package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// TestSSGenerate checks the synthetic task on a hand-made data set: the covariate is κ·u + ε
// with ε standard normal, the label frequency matches the mean of σ(true logit), the draws are
// reproducible, and bad input is an error.
func TestSSGenerate(t *testing.T) {
	const n = 20000
	ds := &data.Dataset{Name: "synthetic", N: n, Dim: 784, X: make([]float32, n*784), Labels: make([]int, n)}
	idx := make([]int, n)
	for i := range idx {
		ds.Labels[i] = i % 10
		idx[i] = i
	}
	d, err := ssGenerate(ds, idx, 7, 1)
	if err != nil {
		t.Fatal(err)
	}
	var se, se2, pos, pi float64
	for i := range d.Y {
		u := 0.0
		if c := ds.Labels[i]; c == 0 || c == 2 || c == 4 || c == 6 {
			u = 1
		}
		e := d.Tab[i] - ssKappa*u
		se, se2 = se+e, se2+e*e
		pos += float64(d.Y[i])
		want := ssA*u + ssBeta*d.Tab[i] + ssC
		if !(math.Abs(d.Logit[i]-want) <= 1e-12) {
			t.Fatalf("image %d: logit %g, want %g", i, d.Logit[i], want)
		}
		pi += 1 / (1 + math.Exp(-want))
	}
	mean, vr := se/n, se2/n-(se/n)*(se/n)
	if !(math.Abs(mean) <= 0.03) || !(math.Abs(vr-1) <= 0.04) {
		t.Errorf("ε has mean %.4f and variance %.4f, want 0 and 1", mean, vr)
	}
	// The label count is a sum of independent Bernoullis: sd ≤ √(n/4) ≈ 71.
	if !(math.Abs(pos-pi) <= 4*math.Sqrt(n/4.0)) {
		t.Errorf("%g positive labels, expected %.0f", pos, pi)
	}
	again, _ := ssGenerate(ds, idx[:100], 7, 1)
	for i := range again.Y {
		if again.Y[i] != d.Y[i] || again.Tab[i] != d.Tab[i] {
			t.Fatalf("image %d differs between two draws with the same seed", i)
		}
	}
	if _, err := ssGenerate(ds, []int{n}, 7, 1); err == nil {
		t.Error("out-of-range image index accepted")
	}
	bad := *ds
	bad.Dim = 10
	if _, err := ssGenerate(&bad, idx[:1], 7, 1); err == nil {
		t.Error("10-value images accepted")
	}
}

func TestAUC(t *testing.T) {
	for _, tc := range []struct {
		score []float64
		y     []int
		want  float64
	}{
		{[]float64{0.1, 0.2, 0.8, 0.9}, []int{0, 0, 1, 1}, 1},
		{[]float64{0.1, 0.2, 0.8, 0.9}, []int{1, 1, 0, 0}, 0},
		{[]float64{0.5, 0.5, 0.5}, []int{1, 0, 1}, 0.5},
		// pairs (pos, neg): (0.4, 0.1) ✓, (0.4, 0.6) ✗, (0.7, 0.1) ✓, (0.7, 0.6) ✓ → 3/4
		{[]float64{0.1, 0.4, 0.6, 0.7}, []int{0, 1, 0, 1}, 0.75},
		// tie between a positive and a negative counts one half: (0.3, 0.3) ½, (0.3, 0.1) 1 → 3/4
		{[]float64{0.3, 0.3, 0.1}, []int{1, 0, 0}, 0.75},
		{[]float64{0.3, 0.2}, []int{1, 1}, 0.5},
	} {
		if got := auc(tc.score, tc.y); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("auc(%v, %v) = %g, want %g", tc.score, tc.y, got, tc.want)
		}
	}
}

// TestSSPredict checks the log-score against log σ(±η) written out, and that averaging the
// probabilities of two draws (not their logits) is what is scored.
func TestSSPredict(t *testing.T) {
	y := []int{1, 0, 1}
	eta := []float64{2, -1, -30}
	want := (math.Log(1/(1+math.Exp(-2))) + math.Log(1-1/(1+math.Exp(1))) + math.Log(1/(1+math.Exp(30)))) / 3
	if got := ssPredict(y, 1, func(i, _ int) float64 { return eta[i] }).LogScore; !(math.Abs(got-want) <= 1e-12) {
		t.Errorf("log-score %.15g, want %.15g", got, want)
	}
	// Draws η = ±3 for a positive label: p = (σ(3) + σ(−3))/2 = 1/2.
	if got := ssPredict([]int{1}, 2, func(_, s int) float64 { return []float64{3, -3}[s] }).LogScore; !(math.Abs(got-math.Log(0.5)) <= 1e-12) {
		t.Errorf("mixture log-score %.15g, want log ½", got)
	}
	if got := ssLogLik(0, 800); !(math.Abs(got+800) <= 1e-9) {
		t.Errorf("log p(y = 0 | η = 800) = %g, want −800", got)
	}
}

func TestSummarise(t *testing.T) {
	x := make([]float64, 101)
	for i := range x {
		x[i] = float64(100 - i) // 100 … 0
	}
	s := summarise(x)
	// sd of 0…100 with n − 1: √(101·102/12) = 29.30017…
	if s.Mean != 50 || !(math.Abs(s.SD-math.Sqrt(101*102/12.0)) <= 1e-12) || s.Q50 != 50 || s.Q025 != 2.5 || s.Q975 != 97.5 {
		t.Errorf("summary %+v", s)
	}
}

// TestSemiStructQuick runs the experiment on reduced sizes (seed 1; a few seconds) and checks
// that it means something: BF-VI's β (mean field and MAF) agrees with NUTS on the tabular-only model and, given the
// trained network, on the semi-structured one; the tabular-only posterior is pulled away from the
// true β by the image class it cannot see, the semi-structured one covers it; adding x to the
// image network improves the test log-score; and no model beats the true logit.
func TestSemiStructQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("trains three small CNNs (a few seconds)")
	}
	if err := needFashionMNIST(options{}); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	o := options{quick: true, outDir: filepath.Join(dir, "res"), imgDir: filepath.Join(dir, "img")}
	r, err := semiStructExperiment(o, data.DefaultFashionMNISTDir)
	if err != nil {
		t.Fatal(err)
	}
	M := r.Methods
	if w := M[ssTabBF].W1[0]; !(w < 0.08) {
		t.Errorf("tabular-only BF-VI: W1 to NUTS %.3f", w)
	}
	if w := M[ssTabMAF].W1[0]; !(w < 0.05) {
		t.Errorf("tabular-only BF-VI MAF: W1 to NUTS %.3f", w)
	}
	if w := M[ssSemiBF].W1[0]; !(w < 0.05) {
		t.Errorf("semi-structured BF-VI: W1 to NUTS given the network %.3f", w)
	}
	if b := M[ssTabNUTS].Beta[0]; !(b.Q025 > ssBeta) {
		t.Errorf("tabular-only NUTS interval (%.3f, %.3f) not above the true β: the confounding is missing", b.Q025, b.Q975)
	}
	if b := M[ssSemiBF].Beta[0]; !(b.Q025 < ssBeta && ssBeta < b.Q975) {
		t.Errorf("semi-structured BF-VI interval (%.3f, %.3f) misses the true β", b.Q025, b.Q975)
	}
	if b := M[ssTrueOffNUTS].Beta[0]; !(b.Q025 < ssBeta && ssBeta < b.Q975) {
		t.Errorf("interval (%.3f, %.3f) given the true image effect misses the true β", b.Q025, b.Q975)
	}
	if a, b := M[ssSemiBF].Score[0].LogScore, M[ssImage].Score[0].LogScore; !(a > b+0.05) {
		t.Errorf("semi-structured log-score %.4f not above image-only %.4f", a, b)
	}
	best := M[ssOracle].Score[0].LogScore
	for k, m := range M {
		if k != ssOracle && k != ssTrueOffNUTS && !(m.Score[0].LogScore <= best) {
			t.Errorf("%s: log-score %.4f above the true model's %.4f", m.Name, m.Score[0].LogScore, best)
		}
	}
	if !(r.MaxRhat < 1.1) {
		t.Errorf("NUTS max R̂ %.3f", r.MaxRhat)
	}
	if err := ssFigure(filepath.Join(dir, "ss.png"), r); err != nil {
		t.Fatal(err)
	}
}
