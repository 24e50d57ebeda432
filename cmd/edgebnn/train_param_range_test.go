//go:build !device

package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// dirFiles returns the contents of every file in dir by name.
func dirFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range ents {
		files[e.Name()] = string(readFile(t, filepath.Join(dir, e.Name())))
	}
	return files
}

// TestTrainDivergingLRWritesNothing: a learning rate that drives the parameters beyond what
// --resume accepts (±1e15; here finite values of 1e17 to 4e21, the loss still finite) fails the
// run at the end of that epoch, exit 1, with an error naming the tensor and lr, and writes or
// replaces no file: no checkpoint, model or metrics log, and a resumed run leaves the
// checkpoint it resumed as it was. train used to write them, and its own --resume then refused
// them ("tensor \"1.weight\": value 2 is 4.3830926e+21, outside ±1e+15").
func TestTrainDivergingLRWritesNothing(t *testing.T) {
	run := []string{"train", "--data", "toy1d", "--task", "regression", "--posterior", "deterministic",
		"--optimizer", "sgd", "--batch-size", "50", "--quiet", "--no-plots"}
	for _, tc := range []struct {
		name  string
		first []string // the flags of a run before, in the same directory, after run's (nil: none)
		args  []string // the command line
		want  []string
	}{
		{"new run", nil,
			append(slices.Clip(run), "--arch", "mlp:1-16-1", "--lr", "1e6", "--epochs", "1", "--out", "m.ebnn"),
			[]string{"epoch 1 step 2", `tensor "1.weight"`, "lower lr (now 1e+06)"}},
		{"resumed run", []string{"--arch", "mlp:1-1", "--lr", "1000", "--epochs", "2", "--checkpoint-min-steps", "0", "--out", "m.ebnn"},
			[]string{"train", "--resume", "m.ebnn", "--epochs", "3", "--out", "r.ebnn", "--quiet", "--no-plots"},
			[]string{"epoch 3 step 6", `tensor "1.weight"`, "lower lr (now 1000)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			abs := func(args []string) []string {
				args = slices.Clone(args)
				for i := range args {
					if strings.HasSuffix(args[i], ".ebnn") {
						args[i] = filepath.Join(dir, args[i])
					}
				}
				return args
			}
			if tc.first != nil {
				runOK(t, append(slices.Clip(run), abs(tc.first)...)...)
			}
			before := dirFiles(t, dir)
			code, stdout, stderr := runCLI(abs(tc.args)...)
			if code != exitError {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitError, stdout, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			after := dirFiles(t, dir)
			if !maps.Equal(after, before) {
				t.Errorf("files before the run %v, after %v (or their contents changed)", slices.Sorted(maps.Keys(before)), slices.Sorted(maps.Keys(after)))
			}
		})
	}
}
