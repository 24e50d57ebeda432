package runtime_test

import (
	"fmt"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestZeroAllocs: after warm-up (NewPredictor and one call that sizes the Predictions' slices),
// Predict and PredictBatch allocate nothing, for every strategy, with and without KeepSamples,
// on the MLPs, on the CNN with BatchNorm, pooling and residual blocks and (not under -short) on
// the mlp_ffgu fixture.
func TestZeroAllocs(t *testing.T) {
	type named struct {
		name string
		m    *runtime.Model
	}
	var models []named
	for _, tm := range testModels {
		models = append(models, named{tm.name, buildModel(t, tm.spec(), 8)})
	}
	if !testing.Short() {
		// The fixture's larger layers take other Gemm paths.
		models = append(models, named{"mlp_ffgu", fixtureMLP(t)})
	}
	for _, nm := range models {
		m := nm.m
		for _, st := range strategies {
			for _, keep := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%v/keep=%v", nm.name, st, keep), func(t *testing.T) {
					const batch = 5
					p, err := m.NewPredictor(runtime.Options{Samples: 3, Seed: 1, Strategy: st, MaxBatch: 3, KeepSamples: keep})
					if err != nil {
						t.Fatal(err)
					}
					xs := randomInputs(m, batch, 9)
					out := make([]runtime.Prediction, batch)
					var one runtime.Prediction
					x := xs[:m.InputSize()]
					if err := p.PredictBatch(xs, out); err != nil {
						t.Fatal(err)
					}
					if err := p.Predict(x, &one); err != nil {
						t.Fatal(err)
					}
					var perr error
					if a := testing.AllocsPerRun(5, func() {
						if err := p.Predict(x, &one); err != nil {
							perr = err
						}
					}); a != 0 {
						t.Errorf("Predict: %v allocations per call", a)
					}
					// A batch larger than MaxBatch is split into chunks.
					if a := testing.AllocsPerRun(5, func() {
						if err := p.PredictBatch(xs, out); err != nil {
							perr = err
						}
					}); a != 0 {
						t.Errorf("PredictBatch: %v allocations per call", a)
					}
					if perr != nil {
						t.Fatal(perr)
					}
				})
			}
		}
	}
}

// TestScratchBytes: a Predictor reports the memory it holds, which grows with MaxBatch.
func TestScratchBytes(t *testing.T) {
	for _, tm := range testModels {
		m := buildModel(t, tm.spec(), 8)
		var prev int64
		for _, b := range []int{1, 4, 16} {
			p, err := m.NewPredictor(runtime.Options{Samples: 2, MaxBatch: b, Strategy: runtime.Weight})
			if err != nil {
				t.Fatal(err)
			}
			s := p.ScratchBytes()
			// At least the activations of the input batch (float32).
			if s < int64(4*b*m.InputSize()) || s <= prev {
				t.Errorf("%s: MaxBatch %d: ScratchBytes %d (previous %d)", tm.name, b, s, prev)
			}
			prev = s
		}
	}
}
