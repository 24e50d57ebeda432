package eval_test

import (
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// TestPredictAppliesPreprocess: a model that records an input transformation gets, from a data
// set whose loader scaled the stored values by d.Scale, exactly the inputs the transformation makes
// of the stored values — computed here by hand — including for an HWC model (whose reordering
// does not apply: data sets are channel-major).
func TestPredictAppliesPreprocess(t *testing.T) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 1, 2},
		Layers: []runtime.LayerSpec{{Name: "f", Op: runtime.OpFlatten}, {Name: "fc", Op: runtime.OpLinear, In: 4, Out: 3, Bias: true}}}
	w := []float32{1, -2, 0.5, 3, -1, 0, 2, 1, 0.25, -0.5, 1, -3}
	base, err := runtime.New(spec, runtime.Tensors{
		"fc.weight": {Shape: []int{3, 4}, Data: w},
		"fc.bias":   {Shape: []int{3}, Data: []float32{0.1, -0.2, 0.3}},
	})
	if err != nil {
		t.Fatal(err)
	}
	stored := [][]float32{{10, 20, 30, 40}, {0, 255, 128, 7}}
	d := &data.Dataset{Name: "t", N: 2, Dim: 4, Shape: []int{2, 1, 2}, Classes: 3, Labels: []int{0, 1}, Scale: 0.5}
	for _, x := range stored {
		for _, v := range x {
			d.X = append(d.X, v*0.5)
		}
	}
	for _, layout := range []runtime.Layout{runtime.LayoutCHW, runtime.LayoutHWC} {
		pre := &runtime.Preprocess{Version: 1, Layout: layout, Scale: 0.25, Mean: []float64{1, -1}, Std: []float64{2, 4}}
		m, err := base.WithDeployment(pre, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := eval.Predict(m, d, runtime.Options{}, 1)
		if err != nil {
			t.Fatal(err)
		}
		p, err := base.NewPredictor(runtime.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range stored {
			in := make([]float32, 4)
			for j, v := range x {
				c := j / 2 // channel-major: values 0, 1 are channel 0
				in[j] = float32((float64(v)*0.25 - pre.Mean[c]) / pre.Std[c])
			}
			var want runtime.Prediction
			if err := p.Predict(in, &want); err != nil {
				t.Fatal(err)
			}
			for k := range 3 {
				if g := got.Probs[i*3+k]; math.Abs(float64(g-want.Probs[k])) > 1e-6 {
					t.Errorf("%s: input %d class %d: %v, want %v", layout, i, k, g, want.Probs[k])
				}
			}
			if got.Samples[i] != 1 || !got.Act[i] {
				t.Errorf("input %d: samples %d, act %v", i, got.Samples[i], got.Act[i])
			}
		}
	}
}
