package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/train/data"
)

// torchPython returns a Python interpreter that imports torch and numpy, or skips the test.
func torchPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import torch, numpy").Run() == nil {
			return p
		}
	}
	t.Skip("no python3 with torch and numpy (apt-get install python3-torch python3-numpy)")
	return ""
}

// TestFSVITorchRef runs bench/fsvi_torchref.py (timrudner/FSVI's Fashion-MNIST recipe written
// again in PyTorch, the check on the preset's ECE gap in docs/RESULTS.md): its self-test (the KL
// against torch.distributions, flax's initial variances, the corruptions' shapes), then one epoch
// on 256 images resumed for a second, and checks the evaluation lines' shape and ranges (not
// their values), and --summarize's mean ± standard error over two seeds. Skipped without
// python3-torch, which CI does not install.
func TestFSVITorchRef(t *testing.T) {
	skipQuick(t, "trains a small CNN for 2 epochs of 256 images in PyTorch (about 30 s)")
	py := torchPython(t)
	if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST is not installed in %s: %v", data.DefaultFashionMNISTDir, err)
	}
	const script = "../bench/fsvi_torchref.py"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	if out, err := exec.CommandContext(ctx, py, script, "--self-test").CombinedOutput(); err != nil || !strings.Contains(string(out), "self-test passed") {
		t.Fatalf("--self-test: %v\n%s", err, out)
	}
	dir := t.TempDir()
	run := func(epochs string) string {
		t.Helper()
		out, err := exec.CommandContext(ctx, py, script, "--seed", "3", "--out", dir, "--epochs", epochs, "--eval-every", "1",
			"--train-limit", "256", "--test-limit", "300", "--data-dir", data.DefaultFashionMNISTDir).CombinedOutput()
		if err != nil {
			t.Fatalf("--epochs %s: %v\n%s", epochs, err, out)
		}
		return string(out)
	}
	run("1")
	if out := run("2"); !strings.Contains(out, "resuming after epoch 1") {
		t.Fatalf("the second run did not resume from the first's state:\n%s", out)
	}
	f, err := os.Open(filepath.Join(dir, "torchref_s3.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]float64
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var m map[string]float64
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d evaluation lines, want 2: %v", len(lines), lines)
	}
	for i, m := range lines {
		for key, r := range map[string]span{"epoch": {float64(i + 1), float64(i + 1)}, "acc": pct, "nll": nll, "ece_ref10": unit, "ece15": unit, "kl": {0, 1e9}} {
			v, ok := m[key]
			if !ok || math.IsNaN(v) || v < r.lo || v > r.hi {
				t.Fatalf("line %d: %s = %v (present %v), want in [%g, %g]", i+1, key, v, ok, r.lo, r.hi)
			}
		}
	}

	// --summarize over two seeds: a second seed whose epoch-2 accuracy is 10 points lower gives
	// the mean acc − 5 and the standard error 5 (two values d apart: s.e. d/2).
	second := `{"epoch": 2, "acc": ` + strconv.FormatFloat(lines[1]["acc"]-10, 'f', -1, 64) + `, "nll": 1, "ece15": 0.5, "ece_ref10": 0.5}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "torchref_s4.jsonl"), []byte(second), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, py, script, "--summarize", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("--summarize: %v\n%s", err, out)
	}
	want := fmt.Sprintf("| 2 | 2 | %.2f ± 5.00 |", lines[1]["acc"]-5)
	if !strings.Contains(string(out), "| 1 | 1 | ") || !strings.Contains(string(out), want) || !strings.Contains(string(out), "92.52 ± 0.13") {
		t.Fatalf("--summarize: want rows for epoch 1 (one seed) and epoch 2 (%q) and the paper's row:\n%s", want, out)
	}
}
