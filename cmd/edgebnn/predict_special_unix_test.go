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
	if err := os.WriteFile(long, bytes.Repeat([]byte("1"), 17<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ input, want string }{
		{fifoCSV, "not a regular file"},
		{fifoST, "not a regular file"},
		{long, "line 1: longer than"},
	} {
		t.Run(filepath.Base(c.input), func(t *testing.T) {
			var out, errb bytes.Buffer
			code := -1
			done := make(chan struct{})
			go func() {
				code = run([]string{"predict", "--model", filepath.Join("demo", "model.ebnn"), "--input", c.input}, &out, &errb)
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("predict hangs")
			}
			if code != 1 || !strings.Contains(errb.String(), c.input) || !strings.Contains(errb.String(), c.want) {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
		})
	}
}
