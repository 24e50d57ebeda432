package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/bench/internal/sevtab"
	"github.com/edgebnn/edgebnn/train/data"
)

// TestRunCorruptCached: from results.jsonl and cached evaluations only (no model is loaded),
// -corrupt picks the fine-tuned model of a level that has one, averages over the corruptions and
// the seeds as the caption says, and pairs each pruned model with the unpruned one of its seed.
func TestRunCorruptCached(t *testing.T) {
	dir := t.TempDir()
	o := corruptOptions{samples: 4, limit: 100, seed: 42, caption: "test"}
	old := time.Now().Add(-time.Hour)
	var lines []string
	// model writes a fake model file (older than its cache) and its cached evaluation: clean
	// accuracy acc, accuracy acc − 0.1·s and ECE 0.01·s at severity s for every corruption but
	// the first, which has accuracy acc − 0.1·s − 0.09 (so the mean over the nine is 0.01 lower).
	model := func(method string, keep float64, seed int, ft bool, acc float64) {
		path := filepath.Join(dir, fmt.Sprintf("%s_%g_%d_%v.ebnn", method, keep, seed, ft))
		if err := os.WriteFile(path, []byte("not read"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		r := corruptResult{Model: path, Samples: 4, Seed: 42, Limit: 100, Clean: cmetrics{Accuracy: acc}, Corrupt: map[string]cmetrics{}}
		for i, c := range data.Corruptions() {
			for s := 1; s <= data.MaxSeverity; s++ {
				a := acc - 0.1*float64(s)
				if i == 0 {
					a -= 0.09
				}
				r.Corrupt[sevtab.Key(c, s)] = cmetrics{Accuracy: a, ECE: 0.01 * float64(s)}
			}
		}
		raw, _ := json.Marshal(r)
		if err := os.WriteFile(strings.TrimSuffix(path, ".ebnn")+".corrupt.json", raw, 0o644); err != nil {
			t.Fatal(err)
		}
		line, _ := json.Marshal(map[string]any{"method": method, "keep": keep, "seed": seed, "finetuned": ft, "path": path, "parameters": 10})
		lines = append(lines, string(line))
	}
	for seed, acc := range map[int]float64{1: 0.9, 2: 0.9} {
		model("FFG-W", 1, seed, false, acc)
		model("FFG-U", 1, seed, false, acc)
	}
	model("FFG-W", 0.1, 1, false, 0.2) // the plain model of a fine-tuned level: left out
	model("FFG-W", 0.1, 2, false, 0.2)
	model("FFG-W", 0.1, 1, true, 0.8)
	model("FFG-W", 0.1, 2, true, 0.9)
	results := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(results, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := runCorrupt(results, o, &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		// seeds 0.8 and 0.9: mean 85, s.e. 5; severity 1: 0.85 − 0.1 − 0.01; paper Table 15's row
		"| FFG-W | 10 % weights, fine-tuned | 2 | 10 | 85.00 ± 5.00 | 74.00 ± 5.00 | 64.00 ± 5.00 | 54.00 ± 5.00 | 44.00 ± 5.00 | 34.00 ± 5.00 | 84.04 | 76.21 | 69.35 | 61.65 | 50.51 |",
		"| FFG-U | 100 % of Z | 2 | 10 | 90.00 ± 0.00 | 79.00 ± 0.00 |",
		"| FFG-W | 10 % weights, fine-tuned | 2 | 10 | 0.00 ± 0.00 | 1.00 ± 0.00 | 2.00 ± 0.00 | 3.00 ± 0.00 | 4.00 ± 0.00 | 5.00 ± 0.00 | 12.50 |", // ECE
		// paired with FFG-W 100 % of the same seed: clean −10 and 0
		"| FFG-W | 10 % weights, fine-tuned | -5.00 ± 5.00 | -5.00 ± 5.00 | -5.00 ± 5.00 | 0.00 ± 0.00 | 0.00 ± 0.00 | 0.00 ± 0.00 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks\n%s\ngot:\n%s", want, got)
		}
	}
	if strings.Contains(got, "| 10 % weights |") {
		t.Errorf("the plain model of a fine-tuned level is in the table:\n%s", got)
	}
	// A cache made with other settings is not used: the (fake) model must then be loaded.
	o.samples = 8
	if err := runCorrupt(results, o, &out); err == nil {
		t.Error("a cache of 4 samples served a run of 8")
	}
}
