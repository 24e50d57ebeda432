//go:build unix

package format

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestOpenSpecialFiles: Open reads regular files only. A FIFO must be refused at once (opening
// one for reading would otherwise wait for a writer forever), and a device — /dev/zero, also
// through a symbolic link, which would otherwise be read without end — or a directory is refused
// with an error naming the path.
func TestOpenSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "model.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	zero := filepath.Join(dir, "zero.ebnn")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, path, want string }{
		{"fifo", fifo, "not a regular file"},
		{"symlink to /dev/zero", zero, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"missing", filepath.Join(dir, "none.ebnn"), "open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := Open(c.path)
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				var fe *Error
				if err == nil || !errors.As(err, &fe) || !errors.Is(err, ErrIO) ||
					!strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
					t.Fatalf("Open(%s) = %v, want an ErrIO naming the path and %q", c.path, err, c.want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("Open(%s) still blocked after 5 s", c.path)
			}
		})
	}
}
