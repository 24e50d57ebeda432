package tests

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
)

// fixtureDir is where the bayesianize fixtures live inside the repository.
var fixtureDir = filepath.Join("..", "testdata", "bayesianize")

// reference is a fixture's reference.safetensors: outputs computed by bayesianize itself.
type reference struct {
	f *safetensors.File
}

func loadReference(t testing.TB, fixture string) reference {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(fixtureDir, fixture, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return reference{f}
}

// tensor is the reference's tensor name; the test fails at once if there is none.
func (r reference) tensor(t testing.TB, name string) *safetensors.Tensor {
	t.Helper()
	tn, ok := r.f.Tensor(name)
	if !ok {
		t.Fatalf("reference has no tensor %q", name)
	}
	return tn
}

func (r reference) f64(t testing.TB, name string) ([]float64, []int) {
	t.Helper()
	tn := r.tensor(t, name)
	v, err := tn.Float64s()
	if err != nil {
		t.Fatalf("reference %q: %v", name, err)
	}
	return v, tn.Shape
}

func (r reference) f32(t testing.TB, name string) []float32 {
	t.Helper()
	v, err := r.tensor(t, name).Float32s()
	if err != nil {
		t.Fatalf("reference %q: %v", name, err)
	}
	return v
}

// stateDict reads a fixture's state_dict.safetensors as runtime tensors.
func stateDict(t testing.TB, fixture string) runtime.Tensors {
	t.Helper()
	f, err := safetensors.ReadFile(filepath.Join(fixtureDir, fixture, "state_dict.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	out := runtime.Tensors{}
	for i := range f.Tensors {
		tn := &f.Tensors[i]
		v, err := tn.Float32s()
		if err != nil {
			t.Fatalf("%s: %v", tn.Name, err)
		}
		out[tn.Name] = runtime.Tensor{Shape: tn.Shape, Data: v}
	}
	return out
}

func ptr(v float64) *float64 { return &v }

// fixtureSpec describes each fixture's network (its model.txt and inference_config.json) by hand,
// independently of the converter, so that runtime parity does not depend on convert/.
func fixtureSpec(fixture string) *runtime.Spec {
	inducing := func(rows, cols, dIn int, q string, maxLamda float64, maxSDU *float64, ens int) *runtime.PosteriorSpec {
		return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: rows, InducingCols: cols,
			PriorSD: 1 / math.Sqrt(float64(dIn)), MaxLamda: ptr(maxLamda), MaxSDU: maxSDU,
			QInducing: q, WhitenedU: true, EnsembleSize: ens}
	}
	switch fixture {
	case "mlp_ffgu":
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{784},
			Layers: []runtime.LayerSpec{
				{Name: "0", Op: runtime.OpFlatten},
				{Name: "1", Op: runtime.OpLinear, In: 784, Out: 128, Bias: true,
					Posterior: inducing(16, 24, 785, runtime.QDiagonal, 0.03, ptr(0.1), 0)},
				{Name: "2", Op: runtime.OpReLU},
				{Name: "3", Op: runtime.OpLinear, In: 128, Out: 10, Bias: true,
					Posterior: inducing(16, 24, 129, runtime.QDiagonal, 0.03, ptr(0.1), 0)},
			}}
	case "cnn_ensembleu", "cnn_noisy_ffgu":
		q, maxLamda, maxSDU, ens := runtime.QEnsemble, 0.1, (*float64)(nil), 5
		if fixture == "cnn_noisy_ffgu" {
			q, maxLamda, maxSDU, ens = runtime.QDiagonal, 1.0, ptr(1.0), 0
		}
		pool := runtime.LayerSpec{Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}, Stride: [2]int{2, 2}}
		p2, p5 := pool, pool
		p2.Name, p5.Name = "2", "5"
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{1, 28, 28},
			Layers: []runtime.LayerSpec{
				{Name: "0", Op: runtime.OpConv2d, In: 1, Out: 8, Bias: true, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1},
					Posterior: inducing(8, 12, 10, q, maxLamda, maxSDU, ens)},
				{Name: "1", Op: runtime.OpReLU},
				p2,
				{Name: "3", Op: runtime.OpConv2d, In: 8, Out: 16, Bias: true, Kernel: [2]int{3, 3},
					Posterior: inducing(8, 12, 73, q, maxLamda, maxSDU, ens)},
				{Name: "4", Op: runtime.OpReLU},
				p5,
				{Name: "6", Op: runtime.OpFlatten},
				{Name: "7", Op: runtime.OpLinear, In: 576, Out: 10, Bias: true,
					Posterior: inducing(10, 32, 577, q, maxLamda, maxSDU, ens)},
			}}
	}
	return nil
}

var fixtures = []string{"mlp_ffgu", "cnn_ensembleu", "cnn_noisy_ffgu"}

func fixtureModel(t testing.TB, fixture string) *runtime.Model {
	t.Helper()
	m, err := runtime.New(fixtureSpec(fixture), stateDict(t, fixture))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
