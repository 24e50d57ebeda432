//go:build !device

package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/fa"
)

// linregCSV writes the data of paper 000 §4.1 — n inputs in R² with unit variances and
// covariance 0.5, θ ~ N(0, α⁻¹I) with α = 0.01, y = θᵀx + ε with noise precision β = 0.1 —
// rounded to float32 (what the trainer reads), as columns x1,x2,y.
func linregCSV(t *testing.T, seed uint64, n int) (path string, x, y []float64) {
	rng := rand.New(rand.NewPCG(seed, 0x11ea7))
	th := [2]float64{10 * rng.NormFloat64(), 10 * rng.NormFloat64()}
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	r32 := func(v float64) float64 { return float64(float32(v)) }
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 32) }
	for i := 0; i < n; i++ {
		z1, z2 := rng.NormFloat64(), rng.NormFloat64()
		x1, x2 := r32(z1), r32(0.5*z1+math.Sqrt(0.75)*z2)
		yi := r32(th[0]*x1 + th[1]*x2 + rng.NormFloat64()/math.Sqrt(0.1))
		x, y = append(x, x1, x2), append(y, yi)
		fmt.Fprintf(&b, "%s,%s,%s\n", g(x1), g(x2), g(yi))
	}
	path = filepath.Join(t.TempDir(), "linreg.csv")
	mustWrite(t, path, []byte(b.String()))
	return path, x, y
}

// linregPosterior is the exact posterior N(m, S) of Bayesian linear regression without bias,
// S = (αI + βXᵀX)⁻¹ and m = βSXᵀy, in float64 (S row-major 2×2).
func linregPosterior(x, y []float64, alpha, beta float64) (m, s []float64) {
	var a, b, d, u, v float64
	for i := range y {
		x1, x2 := x[2*i], x[2*i+1]
		a += x1 * x1
		b += x1 * x2
		d += x2 * x2
		u += x1 * y[i]
		v += x2 * y[i]
	}
	a, b, d = alpha+beta*a, beta*b, alpha+beta*d
	det := a*d - b*b
	s = []float64{d / det, -b / det, -b / det, a / det}
	m = []float64{beta * (s[0]*u + s[1]*v), beta * (s[2]*u + s[3]*v)}
	return m, s
}

// TestFALinearRegressionCLI reproduces paper 000 §4.1 (Table 4) through the command line, one
// seed: a CSV → edgebnn train --posterior vifa (all 1000 points, exact ELBO, §4.1's
// hyper-parameters, c, F and log ψ averaged over the second half of the updates) → edgebnn
// convert --dtype f16 → edgebnn posterior --json, compared with the closed-form posterior. The
// three distances must beat the paper's (0.0031, 0.0983, 0.0194).
func TestFALinearRegressionCLI(t *testing.T) {
	csv, x, y := linregCSV(t, 0, 1000)
	dir := t.TempDir()
	trainLinreg(t, x, y, filepath.Join(dir, "linreg.ebnn"), "--data", "csv:"+csv, "--task", "regression",
		"--arch", linregArch(t, dir), "--posterior", "vifa", "--latent-dim", "1", "--prior-precision", "0.01",
		"--noise-precision", "0.1", "--mc-samples", "10", "--batch-size", "100", "--epochs", "5000",
		"--optimizer", "sgd", "--lr", "0.01", "--lr-factors", "1e-4", "--lr-log-var", "0.01", "--clip", "10",
		"--fa-average-epochs", "2500", "--test-fraction", "0", "--eval-every", "0", "--checkpoint-every", "0",
		"--seed", "0")
}

// linregArch writes paper 000 §4.1's model, a bias-free Linear 2 → 1, to dir/model.txt and
// returns the path.
func linregArch(t *testing.T, dir string) string {
	t.Helper()
	arch := filepath.Join(dir, "model.txt")
	mustWrite(t, arch, []byte("Linear(in_features=2, out_features=1, bias=False)\n"))
	return arch
}

// trainLinreg runs edgebnn train with args and --out out on all 1000 points of paper 000
// §4.1's data (x, y) and requires the checkpoint's posterior to beat Table 4
// (checkLinregPosterior).
func trainLinreg(t *testing.T, x, y []float64, out string, args ...string) {
	t.Helper()
	stdout := runOK(t, append(append([]string{"train"}, args...), "--out", out, "--quiet", "--no-plots")...)
	if !strings.Contains(stdout, "1000 train, 0 test examples") {
		t.Fatalf("train did not use all 1000 points:\n%s", stdout)
	}
	checkLinregPosterior(t, out, x, y)
}

// checkLinregPosterior converts the VIFA checkpoint out to f16, reads its posterior with
// edgebnn posterior --json and requires all three distances to the closed-form posterior of the
// data (x, y) below paper 000's Table 4 means (0.0031, 0.0983, 0.0194).
func checkLinregPosterior(t *testing.T, out string, x, y []float64) {
	t.Helper()
	conv := strings.TrimSuffix(out, ".ebnn") + ".f16.ebnn"
	runOK(t, "convert", "--checkpoint", out, "--out", conv, "--dtype", "f16")
	var p posteriorJSON
	runCLIJSON(t, &p, "posterior", "--model", conv, "--json")
	if p.Dim != 2 || len(p.Layers) != 1 || p.Layers[0].Kind != "fa" {
		t.Fatalf("posterior of dim %d, layers %+v; want one fa layer of 2 parameters", p.Dim, p.Layers)
	}
	m, s := linregPosterior(x, y, 0.01, 0.1)
	qs := []float64{p.Cov[0][0], p.Cov[0][1], p.Cov[1][0], p.Cov[1][1]}
	relMean := math.Hypot(p.Mean[0]-m[0], p.Mean[1]-m[1]) / math.Hypot(m[0], m[1])
	num, den := 0.0, 0.0
	for i := range s {
		num += (qs[i] - s[i]) * (qs[i] - s[i])
		den += s[i] * s[i]
	}
	relCov := math.Sqrt(num / den)
	w2 := fa.Wasserstein2(p.Mean, qs, m, s, 2) / 2
	t.Logf("relative mean distance %.5f, relative covariance distance %.4f, W2/dim %.4f", relMean, relCov, w2)
	for _, c := range []struct {
		name       string
		got, paper float64
	}{{"relative mean distance", relMean, 0.0031}, {"relative covariance distance", relCov, 0.0983}, {"2-Wasserstein / dim", w2, 0.0194}} {
		if !(c.got < c.paper) {
			t.Errorf("%s %.4g is not below paper 000's %.4g", c.name, c.got, c.paper)
		}
	}
}

// TestTrainFACLI runs fa_em and fa_sga through the command line on a small classification CSV,
// converts with --dtype f16 (the report names the FA tensors' fp16 error) and checks the help
// text documents the FA keys.
func TestTrainFACLI(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := 0; i < 120; i++ {
		c := i % 3
		fmt.Fprintf(&b, "%g,%g,%d\n", float64(c)+0.3*math.Sin(float64(i)), float64(2-c)+0.3*math.Cos(float64(7*i)), c)
	}
	csv := filepath.Join(dir, "d.csv")
	mustWrite(t, csv, []byte(b.String()))
	inputs := filepath.Join(dir, "x.csv")
	mustWrite(t, inputs, []byte("0.1,2.2\n1.9,0.1\n"))
	for _, kind := range []string{"fa_em", "fa_sga", "vifa"} {
		out := filepath.Join(dir, kind+".ebnn")
		args := []string{"train", "--data", "csv:" + csv, "--arch", "mlp:2-16-3", "--posterior", kind, "--latent-dim", "2",
			"--epochs", "6", "--batch-size", "10", "--lr", "0.01", "--fa-start-epoch", "2", "--fa-warmup", "5",
			"--fa-init-log-var", "-8", "--out", out, "--quiet", "--no-plots"}
		stdout := runOK(t, args...)
		if !strings.Contains(stdout, "test acc") {
			t.Errorf("%s: no per-epoch evaluation in\n%s", kind, stdout)
		}
		conv := filepath.Join(dir, kind+".f16.ebnn")
		stdout = runOK(t, "convert", "--checkpoint", out, "--out", conv, "--dtype", "f16")
		// D = 2·16 + 16 + 16·3 + 3 = 99 parameters: fa.mean, fa.factors and fa.psi are stored as
		// fp16, and the layer table reports their largest rounding error.
		var faLine string
		for _, l := range strings.Split(stdout, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == "fa" {
				faLine = l
			}
		}
		f := strings.Fields(faLine)
		if len(f) == 0 {
			t.Fatalf("%s: no fa row in the conversion report:\n%s", kind, stdout)
		}
		if e, err := strconv.ParseFloat(f[len(f)-1], 64); err != nil || !(e > 0 && e < 1e-2) {
			t.Errorf("%s: fa row %q: want the fp16 max abs error (0 < e < 0.01) last", kind, faLine)
		}
		stdout = runOK(t, "predict", "--model", conv, "--input", inputs)
		if !strings.Contains(stdout, "MUTUAL INFO") {
			t.Errorf("%s: predict output lacks the uncertainty:\n%s", kind, stdout)
		}
	}
	code, stdout, _ := runCLI("train", "-h")
	if code != 0 {
		t.Fatalf("train -h: exit %d", code)
	}
	for _, want := range []string{"vifa", "fa_em", "fa_sga", "--latent-dim", "--prior-precision", "--mc-samples",
		"--fa-start-epoch", "--fa-every", "--fa-mean-only-epochs", "--fa-ramp-epochs", "--fa-average-epochs"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("train -h does not mention %q", want)
		}
	}
}
