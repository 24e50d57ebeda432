package torchpt

import (
	"archive/zip"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestLimitsAreFields checks that tighter limits refuse what the defaults
// accept, with ErrLimit.
func TestLimitsAreFields(t *testing.T) {
	good := archiveZip(t, dict(func(p *testutil.Pickle) {
		p.Str("a").Tensor("FloatStorage", "0", 4, 0, []int{2, 2}, []int{2, 1})
	}), map[string][]byte{"0": f32s(1, 2, 3, 4)}, nil)
	if _, err := Parse(good); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		lim  Limits
	}{
		{"rank", Limits{MaxRank: 1}},
		{"stack", Limits{MaxStack: 3}},
		{"marks", Limits{MaxMarkDepth: 1}},
		{"objects", Limits{MaxObjects: 5}},
		{"container", Limits{MaxContainerLen: 1}},
		{"int", Limits{MaxIntBytes: 1}},
		{"refs", Limits{MaxRefBytes: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseLimits(good, c.lim)
			if c.name == "refs" {
				_, err = ParseLimits(stored(t, []byte{0x80, 2, 'X', 1, 0, 0, 0, 'a', 'q', 0, 'h', 0, '.'}), c.lim)
			}
			if c.name == "int" {
				// No LONG in the file: an INT of 4 digits is within 3 bytes.
				_, err = ParseLimits(deflated(t, []byte{0x80, 2, 'I', '1', '2', '3', '4', '\n', '.'}), c.lim)
			}
			if !errors.Is(err, ErrLimit) {
				t.Fatalf("err = %v, want ErrLimit", err)
			}
		})
	}
	t.Run("pickle bytes", func(t *testing.T) {
		if _, err := ParseLimits(good, Limits{MaxPickleBytes: 16}); err == nil || !strings.Contains(err.Error(), "data.pkl") {
			t.Fatalf("err = %v", err)
		}
	})
}

// TestRealPicklesWellWithinLimits: the fixtures' pickles (made by
// PyTorch) reference again only a fraction of the default MaxRefBytes,
// so real state_dicts many times larger still pass.
func TestRealPicklesWellWithinLimits(t *testing.T) {
	for _, fx := range []string{"mlp_ffgu", "cnn_noisy_ffgu", "cnn_ensembleu"} {
		data, err := os.ReadFile(filepath.Join(fixtures, fx, "state_dict.pt"))
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range zr.File {
			if !strings.HasSuffix(f.Name, "/data.pkl") {
				continue
			}
			rc, _ := f.Open()
			pkl, _ := io.ReadAll(rc)
			rc.Close()
			// Half the pickle's size in reused bytes, a tenth of the
			// default, and 25 objects per tensor suffice.
			lim := Limits{MaxRefBytes: int64(len(pkl)) / 2, MaxObjects: 25 * 21}
			if err := scanPickle(pkl, lim); err != nil {
				t.Errorf("%s: %v", fx, err)
			}
		}
	}
}
