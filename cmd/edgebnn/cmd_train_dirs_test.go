//go:build !device

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainFailedRunRemovesCreatedDirs: a run that fails having written nothing removes the
// directories of --out that it created, and only those: an existing parent stays.
func TestTrainFailedRunRemovesCreatedDirs(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "keep")
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(keep, "nd", "sub", "run.ebnn")
	code, stdout, stderr := runCLI("train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-8-1",
		"--posterior", "deterministic", "--batch-size", "25", "--quiet", "--no-plots", "--epochs", "0", "--out", out)
	if code == 0 || !strings.Contains(stderr, "epochs 0") {
		t.Fatalf("exit %d, want an error about epochs 0\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if _, err := os.Lstat(filepath.Join(keep, "nd")); !os.IsNotExist(err) {
		t.Fatalf("the failed run left the directory it created: %v", err)
	}
	if st, err := os.Stat(keep); err != nil || !st.IsDir() {
		t.Fatalf("the failed run removed an existing directory: %v", err)
	}
}

// TestRemoveEmptyDirs: mkdirAllCreated returns the directories it made, deepest first, and
// removeEmptyDirs removes them up to the first that is not empty.
func TestRemoveEmptyDirs(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	created, err := mkdirAllCreated(deep, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{deep, filepath.Join(dir, "a", "b"), filepath.Join(dir, "a")}
	if strings.Join(created, "|") != strings.Join(want, "|") {
		t.Fatalf("created %v, want %v", created, want)
	}
	if again, err := mkdirAllCreated(deep, 0o755); err != nil || len(again) != 0 {
		t.Fatalf("existing directories reported as created: %v, %v", again, err)
	}
	// b holds a file: c goes, b and a stay.
	if err := os.WriteFile(filepath.Join(dir, "a", "b", "f"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	removeEmptyDirs(created)
	if _, err := os.Lstat(deep); !os.IsNotExist(err) {
		t.Fatalf("the empty directory stayed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a", "b", "f")); err != nil {
		t.Fatalf("a directory that was not empty was removed: %v", err)
	}
	// Under a regular file nothing can be made; the error is reported and nothing is created.
	file := filepath.Join(dir, "a", "b", "f")
	if created, err := mkdirAllCreated(filepath.Join(file, "x", "y"), 0o755); err == nil || len(created) != 0 {
		t.Fatalf("mkdirAllCreated under a regular file: %v, %v", created, err)
	}
}
