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
				sameOnThreads(t, m, opts, xs, 2, 3, 8)
			})
		}
	}
}

// sameOnThreads checks that predicting xs with opts on each of threads goroutines gives
// predictions bit-identical (samePrediction) to opts' own.
func sameOnThreads(t *testing.T, m *runtime.Model, opts runtime.Options, xs []float32, threads ...int) {
	t.Helper()
	want := predictAll(t, m, opts, xs)
	for _, n := range threads {
		opts.Threads = n
		got := predictAll(t, m, opts, xs)
		for i := range want {
			if err := samePrediction(&got[i], &want[i]); err != nil {
				t.Errorf("%d threads, input %d: %v", n, i, err)
			}
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

// wideInducingSpec: 8 → inducing(300, q1) → ReLU → inducing(10, q2): the second layer samples
// locally from its own inputs, 301 per row, so its products span two depth blocks of the GEMM.
func wideInducingSpec(q1, q2 string, ens2 int) func() *runtime.Spec {
	return func() *runtime.Spec {
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{8},
			Layers: []runtime.LayerSpec{
				{Name: "0", Op: runtime.OpLinear, In: 8, Out: 300, Bias: true, Posterior: inducingPost(5, 4, q1, true, 0)},
				{Name: "1", Op: runtime.OpReLU},
				{Name: "2", Op: runtime.OpLinear, In: 300, Out: 10, Bias: true, Posterior: inducingPost(3, 6, q2, false, ens2)},
			}}
	}
}

// inducingCNNSpec is cnnSpec with an inducing shortcut instead of the FFG one: every stochastic
// layer inducing, so whole blocks are drawn together.
func inducingCNNSpec() *runtime.Spec {
	s := cnnSpec()
	for i := range s.Layers {
		if s.Layers[i].Name == "res2" {
			s.Layers[i].Shortcut[0].Posterior = inducingPost(3, 2, runtime.QDiagonal, true, 0)
		}
	}
	return s
}

// TestPassesBitIdentical: one thread draws whole blocks of samples in passes of up to 32
// samples; several threads split the blocks and draw fewer per pass. The predictions (per-sample
// outputs included) are bit-identical for any number of threads, for networks whose every
// stochastic layer is inducing (passes merged: the local sampler's products over two depth
// blocks, q(U) families, convolutions and residual blocks, global U), with a last partial block,
// one or three inputs and every strategy; networks with other layers keep one block per pass.
func TestPassesBitIdentical(t *testing.T) {
	for _, c := range []struct {
		name  string
		spec  func() *runtime.Spec
		merge bool
	}{
		{"wide-diagonal-matrix", wideInducingSpec(runtime.QDiagonal, runtime.QMatrix, 0), true},
		{"wide-full-ensemble", wideInducingSpec(runtime.QFull, runtime.QEnsemble, 3), true},
		{"inducing-cnn", inducingCNNSpec, true},
		{"global-cnn", globalCNNSpec, true},
		{"mlp-with-ffg", mlpSpec, false},
		{"cnn-with-ffg", cnnSpec, false},
		{"fa", faSpec, false},
	} {
		m := buildModel(t, c.spec(), 9)
		xs := randomInputs(m, 3, 10)
		for _, st := range strategies {
			for _, samples := range []int{19, 40} {
				for _, batch := range []int{1, 3} {
					t.Run(fmt.Sprintf("%s/%v/K=%d/n=%d", c.name, st, samples, batch), func(t *testing.T) {
						opts := runtime.Options{Samples: samples, Seed: 5, Strategy: st, MaxBatch: batch, KeepSamples: true}
						p, err := m.NewPredictor(opts)
						if err != nil {
							t.Fatal(err)
						}
						pass, block := runtime.PassSamples(p)
						wantPass := block
						if c.merge {
							wantPass = min(32, samples/block*block)
						}
						if pass != wantPass {
							t.Fatalf("pass of %d samples (block %d), want %d", pass, block, wantPass)
						}
						sameOnThreads(t, m, opts, xs, 2, 3, 5)
					})
				}
			}
		}
	}
}
