package tests

import (
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestLoadModelFile: a fixture written as a model file and loaded with runtime.Load predicts
// exactly as the in-memory model (same seed).
func TestLoadModelFile(t *testing.T) {
	for _, fx := range fixtures {
		t.Run(fx, func(t *testing.T) {
			path := writeFixtureModel(t, fx, t.TempDir())
			loaded, err := runtime.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			defer loaded.Close()
			mem := fixtureModel(t, fx)
			x := loadReference(t, fx).f32(t, "inputs")[:784]
			opts := runtime.Options{Samples: 8, Seed: 3}
			var a, b runtime.Prediction
			for _, c := range []struct {
				m   *runtime.Model
				out *runtime.Prediction
			}{{loaded, &a}, {mem, &b}} {
				p, err := c.m.NewPredictor(opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := p.Predict(x, c.out); err != nil {
					t.Fatal(err)
				}
			}
			if len(a.Probs) == 0 || len(a.Probs) != len(b.Probs) {
				t.Fatalf("loaded %d class probabilities, in memory %d", len(a.Probs), len(b.Probs))
			}
			for j := range a.Probs {
				if a.Probs[j] != b.Probs[j] {
					t.Fatalf("class %d: loaded %v, in memory %v", j, a.Probs[j], b.Probs[j])
				}
			}
		})
	}
}
