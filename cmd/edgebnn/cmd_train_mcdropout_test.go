//go:build !device

package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainMCDropout: train --posterior mc_dropout --dropout 0.2 writes a model whose dropout
// layers convert keeps and inspect reports (text and JSON); predict samples the masks (the
// epistemic variance is positive).
func TestTrainMCDropout(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "mcd.ebnn")
	code, stdout, stderr := runCLI("train", "--arch", "mlp:1-16-16-1:tanh", "--data", "toy1d", "--task", "regression",
		"--noise-precision", "100", "--posterior", "mc_dropout", "--dropout", "0.2", "--epochs", "3", "--batch-size", "25",
		"--out", out, "--quiet", "--no-plots")
	if code != 0 {
		t.Fatalf("train: exit %d\n%s\n%s", code, stdout, stderr)
	}
	conv := filepath.Join(dir, "conv.ebnn")
	if code, stdout, stderr = runCLI("convert", "--checkpoint", out, "--out", conv); code != 0 {
		t.Fatalf("convert: exit %d\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("inspect", conv)
	if code != 0 || !strings.Contains(stdout, "MC dropout: 2 layer(s) sampled at prediction time") || !strings.Contains(stdout, "2.dropout p=0.2, 4.dropout p=0.2") {
		t.Fatalf("inspect: exit %d, want the MC dropout layers\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("inspect", "--json", conv)
	var in struct {
		Dropout []struct {
			Name string  `json:"name"`
			P    float64 `json:"p"`
			MC   bool    `json:"mc"`
		} `json:"dropout"`
	}
	if code != 0 {
		t.Fatalf("inspect --json: exit %d\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Dropout) != 2 || in.Dropout[0].P != 0.2 || !in.Dropout[0].MC || !in.Dropout[1].MC {
		t.Fatalf("inspect --json: dropout %+v", in.Dropout)
	}
	inputs := filepath.Join(dir, "x.csv")
	mustWrite(t, inputs, []byte("x\n0.5\n-1\n"))
	code, stdout, stderr = runCLI("predict", "--model", conv, "--input", inputs, "--json")
	if code != 0 {
		t.Fatalf("predict: exit %d\n%s\n%s", code, stdout, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("predict: %d lines\n%s", len(lines), stdout)
	}
	for _, line := range lines {
		var p struct {
			EpistemicVar []float64 `json:"epistemic_var"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.EpistemicVar) != 1 || !(p.EpistemicVar[0] > 0) {
			t.Errorf("predict: epistemic variance %v, want > 0", p.EpistemicVar)
		}
	}
}
