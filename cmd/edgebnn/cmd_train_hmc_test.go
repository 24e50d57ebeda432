//go:build !device

package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// TestTrainHMCCLI samples Bayesian linear regression (paper 000 §4.1's data, no bias) with
// edgebnn train --posterior hmc, converts the checkpoint and predicts with it: the training
// output reports R̂ and ESS, the checkpoint's report is there, convert takes the ensemble
// unchanged, and predict's mean and epistemic variance at x = (1, −1) are those of the
// closed-form posterior within 5 Monte Carlo standard errors.
func TestTrainHMCCLI(t *testing.T) {
	csv, x, y := linregCSV(t, 1, 200)
	dir := t.TempDir()
	arch := linregArch(t, dir)
	out := filepath.Join(dir, "lr.ebnn")
	const kept = 200
	stdout := runOK(t, "train", "--data", "csv:"+csv, "--task", "regression", "--arch", arch,
		"--posterior", "hmc", "--prior-precision", "0.01", "--noise-precision", "0.1", "--test-fraction", "0",
		"--hmc-warmup", "300", "--hmc-draws", "500", "--hmc-samples", "200", "--seed", "2",
		"--out", out, "--quiet", "--no-plots")
	checkContains(t, "training output", stdout, "NUTS: 4 chains × (300 warm-up + 500 draws), 2 parameters", "R̂ over 2 parameters",
		"bulk ESS", "kept 200 draws", "fixed noise precision 0.1", "N(0, 1/0.01)")
	st, err := train.ReadState(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.HMC == nil || !(st.HMC.ParamDiag.RhatMax < 1.05) || st.Members != kept {
		t.Fatalf("checkpoint state: hmc %+v, %d members", st.HMC, st.Members)
	}
	conv := filepath.Join(dir, "lr.conv.ebnn")
	if code, so, se := runCLI("convert", "--checkpoint", out, "--out", conv); code != 0 {
		t.Fatalf("convert: exit %d\n%s\n%s", code, so, se)
	}
	in := filepath.Join(dir, "x.csv")
	mustWrite(t, in, []byte("1,-1\n"))
	stdout = runOK(t, "predict", "--model", conv, "--input", in, "--samples", "200", "--json")
	var p struct {
		Mean         []float64 `json:"mean"`
		EpistemicVar []float64 `json:"epistemic_var"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(stdout)), &p); err != nil || len(p.Mean) != 1 {
		t.Fatalf("predict output %q: %v", stdout, err)
	}
	m, s := linregPosterior(x, y, 0.01, 0.1)
	mu := m[0] - m[1]              // f = θ·(1, −1)
	v := s[0] - s[1] - s[2] + s[3] // its posterior variance
	ess := math.Min(kept, float64(st.HMC.FunctionDiag.ESSBulkMin))
	t.Logf("predict mean %.4f, epistemic var %.5f; closed form %.4f, %.5f; ESS %.0f", p.Mean[0], p.EpistemicVar[0], mu, v, ess)
	if tol := 5 * math.Sqrt(v/ess); !(math.Abs(p.Mean[0]-mu) <= tol) {
		t.Errorf("predictive mean %.4f, closed form %.4f (tolerance %.4f)", p.Mean[0], mu, tol)
	}
	if tol := 5 * math.Sqrt(2/ess); !(math.Abs(p.EpistemicVar[0]/v-1) <= tol) {
		t.Errorf("epistemic variance %.5f, closed form %.5f (relative tolerance %.3f)", p.EpistemicVar[0], v, tol)
	}
}

// TestTrainHMCTooLarge: a network above train.MaxHMCParams is refused, exit status 1, with an
// error naming the limit.
func TestTrainHMCTooLarge(t *testing.T) {
	csv, _, _ := linregCSV(t, 1, 20)
	code, stdout, stderr := runCLI("train", "--data", "csv:"+csv, "--task", "regression", "--arch", "mlp:2-200-60-1",
		"--posterior", "hmc", "--out", filepath.Join(t.TempDir(), "big.ebnn"), "--quiet", "--no-plots")
	if code != 1 || !strings.Contains(stderr, "more than 10000 parameters") {
		t.Fatalf("exit %d, want 1 and the parameter limit\n%s\n%s", code, stdout, stderr)
	}
}
