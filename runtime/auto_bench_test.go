package runtime_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// ffgMLPSpec is a 256-128-10 mean-field Gaussian MLP, big enough for the weight strategy to win
// at large batches.
func ffgMLPSpec() *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{256},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 256, Out: 128, Bias: true, Posterior: ffgPost()},
			{Name: "1", Op: runtime.OpReLU},
			{Name: "2", Op: runtime.OpLinear, In: 128, Out: 10, Bias: true, Posterior: ffgPost()},
		}}
}

// prunedSparseModel is one pruned mean-field Gaussian Linear layer (k → dOut, bias) that keeps
// a random share density of its weights — below runtime.SparseDensity, so it runs the CSR
// products.
func prunedSparseModel(tb testing.TB, dOut, k int, density float64) *runtime.Model {
	tb.Helper()
	r := rand.New(rand.NewPCG(uint64(dOut), uint64(k)))
	var keep []uint32
	for i := range dOut * k {
		if r.Float64() < density {
			keep = append(keep, uint32(i))
		}
	}
	index, err := runtime.EncodeKeptIndex(dOut, k, keep)
	if err != nil {
		tb.Fatal(err)
	}
	rawSD := func(n int) []float32 { // softplus⁻¹ of sds around 0.05
		v := randn(r, n, 0.5)
		for i := range v {
			v[i] -= 3
		}
		return v
	}
	src := runtime.MemorySource{
		Tensors: runtime.Tensors{
			"fc.weight_mean_kept": tensor(randn(r, len(keep), 0.1), len(keep)),
			"fc._weight_sd_kept":  tensor(rawSD(len(keep)), len(keep)),
			"fc.bias_mean":        tensor(randn(r, dOut, 0.1), dOut),
			"fc._bias_sd":         tensor(rawSD(dOut), dOut),
		},
		Blobs: map[string][]byte{"fc.weight_keep": index},
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1, Pruned: true}}}}
	return newModel(tb, spec, src)
}

// nsPerBatch times PredictBatch for at least d.
func nsPerBatch(tb testing.TB, m *runtime.Model, opts runtime.Options, xs []float32, d time.Duration) float64 {
	p, err := m.NewPredictor(opts)
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	out := make([]runtime.Prediction, opts.MaxBatch)
	n := 0
	start := time.Now()
	for n == 0 || time.Since(start) < d {
		if err := p.PredictBatch(xs, out); err != nil {
			tb.Fatal(err)
		}
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkAutoStrategy checks the Auto strategy's cost model: for an inducing (the mlp_ffgu
// fixture) and a mean-field Gaussian MLP, and two inducing convolutions (Auto samples the 4×4 one
// along the gram path, the 16×16 one as weights: TestInducingGramAuto), K = 8, at batch sizes
// from 1 to 256, it times Auto and reports auto_vs_best, Auto's time over the faster of Weight
// and Local measured in the same run (1 when Auto picks the faster one; Auto may also mix
// strategies per layer).
func BenchmarkAutoStrategy(b *testing.B) {
	models := []struct {
		name string
		m    func(testing.TB) *runtime.Model
	}{
		{"inducing-mlp_ffgu", fixtureMLP},
		{"ffg-256-128-10", func(tb testing.TB) *runtime.Model { return buildModel(tb, ffgMLPSpec(), 1) }},
		{"inducing-conv-64-128-4x4", func(tb testing.TB) *runtime.Model { return buildModel(tb, indConvSpec(128, 4), 1) }},
		{"inducing-conv-64-16-16x16", func(tb testing.TB) *runtime.Model { return buildModel(tb, indConvSpec(16, 16), 1) }},
		{"pruned-ffg-1024-512-2%", func(tb testing.TB) *runtime.Model { return prunedSparseModel(tb, 512, 1024, 0.02) }},
	}
	for _, mc := range models {
		m := mc.m(b)
		for _, n := range []int{1, 4, 32, 256} {
			b.Run(fmt.Sprintf("%s/batch=%d", mc.name, n), func(b *testing.B) {
				xs := randomInputs(m, n, 3)
				opts := runtime.Options{Samples: 8, Seed: 1, MaxBatch: n}
				p, err := m.NewPredictor(opts)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				out := make([]runtime.Prediction, n)
				b.ResetTimer()
				for b.Loop() {
					if err := p.PredictBatch(xs, out); err != nil {
						b.Fatal(err)
					}
				}
				auto := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.StopTimer()
				opts.Strategy = runtime.Weight
				w := nsPerBatch(b, m, opts, xs, 200*time.Millisecond)
				opts.Strategy = runtime.Local
				l := nsPerBatch(b, m, opts, xs, 200*time.Millisecond)
				b.ReportMetric(auto/min(w, l), "auto_vs_best")
				b.ReportMetric(w/l, "weight_vs_local")
			})
		}
	}
}
