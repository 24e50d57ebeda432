package runtime_test

import (
	"math"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

var strategies = []runtime.Strategy{runtime.Weight, runtime.Local, runtime.Auto}

// TestDeterminism: the same seed gives bit-identical predictions under GOMAXPROCS 1, 2 and 8, on
// repeated calls of one Predictor and with fresh Predictors; a different seed gives different
// predictions.
func TestDeterminism(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(0))
	for _, tm := range testModels {
		for _, st := range strategies {
			t.Run(tm.name+"/"+st.String(), func(t *testing.T) {
				m := buildModel(t, tm.spec(), 1)
				xs := randomInputs(m, 3, 2)
				opts := runtime.Options{Samples: 6, Seed: 42, Strategy: st, MaxBatch: 3, KeepSamples: true}
				goruntime.GOMAXPROCS(1)
				want := predictAll(t, m, opts, xs)
				for _, procs := range []int{1, 2, 8} {
					goruntime.GOMAXPROCS(procs)
					p, err := m.NewPredictor(opts)
					if err != nil {
						t.Fatal(err)
					}
					got := make([]runtime.Prediction, len(want))
					for rep := 0; rep < 3; rep++ {
						if err := p.PredictBatch(xs, got); err != nil {
							t.Fatal(err)
						}
						for i := range want {
							if err := samePrediction(&want[i], &got[i]); err != nil {
								t.Fatalf("GOMAXPROCS %d, call %d, input %d: %v", procs, rep, i, err)
							}
						}
					}
				}
				opts.Seed = 43
				other := predictAll(t, m, opts, xs)
				for i := range want {
					if samePrediction(&want[i], &other[i]) == nil {
						t.Errorf("input %d: seeds 42 and 43 give identical predictions", i)
					}
				}
			})
		}
	}
}

// TestBatchMatchesSingle: with the Weight and Local strategies each input of a batch gets the same
// samples as when predicted alone or in smaller chunks (MaxBatch smaller than the batch): the
// results agree to rounding (the GEMM's summation order depends on the batch size, so the bits
// may differ in the last place).
func TestBatchMatchesSingle(t *testing.T) {
	for _, tm := range testModels {
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
			t.Run(tm.name+"/"+st.String(), func(t *testing.T) {
				m := buildModel(t, tm.spec(), 3)
				xs := randomInputs(m, 5, 4)
				batchMatchesSingle(t, m, runtime.Options{Samples: 4, Seed: 7, Strategy: st, KeepSamples: true}, xs)
			})
		}
	}
}

// batchMatchesSingle fails t unless each input of xs gets, to rounding (1e-5), the same
// prediction in one batch, in chunks of 2 (MaxBatch 2) and alone (Predict); opts' MaxBatch is
// set here. It returns the batch's predictions.
func batchMatchesSingle(t *testing.T, m *runtime.Model, opts runtime.Options, xs []float32) []runtime.Prediction {
	t.Helper()
	in := m.InputSize()
	n := len(xs) / in
	opts.MaxBatch = n
	batch := predictAll(t, m, opts, xs)
	opts.MaxBatch = 2
	chunked := predictAll(t, m, opts, xs)
	opts.MaxBatch = 1
	p, err := m.NewPredictor(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		var one runtime.Prediction
		if err := p.Predict(xs[i*in:(i+1)*in], &one); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			what string
			p    *runtime.Prediction
		}{{"single", &one}, {"chunks of 2", &chunked[i]}} {
			if err := closePrediction(&batch[i], c.p, 1e-5); err != nil {
				t.Errorf("input %d: batch of %d vs %s differ beyond rounding: %v", i, n, c.what, err)
			}
		}
	}
	return batch
}

// TestConcurrentPredictors: one shared Model, 16 goroutines each with its own Predictor, give the
// same predictions as a sequential run (run with -race to check for data races).
func TestConcurrentPredictors(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			m := buildModel(t, tm.spec(), 5)
			const workers = 16
			rounds := 4
			if testing.Short() {
				rounds = 2
			}
			xs := randomInputs(m, 2, 6)
			opts := func(w int) runtime.Options {
				return runtime.Options{Samples: 3, Seed: uint64(w % 4), Strategy: strategies[w%3], MaxBatch: 2, KeepSamples: w%2 == 0}
			}
			want := make([][]runtime.Prediction, workers)
			for w := range want {
				want[w] = predictAll(t, m, opts(w), xs)
			}
			errs := make([]error, workers)
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Add(1)
				go func(w int) {
					defer wg.Done()
					p, err := m.NewPredictor(opts(w))
					if err != nil {
						errs[w] = err
						return
					}
					got := make([]runtime.Prediction, len(want[w]))
					for r := 0; r < rounds; r++ {
						if err := p.PredictBatch(xs, got); err != nil {
							errs[w] = err
							return
						}
						for i := range got {
							if err := samePrediction(&want[w][i], &got[i]); err != nil {
								errs[w] = err
								return
							}
						}
					}
				}(w)
			}
			wg.Wait()
			for w, err := range errs {
				if err != nil {
					t.Errorf("goroutine %d: %v", w, err)
				}
			}
		})
	}
}

// TestSampleBlocksAgree: samples are drawn in blocks whose size depends on K (up to 8), but sample
// k always draws from the same streams, so the first samples of a K = 3 prediction (one block of
// 3) and of a K = 19 prediction (blocks of 8, 8 and 3) agree to rounding, with either strategy
// (Auto's choice may depend on K).
func TestSampleBlocksAgree(t *testing.T) {
	for _, tm := range testModels {
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
			t.Run(tm.name+"/"+st.String(), func(t *testing.T) {
				m := buildModel(t, tm.spec(), 9)
				const n = 2
				xs := randomInputs(m, n, 10)
				opts := runtime.Options{Samples: 3, Seed: 5, Strategy: st, MaxBatch: n, KeepSamples: true}
				few := predictAll(t, m, opts, xs)
				opts.Samples = 19
				many := predictAll(t, m, opts, xs)
				k := len(few[0].Outputs)
				for i := range few {
					for j, v := range few[i].Outputs {
						w := many[i].Outputs[j]
						if !(math.Abs(float64(v-w)) <= 1e-5*math.Max(1, math.Abs(float64(v)))) {
							t.Fatalf("input %d, output %d of the first %d: K=3 gives %v, K=19 gives %v", i, j, k, v, w)
						}
					}
				}
			})
		}
	}
}
