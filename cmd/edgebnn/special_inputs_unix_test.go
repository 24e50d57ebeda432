//go:build unix

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPredictSpecialInputs: an --input that is a FIFO (CSV or safetensors) or holds one line
// longer than the line limit is an error at once, naming the file.
func TestPredictSpecialInputs(t *testing.T) {
	dir := t.TempDir()
	fifoCSV := filepath.Join(dir, "in.csv")
	fifoST := filepath.Join(dir, "in.safetensors")
	for _, p := range []string{fifoCSV, fifoST} {
		if err := syscall.Mkfifo(p, 0o644); err != nil {
			t.Skip("mkfifo:", err)
		}
	}
	long := filepath.Join(dir, "long.csv")
	mustWrite(t, long, bytes.Repeat([]byte("1"), 17<<20))
	for _, c := range []struct{ input, want string }{
		{fifoCSV, "not a regular file"},
		{fifoST, "not a regular file"},
		{long, "line 1: longer than"},
	} {
		t.Run(filepath.Base(c.input), func(t *testing.T) {
			code, _, stderr := runCLITimeout(t, 10*time.Second, "predict", "--model", filepath.Join("demo", "model.ebnn"), "--input", c.input)
			if code != 1 || !strings.Contains(stderr, c.input) || !strings.Contains(stderr, c.want) {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
}

// TestBoardsDirHostile: `boards --dir` with a profile that links to /dev/zero or is a FIFO
// fails at once, naming the file.
func TestBoardsDirHostile(t *testing.T) {
	for _, c := range []struct {
		name string
		make func(path string) error
	}{
		{"dev zero", func(p string) error { return os.Symlink("/dev/zero", p) }},
		{"fifo", func(p string) error { return syscall.Mkfifo(p, 0o644) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "evil.json")
			if err := c.make(p); err != nil {
				t.Skip(err)
			}
			code, _, stderr := runCLITimeout(t, 10*time.Second, "boards", "--dir", filepath.Dir(p))
			if code != 1 || !strings.Contains(stderr, p) || !strings.Contains(stderr, "not a regular file") {
				t.Fatalf("exit %d: %s", code, stderr)
			}
		})
	}
}
