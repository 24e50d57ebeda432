package runtime_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// readSafetensors is a tiny safetensors reader for the benchmarks' fixture (runtime may not
// import convert/): an 8-byte little-endian header length, a JSON header of
// {name: {dtype, shape, data_offsets}}, then the data. Only F32 tensors are read; others are
// skipped.
func readSafetensors(path string) (runtime.Tensors, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(raw) < 8 {
		return nil, fmt.Errorf("%s: too short for a safetensors header", path)
	}
	n := binary.LittleEndian.Uint64(raw)
	if n > uint64(len(raw)-8) {
		return nil, fmt.Errorf("%s: header length %d exceeds the file", path, n)
	}
	var hdr map[string]json.RawMessage
	if err := json.Unmarshal(raw[8:8+n], &hdr); err != nil {
		return nil, fmt.Errorf("%s: header: %w", path, err)
	}
	data := raw[8+n:]
	ts := runtime.Tensors{}
	for name, msg := range hdr {
		if name == "__metadata__" {
			continue
		}
		var e struct {
			DType   string   `json:"dtype"`
			Shape   []int    `json:"shape"`
			Offsets []uint64 `json:"data_offsets"`
		}
		if err := json.Unmarshal(msg, &e); err != nil {
			return nil, fmt.Errorf("%s: tensor %q: %w", path, name, err)
		}
		if e.DType != "F32" {
			continue
		}
		count := uint64(1)
		for _, d := range e.Shape {
			count *= uint64(d)
		}
		if len(e.Offsets) != 2 || e.Offsets[0] > e.Offsets[1] || e.Offsets[1] > uint64(len(data)) ||
			e.Offsets[1]-e.Offsets[0] != 4*count {
			return nil, fmt.Errorf("%s: tensor %q: data_offsets %v do not fit shape %v", path, name, e.Offsets, e.Shape)
		}
		b := data[e.Offsets[0]:e.Offsets[1]]
		v := make([]float32, count)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
		ts[name] = runtime.Tensor{Shape: e.Shape, Data: v}
	}
	return ts, nil
}

// mlpFFGUSpec is the mlp_ffgu fixture's network (as tests/fixture_helpers_test.go describes it):
// 784 → inducing(128) → ReLU → inducing(10), diagonal whitened q(U), M = 16×24.
func mlpFFGUSpec() *runtime.Spec {
	ind := func(dIn int) *runtime.PosteriorSpec {
		return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 16, InducingCols: 24,
			PriorSD: 1 / math.Sqrt(float64(dIn)), MaxLamda: ptr(0.03), MaxSDU: ptr(0.1),
			QInducing: runtime.QDiagonal, WhitenedU: true}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{784},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpFlatten},
			{Name: "1", Op: runtime.OpLinear, In: 784, Out: 128, Bias: true, Posterior: ind(785)},
			{Name: "2", Op: runtime.OpReLU},
			{Name: "3", Op: runtime.OpLinear, In: 128, Out: 10, Bias: true, Posterior: ind(129)},
		}}
}

// deterministicAtMean builds the same architecture with deterministic layers holding m's
// posterior-mean weights.
func deterministicAtMean(tb testing.TB, m *runtime.Model) *runtime.Model {
	spec := m.Spec()
	spec.Layers = append([]runtime.LayerSpec(nil), spec.Layers...)
	ts := runtime.Tensors{}
	for i := range spec.Layers {
		l := &spec.Layers[i]
		if l.Op != runtime.OpLinear {
			continue
		}
		l.Posterior = nil
		w, rows, cols, err := m.MeanWeight(l.Name)
		if err != nil {
			tb.Fatal(err)
		}
		weight, bias := make([]float32, 0, rows*(cols-1)), make([]float32, rows)
		for r := 0; r < rows; r++ {
			weight = append(weight, w[r*cols:r*cols+cols-1]...)
			bias[r] = w[r*cols+cols-1]
		}
		ts[l.Name+".weight"] = tensor(weight, rows, cols-1)
		ts[l.Name+".bias"] = tensor(bias, rows)
	}
	d, err := runtime.New(&spec, ts)
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

func fixtureMLP(tb testing.TB) *runtime.Model {
	ts, err := readSafetensors(filepath.Join("..", "testdata", "bayesianize", "mlp_ffgu", "state_dict.safetensors"))
	if err != nil {
		tb.Fatal(err)
	}
	m, err := runtime.New(mlpFFGUSpec(), ts)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

// nsPerPredict times Predict for at least d.
func nsPerPredict(p *runtime.Predictor, x []float32, d time.Duration) float64 {
	var pr runtime.Prediction
	n := 0
	start := time.Now()
	for time.Since(start) < d {
		for i := 0; i < 16; i++ {
			_ = p.Predict(x, &pr)
		}
		n += 16
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkPredict: one Predict on the mlp_ffgu fixture for K = 1, 8, 32 samples and both
// strategies, next to a deterministic forward at the mean weights; x_vs_deterministic is the
// ratio of their times (the deterministic forward is re-timed after each sub-benchmark).
func BenchmarkPredict(b *testing.B) {
	m := fixtureMLP(b)
	det := deterministicAtMean(b, m)
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, m.InputSize())
	for i := range x {
		x[i] = r.Float32()
	}
	dp, err := det.NewPredictor(runtime.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Run("deterministic", func(b *testing.B) {
		b.ReportAllocs()
		var pr runtime.Prediction
		for b.Loop() {
			if err := dp.Predict(x, &pr); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, k := range []int{1, 8, 32} {
		for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
			b.Run(fmt.Sprintf("K=%d/%v", k, st), func(b *testing.B) {
				p, err := m.NewPredictor(runtime.Options{Samples: k, Seed: 1, Strategy: st})
				if err != nil {
					b.Fatal(err)
				}
				var pr runtime.Prediction
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if err := p.Predict(x, &pr); err != nil {
						b.Fatal(err)
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				// The baseline is timed right after, so that both see the same machine load.
				b.StopTimer()
				b.ReportMetric(ns/nsPerPredict(dp, x, 100*time.Millisecond), "x_vs_deterministic")
			})
		}
	}
}

// TestDeterministicAtMean: the deterministic network built from MeanWeight gives the same logits
// as the Mean option (checks the benchmarks' baseline and the safetensors reader).
func TestDeterministicAtMean(t *testing.T) {
	m := fixtureMLP(t)
	det := deterministicAtMean(t, m)
	xs := randomInputs(m, 3, 5)
	a := predictAll(t, m, runtime.Options{Mean: true, KeepSamples: true, MaxBatch: 3}, xs)
	d := predictAll(t, det, runtime.Options{KeepSamples: true, MaxBatch: 3}, xs)
	for i := range a {
		if err := closePrediction(&a[i], &d[i], 1e-5); err != nil {
			t.Errorf("input %d: Mean option vs deterministic copy: %v", i, err)
		}
	}
}
