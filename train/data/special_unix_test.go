//go:build unix

package data

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestSpecialFiles: a CSV or IDX path that is a FIFO, a link to /dev/zero or a directory is an
// error at once, naming the file.
func TestSpecialFiles(t *testing.T) {
	dir, fifo, zero := testutil.Specials(t, "fifo.csv", "zero.csv")
	idxDir := testutil.Mkdir(t, filepath.Join(dir, "fmnist"))
	images := testutil.DevZero(t, filepath.Join(idxDir, "t10k-images-idx3-ubyte.gz"))
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
			err := testutil.Within(t, 5*time.Second, c.name, c.load)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "not a regular file") {
				t.Fatalf("error %v", err)
			}
		})
	}
}
