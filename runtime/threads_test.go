package runtime_test

import (
	"fmt"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestThreadsBitIdentical: drawing the blocks of samples on 2, 3 or 8 goroutines gives bit-identical
// predictions (per-sample outputs included) to one goroutine, for every strategy.
func TestThreadsBitIdentical(t *testing.T) {
	for _, tm := range testModels {
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local, runtime.Auto} {
			t.Run(tm.name+"/"+st.String(), func(t *testing.T) {
				m := buildModel(t, tm.spec(), 5)
				const n = 3
				xs := randomInputs(m, n, 6)
				opts := runtime.Options{Samples: 19, Seed: 11, Strategy: st, MaxBatch: 2, KeepSamples: true} // blocks of 8, 8 and 3 samples
				want := predictAll(t, m, opts, xs)
				for _, threads := range []int{2, 3, 8} {
					opts.Threads = threads
					got := predictAll(t, m, opts, xs)
					for i := range want {
						if err := samePrediction(&got[i], &want[i]); err != nil {
							t.Errorf("%d threads, input %d: %v", threads, i, err)
						}
					}
				}
			})
		}
	}
}

// TestThreadsNoAllocation: with several threads Predict still allocates nothing after warm-up.
func TestThreadsNoAllocation(t *testing.T) {
	for _, tm := range testModels {
		t.Run(tm.name, func(t *testing.T) {
			m := buildModel(t, tm.spec(), 5)
			p, err := m.NewPredictor(runtime.Options{Samples: 8, Threads: 4})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			x := randomInputs(m, 1, 1)
			var out runtime.Prediction
			if err := p.Predict(x, &out); err != nil {
				t.Fatal(err)
			}
			if a := testing.AllocsPerRun(20, func() { p.Predict(x, &out) }); a != 0 {
				t.Errorf("%v allocations per Predict with 4 threads", a)
			}
		})
	}
}

// TestThreadsOptions: thread counts are validated and capped at the number of samples.
func TestThreadsOptions(t *testing.T) {
	m := buildModel(t, mlpSpec(), 1)
	for _, c := range []struct {
		threads, samples, want int
		ok                     bool
	}{{0, 4, 1, true}, {3, 4, 3, true}, {16, 4, 4, true}, {-1, 4, 0, false}, {5000, 4, 0, false}} {
		t.Run(fmt.Sprint(c.threads), func(t *testing.T) {
			p, err := m.NewPredictor(runtime.Options{Samples: c.samples, Threads: c.threads})
			if !c.ok {
				if err == nil {
					t.Fatal("no error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if got := p.Options().Threads; got != c.want {
				t.Errorf("Threads = %d, want %d", got, c.want)
			}
		})
	}
}
