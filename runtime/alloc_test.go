package runtime_test

import (
	"fmt"
	goruntime "runtime"
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

// TestFirstCallAllocs: NewPredictor's warm-up leaves nothing to allocate for the first call of
// any batch size up to MaxBatch (and a batch beyond it, in chunks), under every strategy — Auto
// among them, whose warm-up creates Weight's and Local's buffers in dry passes and may meet a
// path at a smaller batch that its one real pass did not take — with one thread and two. The
// Predictions are sized by another Predictor first (growing the caller's slices is not the
// Predictor's allocation). The allocation counter is the process's, which now and then counts
// one of the Go runtime's own (testing.AllocsPerRun's average rounds it away): each first call
// is measured on 8 fresh Predictors, and an allocation in half of them fails. (Testing
// AllocsPerRun runs the function once before it counts, so TestZeroAllocs cannot see this.)
// Until session 21 every first call under Weight and Local allocated once per thread: a
// worker's list of free activation buffers grew at its first reset.
func TestFirstCallAllocs(t *testing.T) {
	const reps = 8
	batches := []int{1, 2, 3, 5}
	for _, tm := range testModels {
		m := buildModel(t, tm.spec(), 8)
		for _, c := range []struct {
			st      runtime.Strategy
			threads int
		}{{runtime.Weight, 1}, {runtime.Local, 1}, {runtime.Auto, 1}, {runtime.Weight, 2}, {runtime.Local, 2}, {runtime.Auto, 2}} {
			t.Run(fmt.Sprintf("%s/%v/threads=%d", tm.name, c.st, c.threads), func(t *testing.T) {
				opts := runtime.Options{Samples: 3, Seed: 1, Strategy: c.st, MaxBatch: 3, Threads: c.threads}
				xs := randomInputs(m, 5, 9)
				out := make([]runtime.Prediction, 5)
				sizer, err := m.NewPredictor(opts)
				if err != nil {
					t.Fatal(err)
				}
				if err := sizer.PredictBatch(xs, out); err != nil {
					t.Fatal(err)
				}
				allocs := make([]uint64, len(batches))
				// One P, as testing.AllocsPerRun: ReadMemStats restarts the world, which may start
				// an OS thread for a second P, and that allocates.
				defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
				for range reps {
					p, err := m.NewPredictor(opts)
					if err != nil {
						t.Fatal(err)
					}
					for i, n := range batches {
						var before, after goruntime.MemStats
						goruntime.ReadMemStats(&before)
						err := p.PredictBatch(xs[:n*m.InputSize()], out[:n])
						goruntime.ReadMemStats(&after)
						if err != nil {
							t.Fatal(err)
						}
						allocs[i] += after.Mallocs - before.Mallocs
					}
					p.Close()
				}
				for i, n := range batches {
					if allocs[i] >= reps/2 {
						t.Errorf("first call with a batch of %d: %d allocations over %d Predictors", n, allocs[i], reps)
					}
				}
			})
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
