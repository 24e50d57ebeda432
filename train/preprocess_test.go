package train

import (
	"math"
	"slices"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestModelRecordsPreprocess: a model trained on Fashion-MNIST (a class subset, remapped) records
// the loader's pixel scale and the subset's class names, so that the runtime turns raw pixel
// values (0–255) into exactly the inputs the network was trained on; the toy data records none.
func TestModelRecordsPreprocess(t *testing.T) {
	needFashionMNIST(t)
	c := DefaultConfig()
	c.Data, c.Task, c.Arch, c.Posterior = "fmnist", "classification", "mlp:784-8-3", "deterministic"
	c.Classes, c.TrainLimit, c.TestLimit, c.Epochs, c.BatchSize = "0,7,9", 30, 10, 1, 10
	c.Out = t.TempDir() + "/m.ebnn"
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SaveModel(tr.ModelPath()); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Load(tr.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pre := m.Preprocessing()
	if pre == nil || !(math.Abs(pre.Scale-1.0/255) <= 1e-15) || len(pre.Mean) != 0 || len(pre.Std) != 0 {
		t.Fatalf("preprocess %+v, want scale 1/255", pre)
	}
	want := []string{"T-shirt/top", "Sneaker", "Ankle boot"}
	for k, n := range want {
		if m.ClassName(k) != n {
			t.Errorf("class %d named %q, want %q", k, m.ClassName(k), n)
		}
	}
	// Raw pixels: the stored byte values, recovered from the loader's [0, 1] values.
	x := tr.Test.Row(0)
	raw := make([]float32, len(x))
	for i, v := range x {
		raw[i] = float32(math.Round(float64(v) * 255))
	}
	got := make([]float32, len(x))
	if err := m.Normalize(got, raw); err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if !(math.Abs(float64(got[i]-x[i])) <= 1e-6) {
			t.Fatalf("pixel %d: normalised %v, trained on %v", i, got[i], x[i])
		}
	}

	// convert carries the section over from an edgebnn checkpoint, and its Preprocess option
	// replaces it but for the class names (the names of the outputs, not of the inputs'
	// transformation).
	out := t.TempDir() + "/c.ebnn"
	cm := convertLoad(t, convert.Options{Checkpoint: tr.ModelPath(), Out: out, DType: "f16"})
	if p := cm.Preprocessing(); p == nil || p.Scale != pre.Scale || cm.ClassName(2) != "Ankle boot" {
		t.Errorf("converted model's preprocess %+v", p)
	}
	repl := &runtime.Preprocess{Version: 1, Mean: []float64{0.5}}
	cm = convertLoad(t, convert.Options{Checkpoint: tr.ModelPath(), Out: out + "2", Preprocess: repl})
	if p := cm.Preprocessing(); p == nil || p.Scale != 0 || p.Mean[0] != 0.5 || !slices.Equal(p.ClassNames, pre.ClassNames) {
		t.Errorf("replaced preprocess %+v", p)
	}

	toy, err := New(toyConfig(t, "deterministic", ""))
	if err != nil {
		t.Fatal(err)
	}
	if p := toy.Preprocess(); p != nil {
		t.Errorf("toy data records %+v", p)
	}
}
