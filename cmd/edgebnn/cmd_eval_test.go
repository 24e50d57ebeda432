package main

import (
	"context"
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
}

// trainConfig trains c in process (it writes its checkpoint to c.Out) or fails the test.
func trainConfig(t *testing.T, c train.Config) {
	t.Helper()
	tr, err := train.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), train.Hooks{}); err != nil {
		t.Fatal(err)
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

// TestEvalOODFlag: --ood is checked against the data before anything is predicted, and the
// errors say what is wrong (the OOD sets themselves are tested in train and train/data).
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
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q, want an error saying %q", code, stderr, tc.want)
			}
		})
	}
}
