//go:build unix

package outfile

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestCommitUmask: Commit gives the file its permission (0644, or SetPerm's) less the process's
// umask, as os.OpenFile would, also for an output named like the permission probe.
func TestCommitUmask(t *testing.T) {
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	dir := t.TempDir()
	for _, c := range []struct {
		name       string
		perm, want os.FileMode // perm 0: the default
	}{{"out.json", 0, 0o640}, {"edgebnn", 0o755, 0o750}, {".perm", 0, 0o640}} {
		path := filepath.Join(dir, c.name)
		s, err := Stage(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if c.perm != 0 {
			s.SetPerm(c.perm)
		}
		if err := os.WriteFile(s.Path(), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := s.Commit(context.Background()); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := st.Mode().Perm(); got != c.want {
			t.Errorf("%s under umask 027: mode %#o, want %#o", c.name, got, c.want)
		}
	}
	if err := Write(context.Background(), filepath.Join(dir, "w.txt"), func(w io.Writer) error { _, err := io.WriteString(w, "y"); return err }); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(filepath.Join(dir, "w.txt")); err != nil || st.Mode().Perm() != 0o640 {
		t.Errorf("Write under umask 027: %v, mode %v, want 0640", err, st.Mode())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 4 {
		t.Errorf("%d entries, want the 4 outputs (no staging directory or probe left)", len(ents))
	}
}
