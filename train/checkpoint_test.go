package train

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
)

// TestCheckpointDeterministic: saving the same training state again gives a byte-identical
// checkpoint, with the optimizer tensors in sorted order (they come from a map, whose iteration
// order Go randomises).
func TestCheckpointDeterministic(t *testing.T) {
	cases := []struct {
		name, posterior, optimizer string
	}{
		{"deterministic adam", "deterministic", "adam"},
		{"deterministic sgd", "deterministic", "sgd"},
		{"ensemble_w adam", "ensemble_w", "adam"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, tc.posterior, "")
			c.Optimizer, c.EnsembleSize, c.Epochs = tc.optimizer, 2, 1
			tr := trainRun(t, c)
			dir := t.TempDir()
			var first []byte
			for i := range 5 {
				path := filepath.Join(dir, "c"+string(rune('0'+i))+".ebnn")
				if err := tr.SaveCheckpoint(path); err != nil {
					t.Fatal(err)
				}
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = b
				} else if !bytes.Equal(b, first) {
					t.Fatalf("save %d differs from save 0 (%d and %d bytes)", i, len(b), len(first))
				}
			}
			f, err := format.Open(filepath.Join(dir, "c0.ebnn"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var names []string
			for _, n := range f.Tensors() {
				if strings.HasPrefix(n, OptimPrefix) {
					names = append(names, n)
				}
			}
			if len(names) < 2 {
				t.Fatalf("checkpoint has %d optimizer tensors, want several: %v", len(names), f.Tensors())
			}
			if !slices.IsSorted(names) {
				t.Errorf("optimizer tensors not sorted: %v", names)
			}
		})
	}
}
