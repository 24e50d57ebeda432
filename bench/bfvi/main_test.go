package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestQuick runs every experiment in quick mode (reduced sizes) and checks that each writes its
// table and figures; the experiments themselves fail on non-finite KL or k̂. Skipped under -short.
func TestQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every experiment (quick mode, a few seconds)")
	}
	dir := t.TempDir()
	o := options{quick: true, outDir: filepath.Join(dir, "res"), imgDir: filepath.Join(dir, "img")}
	md, err := runExperiments("all", o)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range experiments {
		if e.needs != nil && e.needs(o) != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(o.outDir, e.name+".md"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "|---|") || !strings.Contains(string(b), "CPU time") {
			t.Errorf("%s: table missing:\n%s", e.name, b)
		}
	}
	for _, want := range []string{"| BF-VI | 30 |", "| Gaussian-VI | – |", "| BF-VI MAF (M = 10) |", "| NCP | Gaussian VI full rank |", "| BF-VI mean field (M = 10) | -", "| reference script's | Gaussian VI mean field |"} {
		if !strings.Contains(md, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	for _, f := range []string{"bernoulli.png", "cauchy.png", "linreg_pairs_maf.png", "linreg_pairs_mfgauss.png", "eightschools_funnel.png", "nnreg_predictive.png"} {
		st, err := os.Stat(filepath.Join(o.imgDir, f))
		if err != nil {
			t.Error(err)
			continue
		}
		if st.Size() < 1000 || st.Size() > 150<<10 {
			t.Errorf("%s: %d bytes", f, st.Size())
		}
	}
	if _, err := runExperiments("nope", o); err == nil {
		t.Error("unknown experiment accepted")
	}
}

// TestNNRegQuick runs the network experiment on reduced sizes (well under a second) and checks
// that it means something: BF-VI predicts the held-out points in the training range better than
// the prior predictive, its predictive is closer to NUTS's than the prior's, and our NUTS
// reproduces the reference run's Stan quantiles.
func TestNNRegQuick(t *testing.T) {
	dir := t.TempDir()
	o := options{quick: true, outDir: filepath.Join(dir, "res"), imgDir: filepath.Join(dir, "img")}
	r, err := nnRegExperiment(o)
	if err != nil {
		t.Fatal(err)
	}
	prior, nuts, bf, gauss := r.Methods[0], r.Methods[1], r.Methods[2], r.Methods[3]
	for i, ls := range bf.LogScore {
		if !(ls > prior.LogScore[0]+0.5) {
			t.Errorf("BF-VI seed %d: in-range log-score %.3f, prior predictive %.3f", i+1, ls, prior.LogScore[0])
		}
		if !(bf.W1[i] < prior.W1[0]/3) {
			t.Errorf("BF-VI seed %d: W1 to NUTS %.3f, prior predictive %.3f", i+1, bf.W1[i], prior.W1[0])
		}
	}
	for _, m := range []*nnMethod{bf, gauss} {
		if len(m.Khat) != r.Runs || len(m.W1) != r.Runs {
			t.Errorf("%s: %d k̂ and %d distances for %d seeds", m.Name, len(m.Khat), len(m.W1), r.Runs)
		}
	}
	if !(nuts.W1[0] < bf.W1[0]) {
		t.Errorf("NUTS-vs-NUTS floor %.3f not below BF-VI's distance %.3f", nuts.W1[0], bf.W1[0])
	}
	if !(r.MaxRhatMu < 1.1) {
		t.Errorf("NUTS: max R̂ of μ(x) %.3f", r.MaxRhatMu)
	}
	for q, d := range r.StanDiff {
		if !(d < 0.15) {
			t.Errorf("NUTS quantile %d differs from the Stan run by %.3f on average", q, d)
		}
	}
	if err := nnFigure(filepath.Join(dir, "nn.png"), r); err != nil {
		t.Fatal(err)
	}
}

func TestW1KS(t *testing.T) {
	for _, tc := range []struct {
		a, b   []float64
		w1, ks float64
	}{
		{[]float64{0}, []float64{1}, 1, 1},
		{[]float64{0, 1}, []float64{0, 1}, 0, 0},
		{[]float64{0, 1, 2}, []float64{0.5, 1.5, 2.5}, 0.5, 1.0 / 3},
		{[]float64{0, 2}, []float64{1}, 1, 0.5},
	} {
		w1, ks := w1KS(tc.a, tc.b)
		if !(math.Abs(w1-tc.w1) <= 1e-12) || !(math.Abs(ks-tc.ks) <= 1e-12) {
			t.Errorf("w1KS(%v, %v) = %g, %g; want %g, %g", tc.a, tc.b, w1, ks, tc.w1, tc.ks)
		}
	}
}
