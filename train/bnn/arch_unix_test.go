//go:build unix

package bnn

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestParseArchSpecialFiles: a JSON architecture file must be a regular file of bounded size; a
// FIFO is refused at once instead of blocking, a link to /dev/zero instead of being read forever.
func TestParseArchSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "arch.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero} {
		done := make(chan error, 1)
		go func() {
			_, err := ParseArch(p)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("ParseArch(%s) = %v, want a refusal naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("ParseArch(%s) still running after 5 s", p)
		}
	}
}
