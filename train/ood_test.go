package train

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/train/data"
)

func TestConfigOODValidate(t *testing.T) {
	cases := []struct {
		name, data, classes, ood string
		wantErr                  string
	}{
		{"none", "fmnist", "", "", ""},
		{"classes", "fmnist", "0-4", "classes", ""},
		{"classes without classes", "fmnist", "", "classes", "ood classes needs classes"},
		{"digits", "fmnist", "", "digits", ""},
		{"digits with a path", "fmnist", "0-4", "digits:/tmp/d.csv", ""},
		{"digits with an empty path", "fmnist", "", "digits:", "needs a path"},
		{"shuffled", "fmnist", "", "fmnist-shuffled", ""},
		{"shuffled on corrupted test data", "fmnist-c:gaussian_noise:1", "", "fmnist-shuffled", ""},
		{"digits on toy data", "toy1d", "", "digits", "needs 28×28 image data"},
		{"unknown", "fmnist", "", "mnist", `ood "mnist" is not classes, digits`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Data, c.Classes, c.OOD = tc.data, tc.classes, tc.ood
			if tc.data == "toy1d" {
				c.Task, c.Arch = "regression", "mlp:1-50-1"
			}
			err := c.Validate()
			testutil.WantError(t, err, tc.wantErr)
		})
	}
}

// TestLoadEvalDataOOD loads each OOD set with the real Fashion-MNIST (skipped without it; the
// digits case also without scikit-learn's file).
func TestLoadEvalDataOOD(t *testing.T) {
	if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "t10k-images-idx3-ubyte.gz")); errors.Is(err, os.ErrNotExist) {
		t.Skipf("Fashion-MNIST is not installed in %s", data.DefaultFashionMNISTDir)
	}
	cases := []struct {
		name, classes, ood string
		testLimit          int
		wantTest, wantOOD  int
		needDigits         bool
	}{
		{"held-out classes", "0-4", "", 0, 5000, 5000, false},
		{"shuffled", "", "fmnist-shuffled", 0, 10000, 10000, false},
		{"shuffled replaces held-out classes", "0-4", "fmnist-shuffled", 300, 300, 300, false},
		{"digits", "", "digits", 0, 10000, 1797, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := os.Stat(data.DefaultDigitsPath); tc.needDigits && err != nil {
				t.Skipf("scikit-learn's digits are not installed (%v); apt-get install python3-sklearn", err)
			}
			c := DefaultConfig()
			c.Classes, c.OOD, c.TestLimit = tc.classes, tc.ood, tc.testLimit
			test, ood, err := LoadEvalData(c)
			if err != nil {
				t.Fatal(err)
			}
			if test.N != tc.wantTest {
				t.Fatalf("test set %d examples, want %d", test.N, tc.wantTest)
			}
			if tc.wantOOD == 0 {
				if ood != nil {
					t.Fatalf("an OOD set of %d examples, want none", ood.N)
				}
				return
			}
			if ood == nil || ood.N != tc.wantOOD || ood.Dim != test.Dim || !slices.Equal(ood.Shape, test.Shape) {
				t.Fatalf("OOD set %+v, want %d examples of shape %v", ood, tc.wantOOD, test.Shape)
			}
			if ood.Scale != test.Scale {
				t.Fatalf("OOD scale %g, the test set's %g: eval would feed the model other values", ood.Scale, test.Scale)
			}
			if lo, hi := slices.Min(ood.X), slices.Max(ood.X); !(lo >= 0) || !(hi <= 1) {
				t.Fatalf("OOD values in [%g, %g], want within [0, 1] as the test images", lo, hi)
			}
		})
	}
	c := DefaultConfig()
	c.OOD = "digits:" + filepath.Join(t.TempDir(), "missing.csv")
	if _, _, err := LoadEvalData(c); err == nil || !strings.Contains(err.Error(), "missing.csv") {
		t.Fatalf("missing digits file: error %v, want one naming it", err)
	}
}
