//go:build unix

package boards

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/internal/testutil"
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
		{"symlink to /dev/zero", func(t *testing.T, p string) { testutil.DevZero(t, p) }, Limits{}, readlimit.ErrNotRegular},
		{"fifo", func(t *testing.T, p string) { testutil.Mkfifo(t, p) }, Limits{}, readlimit.ErrNotRegular},
		{"directory", func(t *testing.T, p string) { testutil.Mkdir(t, p) }, Limits{}, readlimit.ErrNotRegular},
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
			err := testutil.Within(t, 5*time.Second, "LoadDir", func() error { _, err := LoadDirLimits(dir, tc.lim); return err })
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), p) {
				t.Fatalf("error %v, want %v naming %s", err, tc.want, p)
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
	fifo := testutil.Mkfifo(t, filepath.Join(dir, "fifo"))
	file := filepath.Join(dir, "file.json")
	if err := os.WriteFile(file, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero", file} {
		err := testutil.Within(t, 5*time.Second, p+": LoadDir", func() error { _, err := LoadDir(p); return err })
		if err == nil || !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %v", p, err)
		}
	}
}
