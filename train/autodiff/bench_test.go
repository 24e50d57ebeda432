package autodiff

import (
	"math/rand/v2"
	"testing"
)

// BenchmarkMLPStep measures one training step (forward + backward, no optimizer update) of a
// 784-256-256-10 ReLU MLP on a float32 batch of 128 with softmax cross-entropy.
func BenchmarkMLPStep(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	mk := func(name string, shape ...int) *Param[float32] {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.05)
		}
		p, err := NewParam(name, v, shape...)
		if err != nil {
			b.Fatal(err)
		}
		return p
	}
	w1, b1 := mk("w1", 256, 784), mk("b1", 256)
	w2, b2 := mk("w2", 256, 256), mk("b2", 256)
	w3, b3 := mk("w3", 10, 256), mk("b3", 10)
	const batch = 128
	x := make([]float32, batch*784)
	for i := range x {
		x[i] = r.Float32()
	}
	labels := make([]int, batch)
	for i := range labels {
		labels[i] = r.IntN(10)
	}
	tape := NewTape[float32]()
	step := func() {
		tape.Reset()
		h := tape.ReLU(tape.Linear(tape.Const(x, batch, 784), tape.Param(w1), tape.Param(b1)))
		h = tape.ReLU(tape.Linear(h, tape.Param(w2), tape.Param(b2)))
		loss := tape.CrossEntropy(tape.Linear(h, tape.Param(w3), tape.Param(b3)), labels)
		if err := tape.Backward(loss); err != nil {
			b.Fatal(err)
		}
	}
	step()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
}
