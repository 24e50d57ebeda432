package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

func TestWriteRecord(t *testing.T) {
	dir := t.TempDir()
	rec := &onlineRecord{D: 20, K: 3, Lo: 1, Hi: 10, Seed: 1}
	rec.T = []int{10}
	rec.EM, rec.SGA = []float64{0.5}, []float64{0.25}
	name := recordName(dir, 20, 3, 1, 10, 1)
	if err := writeRecord(name, rec); err != nil {
		t.Fatal(err)
	}
	prev, err := os.ReadFile(name)
	if err != nil || len(prev) == 0 {
		t.Fatalf("record not written: %q, %v", prev, err)
	}
	if got := testutil.DirNames(t, dir); len(got) != 1 || got[0] != filepath.Base(name) {
		t.Fatalf("after a write the directory holds %v, want only the record", got)
	}

	// A record that cannot be encoded leaves the earlier record as it was.
	bad := *rec
	bad.EM = []float64{math.NaN()}
	if err := writeRecord(name, &bad); err == nil {
		t.Fatal("a record with NaN was written")
	}
	if got, _ := os.ReadFile(name); !bytes.Equal(got, prev) {
		t.Fatalf("failed write changed the earlier record to %q", got)
	}

	// The record's directory is a regular file: the write fails and creates nothing.
	notDir := filepath.Join(dir, "file")
	if err := os.WriteFile(notDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(filepath.Join(notDir, "r.json"), rec); err == nil {
		t.Fatal("a record under a regular file was written")
	}

	// The record path is a directory: refused, left as it was.
	asDir := recordName(dir, 20, 3, 1, 10, 2)
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeRecord(asDir, rec); err == nil {
		t.Fatal("a record over a directory was written")
	}
	if st, err := os.Stat(asDir); err != nil || !st.IsDir() {
		t.Fatalf("directory at the record path changed: %v", err)
	}

	// The record path is a symbolic link: refused, not followed; the target is intact.
	target := filepath.Join(dir, "precious.txt")
	if err := os.WriteFile(target, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := recordName(dir, 20, 3, 1, 10, 3)
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	if err := writeRecord(link, rec); err == nil {
		t.Fatal("a record was written through a symbolic link")
	}
	if got, _ := os.ReadFile(target); string(got) != "precious" {
		t.Fatalf("the link's target was overwritten: %q", got)
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the link was replaced: %v", err)
	}

	want := []string{"file", filepath.Base(name), filepath.Base(asDir), filepath.Base(link), "precious.txt"}
	sort.Strings(want)
	if got := testutil.DirNames(t, dir); !slices.Equal(got, want) {
		t.Fatalf("the failed writes left %v, want %v (no staging files)", got, want)
	}
}
