//go:build unix

package runtime_test

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkPrunedFFG times a network whose first layer is a pruned 784 → 256 FFG layer
// (followed by a ReLU and a deterministic 256 → 10 layer; 8 samples of a batch of 100 inputs)
// with the CSR and with the dense product, alternately in the same run, by strategy and density.
// It measures the process's CPU time (not wall time: the machines it runs on are shared) and
// reports the ratio sparse/dense (below 1: CSR faster); runtime.SparseDensity is chosen from it.
func BenchmarkPrunedFFG(b *testing.B) {
	const in, out, n, samples = 784, 256, 100, 8
	for _, st := range []struct {
		name string
		s    runtime.Strategy
	}{{"weight", runtime.Weight}, {"local", runtime.Local}} {
		for _, density := range []float64{0.001, 0.01, 0.02, 0.03, 0.05, 0.1, 0.25, 0.5} {
			b.Run(fmt.Sprintf("%s/density=%g", st.name, density), func(b *testing.B) {
				r := rand.New(rand.NewPCG(1, 2))
				kept := int(density * in * out)
				perm := r.Perm(in * out)[:kept]
				sort.Ints(perm)
				idx := make([]uint32, kept)
				for i, v := range perm {
					idx[i] = uint32(v)
				}
				index, err := runtime.EncodeKeptIndex(out, in, idx)
				if err != nil {
					b.Fatal(err)
				}
				src := runtime.MemorySource{
					Tensors: runtime.Tensors{
						"fc.weight_mean_kept": tensor(randn(r, kept, 0.1), kept),
						"fc._weight_sd_kept":  tensor(randn(r, kept, 0.1), kept),
						"fc.bias_mean":        tensor(randn(r, out, 0.1), out),
						"fc._bias_sd":         tensor(randn(r, out, 0.1), out),
					},
					Blobs: map[string][]byte{"fc.weight_keep": index},
				}
				spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{in},
					Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: in, Out: out, Bias: true,
						Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1, Pruned: true}},
						{Name: "act", Op: runtime.OpReLU},
						{Name: "head", Op: runtime.OpLinear, In: out, Out: 10}}}
				src.Tensors["head.weight"] = tensor(randn(r, 10*out, 0.1), 10, out)
				xs := randn(r, n*in, 1)
				var preds [2]*runtime.Predictor
				for i, sparse := range []bool{true, false} {
					m, err := runtime.New(spec, src)
					if err != nil {
						b.Fatal(err)
					}
					runtime.SetPrunedSparse(m, "fc", sparse)
					if preds[i], err = m.NewPredictor(runtime.Options{Samples: samples, Seed: 1, Strategy: st.s, MaxBatch: n, Threads: 1}); err != nil {
						b.Fatal(err)
					}
				}
				res := make([]runtime.Prediction, n)
				var ns [2]time.Duration
				b.ResetTimer()
				for it := 0; it < b.N; it++ {
					for i, p := range preds {
						t0 := cpuTime()
						if err := p.PredictBatch(xs, res); err != nil {
							b.Fatal(err)
						}
						ns[i] += cpuTime() - t0
					}
				}
				b.ReportMetric(float64(ns[0].Nanoseconds())/float64(b.N), "ns-sparse/op")
				b.ReportMetric(float64(ns[1].Nanoseconds())/float64(b.N), "ns-dense/op")
				b.ReportMetric(float64(ns[0])/float64(ns[1]), "sparse/dense")
			})
		}
	}
}
