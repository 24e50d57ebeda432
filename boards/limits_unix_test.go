//go:build unix

package boards

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// TestLoadDirHostileEntries: a *.json entry that is not a regular file, or is too large, is
// an error naming it, returned at once (no hang on a FIFO, no endless read of /dev/zero).
func TestLoadDirHostileEntries(t *testing.T) {
	cases := []struct {
		name string
		make func(t *testing.T, path string)
		lim  Limits
		want error
	}{
		{"symlink to /dev/zero", func(t *testing.T, p string) {
			if err := os.Symlink("/dev/zero", p); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, readlimit.ErrNotRegular},
		{"fifo", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o644); err != nil {
				t.Skip("mkfifo:", err)
			}
		}, Limits{}, readlimit.ErrNotRegular},
		{"directory", func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, readlimit.ErrNotRegular},
		{"too large", func(t *testing.T, p string) {
			if err := os.WriteFile(p, make([]byte, DefaultMaxFileBytes+1), 0o644); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, readlimit.ErrTooLarge},
		{"over a custom limit", func(t *testing.T, p string) {
			if err := os.WriteFile(p, mustJSON(t, validProfile()), 0o644); err != nil {
				t.Fatal(err)
			}
		}, Limits{MaxFileBytes: 10}, readlimit.ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "bad.json")
			tc.make(t, p)
			done := make(chan error, 1)
			go func() { _, err := LoadDirLimits(dir, tc.lim); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), p) {
					t.Fatalf("error %v, want %v naming %s", err, tc.want, p)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("LoadDir hangs")
			}
		})
	}
}

func TestLoadDirMaxProfiles(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		m := validProfile()
		m["name"] = n
		if err := os.WriteFile(filepath.Join(dir, n+".json"), mustJSON(t, m), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := LoadDirLimits(dir, Limits{MaxProfiles: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDirLimits(dir, Limits{MaxProfiles: 2}); err == nil || !strings.Contains(err.Error(), "more than 2") {
		t.Fatalf("error %v", err)
	}
}

// TestLoadDirNotADirectory: --dir naming a FIFO, /dev/zero or a file is an error at once.
func TestLoadDirNotADirectory(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("mkfifo:", err)
	}
	file := filepath.Join(dir, "file.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", file} {
		done := make(chan error, 1)
		go func() { _, err := LoadDir(p); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: error %v", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: LoadDir hangs", p)
		}
	}
}
