package bnn

import (
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// BenchmarkFFGUStep times one training step (forward, KL, backward) of the FFG-U MLP
// 784-256-256-10 with 32×32 inducing matrices on a batch of 100 (bench/configs/fmnist_ffgu.json
// without the optimizer update).
func BenchmarkFFGUStep(b *testing.B) {
	nodes, _ := convert.MLP([]int{784, 256, 256, 10}, "relu")
	cfg, err := bnnconfig.Parse([]byte(`{"inference": "inducing", "inducing_rows": 32, "inducing_cols": 32,
		"max_lamda": 0.03, "max_sd_u": 0.1, "init_lamda": 0.001, "sqrt_width_scaling": true}`))
	if err != nil {
		b.Fatal(err)
	}
	spec, inits, err := SpecFromNodes(nodes, cfg, []int{784}, runtime.Classification, 0)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	n, err := New[float32](spec, inits, rng)
	if err != nil {
		b.Fatal(err)
	}
	x := make([]float32, 100*784)
	labels := make([]int, 100)
	for i := range x {
		x[i] = rng.Float32()
	}
	for i := range labels {
		labels[i] = rng.IntN(10)
	}
	tp := autodiff.NewTape[float32]()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tp.Reset()
		n.Begin()
		n.Seed(1, int64(i))
		out := n.Forward(tp, tp.Const(x, 100, 784), true)
		loss := tp.Add(tp.CrossEntropy(out, labels), tp.Scale(n.KL(tp), 1.0/60000))
		if err := tp.Backward(loss); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "steps/s")
}
