//go:build unix

package faexp

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestReadUCICSVFiles: a FIFO and a directory are refused before they are opened (a FIFO
// without a writer would block), a missing file is an error naming it.
func TestReadUCICSVFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := testutil.Mkfifo(t, filepath.Join(dir, "fifo"))
	for _, p := range []string{fifo, dir} {
		if _, err := ReadUCICSV(p); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("%s: %v, want not a regular file", p, err)
		}
	}
	if _, err := ReadUCICSV(filepath.Join(dir, "missing.csv")); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Errorf("missing file: %v", err)
	}
}
