package runtime_test

import (
	"math"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// FuzzParseDeploy: the preprocess and policy sections of a model file never panic, and what they
// accept transforms every finite input into finite network inputs (for finite statistics) and
// decides without panicking.
func FuzzParseDeploy(f *testing.F) {
	for _, s := range []string{
		`{"version":1,"scale":0.00392156862745098,"class_names":["a","b","c"]}`,
		`{"version":1,"layout":"hwc","mean":[0.5,0.4],"std":[0.2,0.3]}`,
		`{"version":1,"mean":[1e15],"std":[1e-300]}`,
		`{"version":1,"min_confidence":0.7,"max_mutual_info":0.05,"samples":32}`,
		`{"version":1,"max_epistemic_std":0.1,"calibration":{"target":"risk","value":0.05,"on":"both","seed":1,"fit":{"n":1,"risk":0,"coverage":1},"holdout":{"n":1,"risk":0,"coverage":1}}}`,
		`{"version":2}`,
	} {
		f.Add([]byte(s), true)
		f.Add([]byte(s), false)
	}
	shape := []int{2, 2, 2}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: shape,
		Layers: []runtime.LayerSpec{{Name: "f", Op: runtime.OpFlatten}, {Name: "fc", Op: runtime.OpLinear, In: 8, Out: 3}}}
	w := make([]float32, 24)
	for i := range w {
		w[i] = float32(i%5) - 2
	}
	base, err := runtime.New(spec, runtime.Tensors{"fc.weight": {Shape: []int{3, 8}, Data: w}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte, classification bool) {
		task := runtime.Regression
		if classification {
			task = runtime.Classification
		}
		if p, err := runtime.ParsePreprocess(data, shape, task, 3); err == nil {
			m, err := base.WithDeployment(p, nil)
			if task == runtime.Classification && err != nil {
				t.Fatalf("a preprocess ParsePreprocess accepted is refused by the model: %v", err)
			}
			if err == nil {
				raw := []float32{0, 1, -1, 255, 0.5, 3, -7, 100}
				x := make([]float32, 8)
				if err := m.Normalize(x, raw); err != nil {
					t.Fatal(err)
				}
				for i, v := range x {
					// |raw·scale − mean| / std ≤ (255·1e15 + 1e15)/std: finite in float64, but
					// float32 may overflow for tiny std; NaN never.
					if math.IsNaN(float64(v)) {
						t.Fatalf("input %d normalised to NaN", i)
					}
				}
			}
		}
		if p, err := runtime.ParsePolicy(data, task); err == nil {
			pr := runtime.Prediction{Confidence: 0.5, MutualInfo: 0.1, EpistemicVar: []float32{0.01}}
			_ = p.Decide(&pr)
			if _, err := base.WithDeployment(nil, p); task == runtime.Classification && err != nil {
				t.Fatalf("a policy ParsePolicy accepted is refused by the model: %v", err)
			}
		}
	})
}
