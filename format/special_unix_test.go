//go:build unix

package format

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestOpenSpecialFiles: Open reads regular files only. A FIFO must be refused at once (opening
// one for reading would otherwise wait for a writer forever), and a device — /dev/zero, also
// through a symbolic link, which would otherwise be read without end — or a directory is refused
// with an error naming the path.
func TestOpenSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := testutil.Mkfifo(t, filepath.Join(dir, "model.fifo"))
	zero := testutil.DevZero(t, filepath.Join(dir, "zero.ebnn"))
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
