package runtime_test

import (
	goruntime "runtime"
	"slices"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// writeF16 writes a model file with every tensor stored as fp16; the names in compress are
// zstd-compressed as well.
func writeF16(t testing.TB, spec *runtime.Spec, ts runtime.Tensors, compress ...string) string {
	t.Helper()
	return writeModelFile(t, spec, runtime.MemorySource{Tensors: ts}, func(name string) format.AddOptions {
		return format.AddOptions{F16: true, Compress: slices.Contains(compress, name)}
	})
}

// TestKeepF16: an fp16 model file loaded with KeepF16 — a single network and an Ensemble-W of
// two, convolutions with and without bias, BatchNorm folded in, one member's weights
// zstd-compressed, convolutions wide enough to be widened a block of output channels at a time
// (kernels.GemmRowBlock; im2col and pointwise) and one widened whole — predicts bit-identically
// to the default load (which widens every tensor to float32 at load; every sample's logits
// compared), reports the same weights, allocates while loading the weights' float32 bytes less
// and nothing per prediction, and holds fewer than 128 rows of the widest layer's weights in
// float32 (not its 300).
func TestKeepF16(t *testing.T) {
	const c, wide, mid = 32, 300, 130
	layers := []runtime.LayerSpec{
		{Name: "c1", Op: runtime.OpConv2d, In: c, Out: wide, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}},
		{Name: "b1", Op: runtime.OpBatchNorm, In: wide, Affine: true}, {Name: "r", Op: runtime.OpReLU},
		{Name: "c2", Op: runtime.OpConv2d, In: wide, Out: mid, Kernel: [2]int{1, 1}, Bias: true}, {Name: "r2", Op: runtime.OpReLU},
		{Name: "c3", Op: runtime.OpConv2d, In: mid, Out: c, Kernel: [2]int{1, 1}}, {Name: "f", Op: runtime.OpFlatten},
		{Name: "fc", Op: runtime.OpLinear, In: c * 16, Out: 5, Bias: true}}
	for _, members := range []int{0, 2} {
		spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{c, 4, 4},
			Members: members, Layers: layers}
		all, _ := ensembleTensors(spec, max(members, 1), 5)
		path := writeF16(t, spec, all, memberName(max(members, 1)-1, "c1.weight"))
		load := func(opt runtime.LoadOptions) (*runtime.Model, uint64) {
			var before, after goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)
			m, err := runtime.LoadWith(path, opt)
			goruntime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			return m, after.TotalAlloc - before.TotalAlloc
		}
		m32, a32 := load(runtime.LoadOptions{})
		m16, a16 := load(runtime.LoadOptions{KeepF16: true})
		// The weights' float32 copies are not made: 4 bytes a weight, 2 for the compressed
		// tensor, whose fp16 copy is.
		k := max(members, 1)
		c1, c2, c3, fc := wide*c*9, mid*wide, c*mid, c*16*5
		saved := uint64(4*k*(c1+c2+c3+fc) - 2*c1)
		t.Logf("members %d: loading allocated %d bytes widened to float32, %d kept in fp16 (%d fewer, %d expected)", members, a32, a16, int64(a32)-int64(a16), saved)
		if a16 > a32 || a32-a16 < saved*9/10 {
			t.Errorf("members %d: KeepF16 allocated %d bytes while loading, the default %d: want about %d fewer", members, a16, a32, saved)
		}
		xs := randomInputs(m32, 3, 7)
		var preds [2][]runtime.Prediction
		var scratch [2]int64
		for i, m := range []*runtime.Model{m32, m16} {
			pr, err := m.NewPredictor(runtime.Options{Samples: max(members, 1), MaxBatch: 3, KeepSamples: true})
			if err != nil {
				t.Fatal(err)
			}
			scratch[i] = pr.ScratchBytes()
			preds[i] = make([]runtime.Prediction, 3)
			if err := pr.PredictBatch(xs, preds[i]); err != nil {
				t.Fatal(err)
			}
			if i == 1 {
				if n := testing.AllocsPerRun(20, func() { _ = pr.PredictBatch(xs, preds[i]) }); n != 0 {
					t.Errorf("members %d: KeepF16 prediction allocates %v times", members, n)
				}
			}
		}
		if extra := scratch[1] - scratch[0]; extra >= 4*128*c*9 {
			t.Errorf("members %d: KeepF16's predictor holds %d bytes more than the default's: %d rows of c1's weights", members, extra, extra/(4*c*9))
		}
		for i := range preds[0] {
			if len(preds[0][i].Outputs) == 0 || !slices.Equal(preds[0][i].Outputs, preds[1][i].Outputs) || !slices.Equal(preds[0][i].Probs, preds[1][i].Probs) ||
				preds[0][i].MutualInfo != preds[1][i].MutualInfo {
				t.Fatalf("members %d input %d: %v widened at load, %v kept in fp16", members, i, preds[0][i].Probs, preds[1][i].Probs)
			}
		}
		for _, name := range []string{"c1", "c2", "c3", "fc"} {
			for e := range max(members, 1) {
				w32, r, cols, err := m32.MemberWeight(name, e)
				w16, r16, cols16, err16 := m16.MemberWeight(name, e)
				if err != nil || err16 != nil || r != r16 || cols != cols16 || !slices.Equal(w32, w16) {
					t.Fatalf("members %d: %s member %d: MemberWeight differs (%v, %v)", members, name, e, err, err16)
				}
			}
		}
	}
}

// BenchmarkKeepF16: a prediction of an fp16 model loaded with KeepF16 (weights widened per use)
// against the same file loaded the default way (widened once at load), timed in the same run:
// keep_vs_default is the ratio of their times per input. An MLP 784-256-256-10 at batch 1 (the
// conversion costs about what the product does) and 32, and a 3×3 convolution of 64 channels on
// a 16×16 image (each weight serves 256 positions).
func BenchmarkKeepF16(b *testing.B) {
	mlp := []runtime.LayerSpec{{Name: "fc1", Op: runtime.OpLinear, In: 784, Out: 256, Bias: true}, {Name: "r1", Op: runtime.OpReLU},
		{Name: "fc2", Op: runtime.OpLinear, In: 256, Out: 256, Bias: true}, {Name: "r2", Op: runtime.OpReLU},
		{Name: "fc3", Op: runtime.OpLinear, In: 256, Out: 10, Bias: true}}
	conv := []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 64, Out: 64, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, Bias: true},
		{Name: "r", Op: runtime.OpReLU}, {Name: "f", Op: runtime.OpFlatten}, {Name: "fc", Op: runtime.OpLinear, In: 64 * 256, Out: 10, Bias: true}}
	for _, c := range []struct {
		name   string
		shape  []int
		layers []runtime.LayerSpec
		batch  int
	}{{"mlp/batch=1", []int{784}, mlp, 1}, {"mlp/batch=32", []int{784}, mlp, 32}, {"conv3x3x64/batch=1", []int{64, 16, 16}, conv, 1}} {
		b.Run(c.name, func(b *testing.B) {
			spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: c.shape, Layers: c.layers}
			path := writeF16(b, spec, randomTensors(spec, 3))
			var preds [2]*runtime.Predictor
			size := 0
			for i, keep := range []bool{false, true} {
				m, err := runtime.LoadWith(path, runtime.LoadOptions{KeepF16: keep})
				if err != nil {
					b.Fatal(err)
				}
				b.Cleanup(func() { m.Close() })
				if preds[i], err = m.NewPredictor(runtime.Options{MaxBatch: c.batch}); err != nil {
					b.Fatal(err)
				}
				size = m.InputSize()
			}
			xs := make([]float32, c.batch*size)
			for i := range xs {
				xs[i] = float32(i%7) / 7
			}
			out := make([]runtime.Prediction, c.batch)
			run := func(p *runtime.Predictor) {
				if err := p.PredictBatch(xs, out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				run(preds[1])
			}
			keep := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
			// The baseline right after, so that both see the same machine load.
			n, start := 0, time.Now()
			for time.Since(start) < 100*time.Millisecond {
				run(preds[0])
				n++
			}
			def := float64(time.Since(start).Nanoseconds()) / float64(n)
			b.ReportMetric(keep/def, "keep_vs_default")
			b.ReportMetric(keep/float64(c.batch), "ns/input")
		})
	}
}
