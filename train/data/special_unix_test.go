//go:build unix

package data

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSpecialFiles: a CSV or IDX path that is a FIFO, a link to /dev/zero or a directory is an
// error at once, naming the file.
func TestSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.csv")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	zero := filepath.Join(dir, "zero.csv")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	idxDir := filepath.Join(dir, "fmnist")
	if err := os.Mkdir(idxDir, 0o755); err != nil {
		t.Fatal(err)
	}
	images := filepath.Join(idxDir, "t10k-images-idx3-ubyte.gz")
	if err := os.Symlink("/dev/zero", images); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(idxDir, "t10k-labels-idx1-ubyte"), idxBytes([]uint32{1}, []byte{0}), 0o644)
	for _, c := range []struct {
		name string
		load func() error
		want string
	}{
		{"csv fifo", func() error { _, err := ReadCSVFile(fifo, CSVOptions{}); return err }, fifo},
		{"csv /dev/zero", func() error { _, err := ReadCSVFile(zero, CSVOptions{}); return err }, zero},
		{"csv directory", func() error { _, err := ReadCSVFile(dir, CSVOptions{}); return err }, dir},
		{"idx /dev/zero", func() error { _, err := FashionMNIST(idxDir, "test"); return err }, images},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- c.load() }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not a regular file") {
					t.Fatalf("error %v", err)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("hangs")
			}
		})
	}
}
