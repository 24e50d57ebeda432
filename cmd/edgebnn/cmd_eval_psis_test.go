//go:build !device

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// trainMoons trains a 2 → 16 → 2 MLP on Two Moons with posterior post for one epoch and returns
// the checkpoint's path.
func trainMoons(t *testing.T, dir, post string) string {
	t.Helper()
	arch := filepath.Join(dir, "arch.json")
	mustWrite(t, arch, []byte(bernsteinArch))
	c := train.DefaultConfig()
	c.Arch, c.Data, c.Posterior = arch, "moons", post
	c.BernsteinDegree, c.Epochs, c.BatchSize, c.EvalEvery = 4, 1, 50, 0
	c.Out = filepath.Join(dir, post+".ebnn")
	trainConfig(t, c)
	return c.Out
}

// TestEvalPSIS: eval --psis on ffg_w and bernstein_last checkpoints prints k̂ (text and JSON,
// with the draws, the parameters drawn and held fixed and the training examples), and refuses
// converted models, posteriors without a density and a draw count out of range.
func TestEvalPSIS(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		post          string
		params, fixed int
	}{
		{"ffg_w", 2*16 + 16 + 16*2 + 2, 0},
		{"bernstein_last", 16*2 + 2, 2*16 + 16},
	} {
		t.Run(tc.post, func(t *testing.T) {
			ckpt := trainMoons(t, dir, tc.post)
			var got struct {
				PSIS struct {
					KHat     *float64 `json:"khat"`
					Verdict  string   `json:"verdict"`
					Draws    int      `json:"draws"`
					Params   int      `json:"params"`
					Fixed    int      `json:"fixed_params"`
					Examples int      `json:"examples"`
					ELBO     float64  `json:"elbo"`
				} `json:"psis"`
				Classification map[string]any `json:"classification"`
			}
			runCLIJSON(t, &got, "eval", "--psis", "--psis-draws", "200", "--samples", "4", "--json", ckpt)
			p := got.PSIS
			if p.KHat == nil || p.Draws != 200 || p.Params != tc.params || p.Fixed != tc.fixed || p.Examples != train.MoonsTrain || !(p.ELBO < 0) || got.Classification == nil {
				t.Errorf("psis %+v (k̂ %v), want %d draws, %d + %d parameters, %d examples, a negative ELBO and the classification report", p, p.KHat, 200, tc.params, tc.fixed, train.MoonsTrain)
			}
			code, stdout, stderr := runCLI("eval", "--psis", "--psis-draws", "200", "--samples", "4", ckpt)
			if code != 0 || !strings.Contains(stdout, "PSIS k̂ ") || !strings.Contains(stdout, "categorical (softmax)") {
				t.Errorf("text: exit %d\n%s\n%s", code, stdout, stderr)
			}
		})
	}
	t.Run("vifaNoTestSet", func(t *testing.T) {
		// paper000-table4's linear regression keeps no test set (test_fraction 0): eval --psis
		// reports the diagnostic alone.
		var csv strings.Builder
		csv.WriteString("x1,x2,y\n")
		for i := 0; i < 60; i++ {
			x1, x2 := float64(i%7)-3, float64(i%5)-2
			fmt.Fprintf(&csv, "%g,%g,%g\n", x1, x2, 2*x1-x2+0.1*float64(i%3))
		}
		data := filepath.Join(dir, "lin.csv")
		mustWrite(t, data, []byte(csv.String()))
		ckpt := filepath.Join(dir, "vifa.ebnn")
		runOK(t, "train", "--preset", "paper000-table4", "--data", "csv:"+data, "--epochs", "20", "--fa-average-epochs", "10", "--out", ckpt)
		code, stdout, stderr := runCLI("eval", "--psis", "--psis-draws", "300", ckpt)
		if code != 0 || !strings.Contains(stdout, "no test set; PSIS k̂") || !strings.Contains(stdout, "2 parameters") {
			t.Errorf("exit %d\n%s\n%s", code, stdout, stderr)
		}
	})
	ckpt := filepath.Join(dir, "ffg_w.ebnn")
	conv := filepath.Join(dir, "conv.ebnn")
	runOK(t, "convert", "--checkpoint", ckpt, "--out", conv)
	ind := trainMoons(t, dir, "inducing")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"converted", []string{"--psis", conv}, "needs a training checkpoint"},
		{"inducing", []string{"--psis", ind}, "mixture over the inducing weights"},
		{"fewDraws", []string{"--psis", "--psis-draws", "5", ckpt}, "--psis-draws 5 outside"},
		{"samples above the bound", []string{"--samples", "5000", ckpt}, "--samples 5000 outside [1, 4096]"},
		{"negative test limit", []string{"--test-limit", "-7", ckpt}, "--test-limit -7 is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"eval"}, tc.args...)...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q, want an error containing %q\n%s", code, stderr, tc.want, stdout)
			}
		})
	}
}

// TestEvalCSVSplit: eval splits a checkpoint's CSV as training did (the checkpoint's seed, not
// --seed, which seeds the Monte Carlo draws only), so a deterministic model scores the same for
// any --seed; another file (or any file, for a model without a training state) is scored on every
// row.
func TestEvalCSVSplit(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x,y\n")
	for i := range 40 {
		x := float64(i)/20 - 1
		fmt.Fprintf(&b, "%g,%g\n", x, 2*x+0.3*math.Sin(7*x))
	}
	csv := filepath.Join(dir, "d.csv")
	mustWrite(t, csv, []byte(b.String()))
	ckpt := filepath.Join(dir, "m.ebnn")
	runOK(t, "train", "--data", "csv:"+csv, "--task", "regression", "--arch", "mlp:1-8-1", "--posterior", "deterministic",
		"--epochs", "3", "--seed", "7", "--test-fraction", "0.5", "--quiet", "--no-plots", "--out", ckpt)
	var reports []string
	for _, seed := range []string{"1", "2", "42"} {
		reports = append(reports, runOK(t, "eval", "--seed", seed, "--json", ckpt))
	}
	if reports[0] != reports[1] || reports[0] != reports[2] {
		t.Errorf("a deterministic model's eval depends on --seed:\n%s\n%s", reports[0], reports[1])
	}
	if !strings.Contains(reports[0], `"n": 20`) {
		t.Errorf("the checkpoint's test split is 20 rows: %s", reports[0])
	}
	other := filepath.Join(dir, "hold.csv")
	mustWrite(t, other, []byte(b.String()))
	if out := runOK(t, "eval", "--json", "--data", "csv:"+other, ckpt); !strings.Contains(out, `"n": 40`) {
		t.Errorf("another file is scored on every row: %s", out)
	}
}
