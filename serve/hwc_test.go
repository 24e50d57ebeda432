package serve

import (
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestNonFiniteNamesRawValueHWC: with an HWC layout the values are reordered before the
// network reads them; a value that overflows in preprocessing is named by its index in the
// client's own (HWC) order, with its raw value.
func TestNonFiniteNamesRawValueHWC(t *testing.T) {
	// Input [3, 2, 2], channel 2 scaled by 1/0.001: raw value 2 (pixel 0, channel 2) overflows.
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{3, 2, 2},
		Layers: []runtime.LayerSpec{{Name: "flat", Op: runtime.OpFlatten}, {Name: "fc", Op: runtime.OpLinear, In: 12, Out: 2, Bias: true}}}
	w := format.NewWriter()
	modeltest.AddSpec(t, w, spec)
	if _, err := w.AddTensor("fc.weight", []int{2, 12}, make([]float32, 24), format.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddTensor("fc.bias", []int{2}, []float32{0, 0}, format.AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob(runtime.PreprocessBlob, []byte(`{"version":1,"layout":"hwc","std":[1,1,0.001]}`), false); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hwc.ebnn")
	modeltest.Save(t, w, path)
	_, ts := newTestServer(t, Config{}, ModelConfig{Name: "hwc", Path: path})
	x := []float32{1, 2, 3e38, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	code, body := post(t, ts.Client(), ts.URL+"/v1/models/hwc:predict", "application/octet-stream", rawBody(x))
	if code != http.StatusBadRequest || !strings.Contains(string(body), "instance 0, value 2 is infinite") || !strings.Contains(string(body), "(raw value 3e+38)") {
		t.Errorf("%d %s: want 400 naming value 2 and its raw value 3e+38", code, body)
	}
}
