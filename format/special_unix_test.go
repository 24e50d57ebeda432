//go:build unix

package format

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestOpenSpecialFiles: Open reads regular files only. A FIFO must be refused at once (opening
// one for reading would otherwise wait for a writer forever), and a device — /dev/zero, also
// through a symbolic link, which would otherwise be read without end — or a directory is refused
// with an error naming the path.
func TestOpenSpecialFiles(t *testing.T) {
	dir, fifo, zero := testutil.Specials(t, "model.fifo", "zero.ebnn")
	for _, c := range []struct{ name, path, want string }{
		{"fifo", fifo, "not a regular file"},
		{"symlink to /dev/zero", zero, "not a regular file"},
		{"directory", dir, "not a regular file"},
		{"missing", filepath.Join(dir, "none.ebnn"), "open"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := testutil.Within(t, 5*time.Second, "Open("+c.path+")", func() error {
				f, err := Open(c.path)
				if f != nil {
					f.Close()
				}
				return err
			})
			var fe *Error
			if err == nil || !errors.As(err, &fe) || !errors.Is(err, ErrIO) ||
				!strings.Contains(err.Error(), c.path) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%s) = %v, want an ErrIO naming the path and %q", c.path, err, c.want)
			}
		})
	}
}

// TestWriteFileUmask: WriteFile's permissions are Perm (0644 by default) less the process's
// umask, as os.WriteFile's are — a user with umask 077 gets a private model file.
func TestWriteFileUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, c := range []struct {
		perm, want os.FileMode
	}{{0, 0o600}, {0o755, 0o700}, {0o640, 0o600}} {
		w := NewWriter()
		if err := w.AddBlob("meta", []byte("{}"), false); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("m%o.ebnn", c.perm))
		if err := w.WriteFile(path, WriteOptions{Perm: c.perm}); err != nil {
			t.Fatal(err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.want {
			t.Errorf("Perm %#o under umask 077: file mode %#o, want %#o", c.perm, got, c.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 3 {
		t.Errorf("%d entries in the output directory, want the 3 outputs (no temporary file left)", len(ents))
	}
}
