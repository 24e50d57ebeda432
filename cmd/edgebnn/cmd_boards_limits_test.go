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
			done := make(chan struct{})
			var out, errb bytes.Buffer
			code := -1
			go func() { code = run([]string{"boards", "--dir", filepath.Dir(p)}, &out, &errb); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("boards --dir hangs")
			}
			if code != 1 || !strings.Contains(errb.String(), p) || !strings.Contains(errb.String(), "not a regular file") {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
		})
	}
}
