package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeResults writes JSON lines to a temporary results file and returns its path.
func writeResults(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

const (
	recipeRun = `{"sweep":"grid","method":"ffgu","m":128,"lamda":0.03,"sd_u":0.1,"temperature":1,"seed":%d,"cpu_seconds":10,"accuracy":0.8,"nll":0.5,"ece":0.02,"auroc_entropy":0.8,"auroc_mi":0.7}`
	lrRun     = `{"sweep":"grid","method":"ffgu","m":128,"lamda":0.03,"sd_u":0.1,"temperature":1,"lr":0.001,"seed":%d,"cpu_seconds":10,"accuracy":0.9,"nll":0.3,"ece":0.01,"auroc_entropy":0.8,"auroc_mi":0.7}`
)

// seedRun is a result line of the given seed.
func seedRun(format string, seed int) string { return fmt.Sprintf(format, seed) }

// TestStepSize: the caption names the results' step size (the configs' when they record none),
// and a file that mixes step sizes is refused, naming the line.
func TestStepSize(t *testing.T) {
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{seedRun(recipeRun, 1), seedRun(recipeRun, 2)}, "epoch(s) of Adam 3e-3 (the configs') on"},
		{[]string{seedRun(lrRun, 1), seedRun(lrRun, 2)}, "epoch(s) of Adam 0.001 on"},
	} {
		var b strings.Builder
		if err := run(&b, writeResults(t, c.lines...), "", "3 epoch(s) of Adam %s on 60000", 128); err != nil {
			t.Fatal(err)
		}
		if out := b.String(); !strings.Contains(out, c.want) || !strings.Contains(out, "| 0.03 | 0.1 | 2 |") {
			t.Errorf("want %q and the λ_max 0.03, σ_max 0.1 cell with 2 seeds in:\n%s", c.want, out)
		}
	}
	err := run(&strings.Builder{}, writeResults(t, seedRun(recipeRun, 1), seedRun(lrRun, 2)), "", "%s", 128)
	if err == nil || !strings.Contains(err.Error(), "results.jsonl:2: step size 0.001 after the configs'") {
		t.Errorf("mixed step sizes: error %v, want one naming line 2 and both step sizes", err)
	}
	if err := run(&strings.Builder{}, writeResults(t, seedRun(recipeRun, 1)), "", "%s", 48); err == nil || !strings.Contains(err.Error(), "-grid-m 48") {
		t.Errorf("-grid-m 48: error %v, want one naming it", err)
	}
}
