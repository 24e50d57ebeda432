//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRefSamplesFIFO: a FIFO in place of a draws file is refused at once instead of blocking the
// reader until some process writes to it.
func TestRefSamplesFIFO(t *testing.T) {
	dir := t.TempDir()
	writeRefDraws(t, dir, [][5]float64{{0, 1, 2, 1, -3}, {0.5, 1, 2, 2, -4}})
	p := filepath.Join(dir, refMFGFiles[1].name)
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	if _, err := readRefDraws(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("err %v, want a refusal naming the FIFO as not a regular file", err)
	}
}
