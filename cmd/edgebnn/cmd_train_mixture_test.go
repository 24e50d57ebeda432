//go:build !device

package main

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestTrainMixture: train --mixture 2 trains two posteriors with seeds 4 and 5 and writes their
// mixture, whose sample s is member s mod 2's (its own model file, the member's seed); it refuses
// --resume, a deterministic posterior and an out-of-range M.
func TestTrainMixture(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "toy.ebnn")
	code, stdout, stderr := runCLI("train", "--preset", "paper003-toy-ffgu", "--epochs", "3", "--seed", "4",
		"--mixture", "2", "--out", out, "--quiet", "--no-plots")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	mixPath := filepath.Join(dir, "toy.model.ebnn")
	if !strings.Contains(stdout, "a mixture of 2 posteriors") {
		t.Errorf("output does not report the mixture:\n%s", stdout)
	}
	mix, err := runtime.Load(mixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer mix.Close()
	if !mix.Mixture() || mix.Members() != 2 {
		t.Fatalf("%s: Mixture %v, Members %d", mixPath, mix.Mixture(), mix.Members())
	}
	x := []float32{0.3}
	const K, seed = 4, 9
	got := predictKept(t, mix, runtime.Options{Samples: K, Seed: seed, KeepSamples: true}, x)
	for k := range 2 {
		member := filepath.Join(dir, "toy.member"+string(rune('0'+k))+".model.ebnn")
		if _, err := os.Stat(filepath.Join(dir, "toy.member"+string(rune('0'+k))+".ebnn")); err != nil {
			t.Fatalf("member %d checkpoint: %v", k, err)
		}
		m, err := runtime.Load(member)
		if err != nil {
			t.Fatal(err)
		}
		want := predictKept(t, m, runtime.Options{Samples: K / 2, Seed: seed + uint64(k)*0x9e3779b97f4a7c15, KeepSamples: true}, x)
		m.Close()
		for l := range K / 2 {
			if g, w := got[2*l+k], want[l]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("sample %d: %v, member %d alone %v", 2*l+k, g, k, w)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", out, "--mixture", "2"}, "exclude each other"},
		{[]string{"--preset", "paper003-toy-ffgu", "--posterior", "deterministic", "--mixture", "2", "--out", filepath.Join(dir, "d.ebnn")}, "Bayesian --posterior"},
		{[]string{"--preset", "paper003-toy-ffgu", "--mixture", "1", "--out", filepath.Join(dir, "e.ebnn")}, "want 2 to"},
	} {
		code, stdout, stderr := runCLI(append([]string{"train"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("train %v: exit %d, want an error mentioning %q\n%s%s", c.args, code, c.want, stdout, stderr)
		}
	}
}

// predictKept returns the kept outputs of one prediction of x.
func predictKept(t *testing.T, m *runtime.Model, o runtime.Options, x []float32) []float32 {
	t.Helper()
	p, err := m.NewPredictor(o)
	if err != nil {
		t.Fatal(err)
	}
	var pr runtime.Prediction
	if err := p.Predict(x, &pr); err != nil {
		t.Fatal(err)
	}
	return pr.Outputs
}
