package serve

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestServeKeepF16: a model served with Load.KeepF16 (a deterministic classifier stored in fp16)
// answers with the in-process predictions of the default load, bit for bit.
func TestServeKeepF16(t *testing.T) {
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{3},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 3, Out: 4, Bias: true}}}
	w := format.NewWriter()
	modeltest.AddSpec(t, w, spec)
	weights := []float32{0.5, -0.25, 1, 0.75, 0.1, -0.6, 2, -1.5, 0.125, -0.3, 0.7, 0.05}
	for name, v := range map[string][]float32{"fc.weight": weights, "fc.bias": {0.1, -0.2, 0.3, 0}} {
		shape := []int{4, 3}
		if len(v) == 4 {
			shape = []int{4}
		}
		if _, err := w.AddTensor(name, shape, v, format.AddOptions{F16: true}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "det16.ebnn")
	modeltest.Save(t, w, path)
	opts := runtime.Options{}
	_, ts := newTestServer(t, Config{Concurrency: 1}, ModelConfig{Name: "det", Path: path, Options: opts,
		Load: runtime.LoadOptions{KeepF16: true}})
	_, p := serverPredictor(t, path, opts)
	xs := []float32{1, 2, 3, -0.5, 0.25, 4}
	want := make([]runtime.Prediction, 2)
	if err := p.PredictBatch(xs, want); err != nil {
		t.Fatal(err)
	}
	code, body := post(t, ts.Client(), ts.URL+"/v1/models/det:predict", "application/json", instancesJSON(xs, 3))
	if code != http.StatusOK {
		t.Fatalf("status %d: %s", code, body)
	}
	for i, got := range decodePredictions(t, body) {
		checkSame(t, i, got, &want[i])
	}
}
