//go:build unix

package train

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadConfigFileSpecial: a config path that is a FIFO, a link to /dev/zero or a directory
// is an error at once.
func TestReadConfigFileSpecial(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxConfigBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, zero, dir, big} {
		done := make(chan error, 1)
		go func() {
			c := DefaultConfig()
			done <- c.ReadConfigFile(p)
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: ReadConfigFile hangs", p)
		}
		c := DefaultConfig()
		if err := c.Set("inference", p); err == nil {
			t.Errorf("inference %s accepted", p)
		}
	}
}
