package main

import (
	"context"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestQuickPipeline runs bench/toy_vs_hmc.sh --quick (a few NUTS iterations and VI steps, two
// seeds, K = 20, 21 grid points) with a freshly built edgebnn and checks the shape of its outputs —
// the table's rows and columns, the grid CSV's rows, the figure's size — not their values. It
// takes a few seconds; -short skips it.
func TestQuickPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the pipeline run")
	}
	for _, tool := range []string{"bash", "go"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmp := t.TempDir()
	bin, out := filepath.Join(tmp, "edgebnn"), filepath.Join(tmp, "out")
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/edgebnn")
	build.Dir = root
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	run := exec.CommandContext(ctx, "bash", "bench/toy_vs_hmc.sh", "--quick", "--bin", bin, "--out", out)
	run.Dir = root
	b, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("toy_vs_hmc.sh --quick: %v\n%s", err, b)
	}
	t.Logf("build and pipeline: %v", time.Since(start))

	md := read(t, filepath.Join(out, "toyhmc.md"))
	var rows []string
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "| ") {
			rows = append(rows, l)
		}
	}
	// Header, then HMC and the five methods.
	if len(rows) != 7 {
		t.Fatalf("table has %d rows, want 7:\n%s", len(rows), md)
	}
	for i, r := range rows {
		if n := strings.Count(r, "|"); n != 11 {
			t.Errorf("table row %d has %d cells, want 10: %s", i, n-1, r)
		}
	}
	for i, name := range []string{"HMC (NUTS)", "FFG-W", "FCG-W", "FFG-U", "FCG-U", "Ensemble-U"} {
		if !strings.HasPrefix(rows[i+1], "| "+name+" |") {
			t.Errorf("row %d is %q, want method %s", i+1, rows[i+1], name)
		}
		if i >= 1 && !strings.Contains(rows[i+1], "| 2 (1, 2) |") {
			t.Errorf("row %s does not report seeds 1, 2: %s", name, rows[i+1])
		}
		if i >= 1 && strings.Count(rows[i+1], " ± ") != 7 {
			t.Errorf("row %s has %d mean ± SE cells, want 7: %s", name, strings.Count(rows[i+1], " ± "), rows[i+1])
		}
	}

	csv := strings.Split(strings.TrimSpace(read(t, filepath.Join(out, "toyhmc_grid.csv"))), "\n")
	// Header, then 21 grid points for HMC and each of 5 methods × 2 seeds.
	if want := 1 + 21*(1+5*2); len(csv) != want {
		t.Errorf("grid CSV has %d lines, want %d", len(csv), want)
	}
	for i, l := range csv {
		if n := strings.Count(l, ","); n != 7 {
			t.Fatalf("grid CSV line %d has %d fields, want 8: %s", i+1, n+1, l)
		}
	}

	f, err := os.Open(filepath.Join(out, "toyhmc.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("toyhmc.png: %v", err)
	}
	if cfg.Width != 1920 || cfg.Height != 768 {
		t.Errorf("toyhmc.png is %d×%d, want 1920×768", cfg.Width, cfg.Height)
	}
	if n := strings.Count(strings.TrimSpace(read(t, filepath.Join(out, "times.txt"))), "\n") + 1; n != 11 {
		t.Errorf("times.txt has %d runs, want 11", n)
	}
}

// read returns the file's contents, failing the test if it cannot be read.
func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
