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
	if err := runCorrupt([]string{results}, o, &out); err != nil {
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
	if err := runCorrupt([]string{results}, o, &out); err == nil {
		t.Error("a cache of 4 samples served a run of 8")
	}
}

// TestCorruptArchive: the tables printed from an archive (-archive; no model files, relative
// paths) and from the runs split by seed over two results files are the tables of the original
// run; a row given twice is refused, naming both places.
func TestCorruptArchive(t *testing.T) {
	dir := t.TempDir()
	o := corruptOptions{samples: 2, limit: 10, seed: 42, caption: "test"}
	old := time.Now().Add(-time.Hour)
	// Two directories, one seed each, as bench/prunetab.sh --first-seed makes them.
	var files []string
	for seed := 1; seed <= 2; seed++ {
		sub := filepath.Join(dir, fmt.Sprintf("seed%d", seed))
		if err := os.Mkdir(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, m := range []struct {
			method string
			keep   float64
			ft     bool
			acc    float64
		}{{"FFG-W", 1, false, 0.9}, {"FFG-W", 0.1, false, 0.3}, {"FFG-W", 0.1, true, 0.8 + 0.05*float64(seed)}} {
			path := filepath.Join(sub, fmt.Sprintf("ffgw_%d_k%g_%v.ebnn", seed, m.keep, m.ft))
			if err := os.WriteFile(path, []byte("not read"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
			r := corruptResult{Model: path, Samples: 2, Seed: 42, Limit: 10, Clean: cmetrics{Accuracy: m.acc}, Corrupt: map[string]cmetrics{}}
			for _, c := range data.Corruptions() {
				for s := 1; s <= data.MaxSeverity; s++ {
					r.Corrupt[sevtab.Key(c, s)] = cmetrics{Accuracy: m.acc - 0.1*float64(s), ECE: 0.01 * float64(s*seed)}
				}
			}
			raw, _ := json.Marshal(r)
			if err := os.WriteFile(strings.TrimSuffix(path, ".ebnn")+".corrupt.json", raw, 0o644); err != nil {
				t.Fatal(err)
			}
			line, _ := json.Marshal(map[string]any{"method": m.method, "keep": m.keep, "seed": seed, "finetuned": m.ft, "path": path,
				"parameters": 10, "bytes": 100, "accuracy": m.acc})
			lines = append(lines, string(line))
		}
		f := filepath.Join(sub, "results.jsonl")
		if err := os.WriteFile(f, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	both := files
	var want strings.Builder
	o.archive = filepath.Join(dir, "archive")
	if err := runCorrupt(both, o, &want); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(want.String(), "| FFG-W | 10 % weights, fine-tuned | 2 | 10 | 87.50 ± 2.50 |") {
		t.Fatalf("the two files were not read as one run:\n%s", want.String())
	}
	// The archive alone, the originals gone (models and caches), gives the same tables.
	for _, sub := range []string{"seed1", "seed2"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			t.Fatal(err)
		}
	}
	o.archive = ""
	var got strings.Builder
	if err := runCorrupt([]string{filepath.Join(dir, "archive", "results.jsonl")}, o, &got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("from the archive:\n%s\nfrom the runs:\n%s", got.String(), want.String())
	}
	// Other evaluation settings cannot be served by the archive (its models are gone).
	o.samples = 4
	if err := runCorrupt([]string{filepath.Join(dir, "archive", "results.jsonl")}, o, &got); err == nil {
		t.Error("an archive of 2 samples served a run of 4")
	}
	// The same file twice: every row is given twice.
	a := filepath.Join(dir, "archive", "results.jsonl")
	if _, err := load([]string{a, a}); err == nil || !strings.Contains(err.Error(), "is already in "+a+":1") {
		t.Errorf("a row given twice: %v", err)
	}
}

// TestLoadPaths: a row's model path is used as bench/prunetab.sh wrote it (relative to the
// working directory, as runs/prunedc/… is) unless the row is archived, whose file name is
// relative to its results file; an archived row naming a path, or an empty part of a merged
// run, is refused.
func TestLoadPaths(t *testing.T) {
	t.Chdir(t.TempDir())
	write := func(path string, rows ...map[string]any) {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, r := range rows {
			line, _ := json.Marshal(r)
			b = append(append(b, line...), '\n')
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	row := func(seed int, path string, archived bool) map[string]any {
		return map[string]any{"method": "FFG-W", "keep": 1, "seed": seed, "path": path, "archived": archived}
	}
	write("runs/p/results.jsonl", row(1, "runs/p/ffgw_1.ebnn", false))
	write("arch/results.jsonl", row(2, "ffgw_2.ebnn", true))
	groups, err := load([]string{"runs/p/results.jsonl", "arch/results.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || len(groups[0].rs) != 2 || groups[0].rs[0].Path != "runs/p/ffgw_1.ebnn" || groups[0].rs[1].Path != filepath.Join("arch", "ffgw_2.ebnn") {
		t.Errorf("paths: %+v", groups[0].rs)
	}
	write("bad/results.jsonl", row(3, "../ffgw_3.ebnn", true))
	if _, err := load([]string{"bad/results.jsonl"}); err == nil || !strings.Contains(err.Error(), "must be a file name") {
		t.Errorf("an archived row naming a path: %v", err)
	}
	write("empty/results.jsonl")
	if _, err := load([]string{"runs/p/results.jsonl", "empty/results.jsonl"}); err == nil || !strings.Contains(err.Error(), "empty/results.jsonl: no results") {
		t.Errorf("an empty part of a merged run: %v", err)
	}
}
