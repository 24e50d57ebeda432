//go:build unix

package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestReadConfigFileSpecial: a config path that is a FIFO, a link to /dev/zero or a directory
// is an error at once.
func TestReadConfigFileSpecial(t *testing.T) {
	dir, fifo, zero := testutil.Specials(t, "fifo.json", "zero.json")
	big := filepath.Join(dir, "big.json")
	if err := os.WriteFile(big, make([]byte, MaxConfigBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ p, want string }{
		{fifo, "not a regular file"}, {zero, "not a regular file"}, {dir, "not a regular file"}, {big, "too large"},
	} {
		p := tc.p
		err := testutil.Within(t, 5*time.Second, p+": ReadConfigFile", func() error {
			c := DefaultConfig()
			return c.ReadConfigFile(p)
		})
		if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming the file and saying %q", p, err, tc.want)
		}
		c := DefaultConfig()
		if err := c.Set("inference", p); err == nil {
			t.Errorf("inference %s accepted", p)
		}
	}
}
