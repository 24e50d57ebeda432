//go:build !device

package main

import (
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestTrainLaplace: a deterministic network becomes a Laplace posterior post hoc (train
// --posterior laplace --init-from MAP --epochs 0), which edgebnn convert turns into a model of
// KindFFG layers whose means are the MAP weights and whose σ are the checkpoint's, that
// runtime.Load reads and edgebnn eval evaluates.
func TestTrainLaplace(t *testing.T) {
	dir := t.TempDir()
	common := []string{"--arch", "mlp:1-16-1:tanh", "--data", "toy1d", "--task", "regression", "--noise-precision", "100",
		"--batch-size", "25", "--quiet", "--no-plots"}
	mapPath := filepath.Join(dir, "map.ebnn")
	runOK(t, append([]string{"train", "--posterior", "deterministic", "--weight-decay", "0.01",
		"--epochs", "3", "--out", mapPath}, common...)...)
	lap := filepath.Join(dir, "lap.ebnn")
	stdout := runOK(t, append([]string{"train", "--posterior", "laplace", "--init-from", mapPath,
		"--epochs", "0", "--prior-precision", "4", "--out", lap}, common...)...)
	checkContains(t, "train laplace: output", stdout, "laplace: GGN diagonal (exact) over 100 examples in ", "laplace: prior precision 4 (prior_precision; not tuned)", "% at the prior's")
	conv := filepath.Join(dir, "conv.ebnn")
	runOK(t, "convert", "--checkpoint", lap, "--out", conv)
	m, err := runtime.Load(conv)
	if err != nil {
		t.Fatal(err)
	}
	kinds := 0
	spec := m.Spec()
	for _, l := range spec.Layers {
		if l.Op == runtime.OpLinear {
			if l.Posterior == nil || l.Posterior.Kind != runtime.KindFFG {
				t.Fatalf("layer %s: posterior %+v, want ffg", l.Name, l.Posterior)
			}
			kinds++
		}
	}
	if kinds != 2 {
		t.Fatalf("%d ffg Linear layers, want 2", kinds)
	}
	read := func(path, name string) []float32 { return modeltest.Tensor(t, modeltest.Open(t, path), name).Data }
	for _, pair := range [][2]string{{"1.weight", "1.weight_mean"}, {"3.bias", "3.bias_mean"}} {
		a, b := read(mapPath, pair[0]), read(conv, pair[1])
		if len(a) != len(b) {
			t.Fatalf("%s: %d values, the MAP's %s %d", pair[1], len(b), pair[0], len(a))
		}
		for i := range a {
			if a[i] != b[i] {
				t.Fatalf("%s[%d] = %g, the MAP's %s = %g", pair[1], i, b[i], pair[0], a[i])
			}
		}
	}
	raw, conv2 := read(lap, "3._weight_sd"), read(conv, "3._weight_sd")
	for i := range raw {
		s := math.Log1p(math.Exp(float64(raw[i])))
		if !(s > 0 && s <= 0.5+1e-6) || raw[i] != conv2[i] {
			t.Fatalf("σ %d = %g (raw %g, converted %g): want in (0, α^-1/2 = 0.5] and unchanged by convert", i, s, raw[i], conv2[i])
		}
	}
	code, stdout, stderr := runCLI("eval", "--data", "toy1d", "--samples", "8", conv)
	if code != 0 || !strings.Contains(stdout, "rmse") && !strings.Contains(stdout, "RMSE") {
		t.Fatalf("eval: exit %d\n%s\n%s", code, stdout, stderr)
	}
}
