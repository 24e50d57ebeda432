//go:build unix

package readlimit

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

func TestOpen(t *testing.T) {
	dir, fifo, zero := testutil.Specials(t, "fifo", "zero")
	regular := filepath.Join(dir, "ok.txt")
	if err := os.WriteFile(regular, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(regular, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path string
		max        int64
		want       error // nil: reads "hello"
	}{
		{"regular", regular, 100, nil},
		{"regular at the limit", regular, 5, nil},
		{"symlink to regular", link, 0, nil},
		{"too large", regular, 4, ErrTooLarge},
		{"symlink to /dev/zero", zero, 100, ErrNotRegular},
		{"fifo", fifo, 100, ErrNotRegular},
		{"directory", dir, 100, ErrNotRegular},
		{"missing", filepath.Join(dir, "nope"), 100, os.ErrNotExist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b []byte
			err := testutil.Within(t, 5*time.Second, "ReadFile", func() (err error) { b, err = ReadFile(tt.path, tt.max); return err })
			if tt.want == nil {
				if err != nil || string(b) != "hello" {
					t.Fatalf("got %q, %v", b, err)
				}
				return
			}
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.path) {
				t.Fatalf("error %v, want %v naming %s", err, tt.want, tt.path)
			}
		})
	}
}

func TestReader(t *testing.T) {
	for _, tt := range []struct {
		in      string
		max     int64
		wantErr bool
	}{{"abc", 3, false}, {"abc", 0, false}, {"abcd", 3, true}, {"", 1, false}} {
		b, err := io.ReadAll(Reader(strings.NewReader(tt.in), "x", tt.max))
		if tt.wantErr {
			if !errors.Is(err, ErrTooLarge) {
				t.Errorf("%q max %d: error %v, want ErrTooLarge", tt.in, tt.max, err)
			}
			continue
		}
		if err != nil || string(b) != tt.in {
			t.Errorf("%q max %d: %q, %v", tt.in, tt.max, b, err)
		}
	}
}

// TestParseFile: the contents reach parse; a read error is prefixed with the package and names
// the file, a parse error is prefixed with the path; either way the result is the zero value.
func TestParseFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cfg.txt")
	if err := os.WriteFile(path, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	length := func(b []byte) (*int, error) { n := len(b); return &n, nil }
	if n, err := ParseFile("pkg", path, 0, length); err != nil || n == nil || *n != 5 {
		t.Fatalf("ParseFile = %v, %v, want 5", n, err)
	}
	missing := filepath.Join(dir, "missing.txt")
	n, err := ParseFile("pkg", missing, 0, length)
	if n != nil || !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "pkg: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v, %v, want a nil result and an error \"pkg: …\" naming %s", n, err, missing)
	}
	if n, err := ParseFile("pkg", path, 4, length); n != nil || !errors.Is(err, ErrTooLarge) {
		t.Errorf("over the limit: %v, %v, want ErrTooLarge", n, err)
	}
	bad := errors.New("bad syntax")
	n, err = ParseFile("pkg", path, 0, func([]byte) (*int, error) { k := 1; return &k, bad })
	if n != nil || !errors.Is(err, bad) || err.Error() != path+": bad syntax" {
		t.Errorf("parse error: %v, %v, want a nil result and %q", n, err, path+": bad syntax")
	}
}
