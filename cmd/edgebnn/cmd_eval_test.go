//go:build !device

package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// evalJSON runs eval --json with args and decodes the report generically, so that the test sees
// the keys exactly as written.
func evalJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	var r map[string]any
	runCLIJSON(t, &r, append([]string{"eval", "--json"}, args...)...)
	return r
}

// missingKeys returns the keys that obj (a JSON object) lacks.
func missingKeys(obj any, keys ...string) []string {
	m, _ := obj.(map[string]any)
	var out []string
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			out = append(out, k)
		}
	}
	return out
}

// TestEvalClassificationMetrics: eval of a 3-class model trained on classes 0 and 1 (class 2
// the OOD set) keeps the existing JSON keys and adds the Table 2 metrics (macro), MD² as a
// fourth score in selective prediction and OOD detection, selective F1 and AUROC per score and
// fraction, and the definitions; the text report shows them.
func TestEvalClassificationMetrics(t *testing.T) {
	ckpt, csv := trainEnsembleCheckpoint(t)
	args := []string{"--data", "csv:" + csv, "--classes", "0-1", "--samples", "6", ckpt}
	r := evalJSON(t, args...)
	if miss := missingKeys(r, "classification", "reliability", "selective", "ood", "mean_entropy", "mean_mi",
		"selective_fractions", "selective_f1", "selective_auroc", "definitions"); miss != nil {
		t.Errorf("report lacks %v", miss)
	}
	if miss := missingKeys(r["classification"], "n", "accuracy", "nll", "ece", "brier", "precision", "recall", "f1", "auroc", "averaging"); miss != nil {
		t.Errorf("classification lacks %v", miss)
	}
	if a := r["classification"].(map[string]any)["averaging"]; a != "macro" {
		t.Errorf("averaging %v, want macro (3 outputs)", a)
	}
	for _, sec := range []string{"selective", "selective_f1", "selective_auroc", "ood"} {
		if miss := missingKeys(r[sec], "maxprob", "entropy", "mi", "md2"); miss != nil {
			t.Errorf("%s lacks %v", sec, miss)
		}
	}
	for _, sec := range []string{"selective", "selective_f1", "selective_auroc"} {
		if v, _ := r[sec].(map[string]any)["md2"].([]any); len(v) != 5 {
			t.Errorf("%s.md2 has %d values, want 5", sec, len(v))
		}
	}
	if miss := missingKeys(r["definitions"], "precision/recall/f1/auroc", "scores", "selective_f1/selective_auroc"); miss != nil {
		t.Errorf("definitions lack %v", miss)
	}
	stdout := runOK(t, append([]string{"eval"}, args...)...)
	checkContains(t, "text report", stdout, "precision ", "(macro averages over classes, AUROC one-vs-rest)", "selective accuracy by md2",
		"selective F1       by entropy", "selective AUROC    by md2", "OOD by md2", "OOD mean uncertainty: mi ", "md2 ")
	// Classes 1 and 2 would become labels 0 and 1 and be scored against the model's classes 0
	// and 1.
	code, _, stderr := runCLI("eval", "--data", "csv:"+csv, "--classes", "1-2", "--samples", "6", ckpt)
	if code != 1 || !strings.Contains(stderr, "--classes 1-2 renumbers the labels 0 to 1") || !strings.Contains(stderr, "3 outputs") {
		t.Errorf("eval --classes 1-2 of a 3-output model: exit %d, %s", code, stderr)
	}
}

// TestEvalRegressionMixtureNLL: eval of a regression checkpoint reports the mixture NLL with L =
// --samples beside the moment-matched NLL and RMSE, says which is which, and the text report
// shows it.
func TestEvalRegressionMixtureNLL(t *testing.T) {
	c := train.DefaultConfig()
	c.Data, c.Task, c.Arch = "toy1d", "regression", "mlp:1-8-1"
	c.Epochs, c.EvalEvery = 1, 0
	c.Out = filepath.Join(t.TempDir(), "reg.ebnn")
	trainConfig(t, c)
	r := evalJSON(t, "--samples", "7", c.Out)
	g, _ := r["regression"].(map[string]any)
	if miss := missingKeys(g, "n", "rmse", "nll", "mixture_nll", "mixture_samples"); miss != nil {
		t.Fatalf("regression lacks %v: %v", miss, r)
	}
	if L := g["mixture_samples"]; L != 7.0 {
		t.Errorf("mixture_samples %v, want 7", L)
	}
	if v, ok := g["mixture_nll"].(float64); !ok || math.IsNaN(v) {
		t.Errorf("mixture_nll %v", g["mixture_nll"])
	}
	if miss := missingKeys(r["definitions"], "rmse", "nll", "mixture_nll"); miss != nil {
		t.Errorf("definitions lack %v", miss)
	}
	stdout := runOK(t, "eval", "--samples", "7", c.Out)
	checkContains(t, "text report", stdout, "(7 samples)", "mixture nll ", "L = 7)", "nll: moment-matched Gaussian")
}

// TestEvalOODFlag: --ood (and --data) is checked against the data before anything is predicted,
// the errors say what is wrong (the OOD sets themselves are tested in train and train/data), and
// a value out of its domain is a usage error (exit 2).
func TestEvalOODFlag(t *testing.T) {
	ckpt, csv := trainEnsembleCheckpoint(t)
	cases := []struct {
		ood, want string
	}{
		{"digits", `ood digits needs 28×28 image data (data fmnist), not data "csv:`},
		{"fmnist-shuffled", "ood fmnist-shuffled needs 28×28 image data"},
		{"mnist", `ood "mnist" is not classes, digits, digits:PATH or fmnist-shuffled`},
		{"classes", "ood classes needs classes"},
	}
	for _, tc := range cases {
		t.Run(tc.ood, func(t *testing.T) {
			code, _, stderr := runCLI("eval", "--data", "csv:"+csv, "--ood", tc.ood, ckpt)
			if code != 2 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want a usage error saying %q", code, stderr, tc.want)
			}
		})
	}
	for _, d := range []string{"bogus", "toy1d:1", "fmnist-c:foo:3", "csv:"} {
		code, _, stderr := runCLI("eval", "--data", d, ckpt)
		if code != 2 || !strings.Contains(stderr, "config: data") {
			t.Errorf("eval --data %s: exit %d, stderr %q, want a usage error about the data", d, code, stderr)
		}
	}
}

// TestEvalDeterministicZeros: a deterministic classifier's mean mutual information and MD² are 0
// and still written by --json (omitempty had dropped them while the text printed "mi 0"); a
// regression model's eval --plots is refused up front (it had written nothing, exit 0).
func TestEvalDeterministicZeros(t *testing.T) {
	_, csv := trainEnsembleCheckpoint(t)
	dir := t.TempDir()
	c := train.DefaultConfig()
	c.Posterior, c.Data, c.Task, c.Arch = "deterministic", "csv:"+csv, "classification", "mlp:2-6-3"
	c.Epochs, c.BatchSize, c.EvalEvery = 1, 20, 0
	c.Out = filepath.Join(dir, "det.ebnn")
	trainConfig(t, c)
	// The file before the flags, as inspect takes them.
	var r map[string]any
	runCLIJSON(t, &r, "eval", c.Out, "--json", "--data", "csv:"+csv, "--samples", "2")
	for _, k := range []string{"mean_mi", "mean_md2", "mean_entropy"} {
		if v, ok := r[k]; !ok || (k != "mean_entropy" && v != 0.0) {
			t.Errorf("%s = %v (present %v), want 0 written", k, v, ok)
		}
	}
	reg := filepath.Join(dir, "reg.csv")
	mustWrite(t, reg, []byte("x,y\n0,0\n1,1\n2,2\n3,3\n4,4\n5,5\n6,6\n7,7\n8,8\n9,9\n"))
	c = train.DefaultConfig()
	c.Posterior, c.Data, c.Task, c.Arch = "deterministic", "csv:"+reg, "regression", "mlp:1-1"
	c.Epochs, c.BatchSize, c.EvalEvery = 1, 5, 0
	c.Out = filepath.Join(dir, "reg.ebnn")
	trainConfig(t, c)
	code, _, stderr := runCLI("eval", "--data", "csv:"+reg, "--plots", filepath.Join(dir, "p"), c.Out)
	if code != 2 || !strings.Contains(stderr, "regression model") {
		t.Errorf("eval --plots of a regression model: exit %d, %s", code, stderr)
	}
}

// TestEvalUndefinedAUROCAndPlotsDirectory: on data of one class the AUROCs are undefined —
// "n/a" in the text report as null in JSON, never "NaN" — and --plots refuses a directory
// (its files would be hidden: dir/.reliability.png).
func TestEvalUndefinedAUROCAndPlotsDirectory(t *testing.T) {
	ckpt, csv := trainEnsembleCheckpoint(t)
	stdout := runOK(t, "eval", "--data", "csv:"+csv, "--classes", "0", "--samples", "4", ckpt)
	if strings.Contains(stdout, "NaN") || !strings.Contains(stdout, "AUROC n/a") {
		t.Errorf("one class: %s", stdout)
	}
	dir := t.TempDir()
	for _, p := range []string{dir, dir + "/"} {
		code, _, stderr := runCLI("eval", "--data", "csv:"+csv, "--samples", "4", "--plots", p, ckpt)
		if code != 2 || !strings.Contains(stderr, "is a directory: give a file name prefix") {
			t.Errorf("--plots %s: exit %d: %s", p, code, stderr)
		}
	}
}
