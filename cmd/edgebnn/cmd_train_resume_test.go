//go:build !device

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/train"
)

// rewriteSection copies the model file src to dst with the tensor or blob name replaced: a
// tensor's values by tensor's result, a blob's bytes by blob's.
func rewriteSection(t *testing.T, src, dst, name string, tensor func([]float32) []float32, blob func([]byte) []byte) {
	t.Helper()
	var tf func([]float32, []int) ([]float32, []int)
	if tensor != nil {
		tf = func(v []float32, shape []int) ([]float32, []int) { return tensor(v), shape }
	}
	modeltest.Rewrite(t, src, dst, name, tf, blob)
}

// readFile returns path's contents or fails the test.
func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestTrainFailedRunKeepsMetricsLog: a run that ends in an error having trained no epoch and
// written no checkpoint — nothing left to train in a resumed checkpoint, epochs 0 — leaves the
// metrics log at its output path as it was (the earlier run's, beside that run's checkpoint and
// model), instead of replacing it with an empty log or with the resumed checkpoint's history.
func TestTrainFailedRunKeepsMetricsLog(t *testing.T) {
	dir := t.TempDir()
	base := []string{"train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-8-1", "--posterior", "deterministic",
		"--batch-size", "25", "--quiet", "--no-plots"}
	x, y := filepath.Join(dir, "x.ebnn"), filepath.Join(dir, "y.ebnn")
	runOK(t, append(base, "--epochs", "2", "--out", x)...)
	runOK(t, append(base, "--epochs", "2", "--seed", "7", "--out", y)...)
	logPath := filepath.Join(dir, "x.metrics.jsonl")
	before := readFile(t, logPath)
	if bytes.Count(before, []byte("\n")) < 3 {
		t.Fatalf("the first run's log has too few lines:\n%s", before)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"resumed, nothing to train", []string{"train", "--resume", y, "--out", x, "--quiet", "--no-plots"}, "nothing to train"},
		{"epochs 0", append(base, "--epochs", "0", "--out", x), "epochs 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.args...)
			if code == 0 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, want an error %q\nstdout: %s\nstderr: %s", code, tc.want, stdout, stderr)
			}
			if after := readFile(t, logPath); !bytes.Equal(after, before) {
				t.Fatalf("the failed run replaced the metrics log:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	// A run that trains rewrites it.
	runOK(t, append(base, "--epochs", "3", "--out", x)...)
	if after := readFile(t, logPath); bytes.Count(after, []byte(`"epoch":`)) != 3 {
		t.Fatalf("the new run's log:\n%s", after)
	}
}

// TestTrainResumeExtremeHistory: a checkpoint whose history holds finite metrics whose range
// overflows (loss 1.7e308, NLL −1.7e308) once hung the run in plotting after its outputs were
// written; it is refused promptly at resume, naming the checkpoint and the field, with nothing
// written. Metrics at the bound (±1e300) resume and plot.
func TestTrainResumeExtremeHistory(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "toy.ebnn")
	runOK(t, "train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-8-1", "--posterior", "deterministic",
		"--batch-size", "25", "--epochs", "2", "--quiet", "--no-plots", "--out", good)
	history := func(loss, nll float64) func([]byte) []byte {
		return func(b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			e := m["history"].([]any)[0].(map[string]any)
			e["loss"], e["nll"] = loss, nll
			out, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
	for _, tc := range []struct {
		name      string
		loss, nll float64
		want      string // "" for a run that succeeds
	}{
		{"overflowing range", 1.7e308, -1.7e308, `"history[0].loss" = 1.7e+308`},
		{"at the bound", 1e300, -1e300, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ckpt := filepath.Join(t.TempDir(), "doctored.ebnn")
			rewriteSection(t, good, ckpt, train.TrainBlob, nil, history(tc.loss, tc.nll))
			outDir := filepath.Join(t.TempDir(), "r")
			type result struct {
				code           int
				stdout, stderr string
			}
			done := make(chan result, 1)
			go func() {
				code, stdout, stderr := runCLI("train", "--resume", ckpt, "--epochs", "3", "--quiet", "--out", filepath.Join(outDir, "x.ebnn"))
				done <- result{code, stdout, stderr}
			}()
			var r result
			select {
			case r = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("edgebnn train --resume still running after 60 s")
			}
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
				}
				isPNGFile(t, filepath.Join(outDir, "x.curves.png"))
				return
			}
			if r.code == 0 || !strings.Contains(r.stderr, ckpt) || !strings.Contains(r.stderr, tc.want) {
				t.Fatalf("exit %d, want an error naming %s and %q\nstdout: %s\nstderr: %s", r.code, ckpt, tc.want, r.stdout, r.stderr)
			}
			if ents, err := os.ReadDir(outDir); err == nil && len(ents) > 0 {
				t.Fatalf("a refused resume wrote %d files in %s", len(ents), outDir)
			}
		})
	}
}

// isPNGFile fails the test unless path is a PNG file.
func isPNGFile(t *testing.T, path string) {
	t.Helper()
	if b := readFile(t, path); !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		t.Fatalf("%s is not a PNG", path)
	}
}

// TestEvalPSISRefusesAlteredFA: eval --psis of a factor-analysis checkpoint evaluates its model
// tensors (fa.*) and diagnoses its learner state (blob train.fa); when the two are not the same
// posterior — fa.mean edited — it is an error naming the checkpoint and the tensor, not a report
// mixing two posteriors. The genuine checkpoint is diagnosed.
func TestEvalPSISRefusesAlteredFA(t *testing.T) {
	dir := t.TempDir()
	c := train.DefaultConfig()
	c.Arch, c.Data, c.Posterior, c.LatentDim = "mlp:2-8-2", "moons", "vifa", 1
	c.Epochs, c.BatchSize, c.EvalEvery, c.FAAverageEpochs = 2, 50, 0, 1
	c.Out = filepath.Join(dir, "vifa.ebnn")
	trainConfig(t, c)
	args := []string{"eval", "--psis", "--psis-draws", "100", "--samples", "4"}
	if stdout := runOK(t, append(args, c.Out)...); !strings.Contains(stdout, "PSIS k̂") {
		t.Fatalf("the genuine checkpoint:\n%s", stdout)
	}
	bad := filepath.Join(dir, "vifa_mean5.ebnn")
	rewriteSection(t, c.Out, bad, "fa.mean", func(v []float32) []float32 {
		for i := range v {
			v[i] = 5
		}
		return v
	}, nil)
	code, stdout, stderr := runCLI(append(args, bad)...)
	if code == 0 || !strings.Contains(stderr, bad) || !strings.Contains(stderr, `"fa.mean"`) ||
		!strings.Contains(stderr, "different posteriors") || strings.Contains(stdout, "PSIS k̂") {
		t.Fatalf("exit %d, want an error naming %s and fa.mean\nstdout: %s\nstderr: %s", code, bad, stdout, stderr)
	}
}
