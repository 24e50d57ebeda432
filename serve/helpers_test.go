package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// demoModel is the demo's model, a mean-field Gaussian MLP 784-48-48-10 (classification, with
// preprocessing and a policy).
const demoModel = "../cmd/edgebnn/demo/model.ebnn"

// fashionClasses are the demo model's class names (Fashion-MNIST's, as edgebnn train records them).
var fashionClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

// dialPartial connects to addr (host:port), writes text — a request the test leaves unfinished, or
// finishes later on the returned connection — and closes the connection when the test ends.
func dialPartial(t testing.TB, addr, text string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, text); err != nil {
		t.Fatal(err)
	}
	return c
}

// demoInputs returns n pseudo-random inputs of the demo model, values in [0, 1).
func demoInputs(n int, seed uint64) []float32 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]float32, n*784)
	for i := range x {
		x[i] = r.Float32()
	}
	return x
}

// copyFile copies the demo model into dir, so that a test may replace it.
func copyFile(t testing.TB, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

// writeRegModel writes a tiny FFG regression model (3 inputs → Linear → 2 outputs) with a
// preprocess section (scale 0.5, mean 1, std 2) and, if policy, a policy max_epistemic_std.
func writeRegModel(t testing.TB, dir string, policy bool) string {
	t.Helper()
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, InputShape: []int{3}, NoiseVar: 0.01,
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG}}}}
	w := format.NewWriter()
	add := func(name string, shape []int, data []float32) {
		if _, err := w.AddTensor(name, shape, data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.AddSpec(t, w, spec)
	add("fc.weight_mean", []int{2, 3}, []float32{0.5, -0.25, 1, 0.75, 0.1, -0.6})
	add("fc._weight_sd", []int{2, 3}, []float32{-3, -2.5, -3, -2, -3, -2.2})
	add("fc.bias_mean", []int{2}, []float32{0.1, -0.2})
	add("fc._bias_sd", []int{2}, []float32{-3, -3})
	if err := w.AddBlob(runtime.PreprocessBlob, []byte(`{"version":1,"scale":0.5,"mean":[1],"std":[2]}`), false); err != nil {
		t.Fatal(err)
	}
	if policy {
		if err := w.AddBlob(runtime.PolicyBlob, []byte(`{"version":1,"max_epistemic_std":0.05}`), false); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "reg.ebnn")
	modeltest.Save(t, w, path)
	return path
}

// serverPredictor loads the model at path and returns it with a predictor like the one a
// server makes for it from opts (MaxBatch DefaultMaxBatch); the model is closed when the test
// ends.
func serverPredictor(t testing.TB, path string, opts runtime.Options) (*runtime.Model, *runtime.Predictor) {
	t.Helper()
	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	opts.MaxBatch = DefaultMaxBatch
	p, err := m.NewPredictor(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m, p
}

// newTestServer makes a Server for the given models and an httptest server in front of it.
func newTestServer(t testing.TB, cfg Config, models ...ModelConfig) (*Server, *httptest.Server) {
	t.Helper()
	s, err := New(cfg, models...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts
}

// instancesJSON encodes xs (n inputs of size values) as a predict request.
func instancesJSON(xs []float32, size int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"instances":[`)
	for i := 0; i*size < len(xs); i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('[')
		for j, v := range xs[i*size : (i+1)*size] {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.FormatFloat(float64(v), 'g', -1, 32))
		}
		b.WriteByte(']')
	}
	b.WriteString("]}")
	return b.Bytes()
}

func rawBody(xs []float32) []byte {
	b := make([]byte, 4*len(xs))
	for i, v := range xs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// prediction is a decoded prediction of a response.
type prediction struct {
	Probs           []float32 `json:"probs"`
	Class           int       `json:"class"`
	ClassName       string    `json:"class_name"`
	Confidence      float32   `json:"confidence"`
	Entropy         float64   `json:"entropy"`
	ExpectedEntropy float64   `json:"expected_entropy"`
	MutualInfo      float64   `json:"mutual_info"`
	Mean            []float32 `json:"mean"`
	Var             []float32 `json:"var"`
	EpistemicVar    []float32 `json:"epistemic_var"`
	Decision        string    `json:"decision"`
	Reason          string    `json:"reason"`
	Samples         int       `json:"samples"`
}

// post sends a predict request and returns the status and body.
func post(t testing.TB, c *http.Client, url, ctype string, body []byte) (int, []byte) {
	t.Helper()
	resp, err := c.Post(url, ctype, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decodePredictions(t testing.TB, body []byte) []prediction {
	t.Helper()
	var r struct {
		Predictions []prediction `json:"predictions"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("decoding %.300s: %v", body, err)
	}
	return r.Predictions
}

// checkSame compares a served prediction with an in-process one, bit for bit (float32 values
// are printed with the shortest representation that reads back exactly).
func checkSame(t testing.TB, i int, got prediction, want *runtime.Prediction) {
	t.Helper()
	eq32 := func(name string, a, b []float32) {
		if len(a) != len(b) {
			t.Fatalf("instance %d: %s has %d values, want %d", i, name, len(a), len(b))
		}
		for j := range a {
			if a[j] != b[j] {
				t.Fatalf("instance %d: %s[%d] = %v, want %v", i, name, j, a[j], b[j])
			}
		}
	}
	eq32("probs", got.Probs, want.Probs)
	eq32("mean", got.Mean, want.Mean)
	eq32("var", got.Var, want.Var)
	eq32("epistemic_var", got.EpistemicVar, want.EpistemicVar)
	if got.Class != want.Class || got.Confidence != want.Confidence || got.Entropy != want.Entropy ||
		got.ExpectedEntropy != want.ExpectedEntropy || got.MutualInfo != want.MutualInfo || got.Samples != want.Samples ||
		got.Decision != want.Decision.String() || got.Reason != want.Decision.Reason.String() {
		t.Fatalf("instance %d: served %+v, in-process %+v", i, got, *want)
	}
}

func errorOf(t testing.TB, body []byte) string {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil || e.Error == "" {
		t.Fatalf("error body %.300q is not {\"error\": …}: %v", body, err)
	}
	return e.Error
}

func metricsText(t testing.TB, url string) string {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// metricValue returns the value of the sample line that starts with prefix (name and labels).
func metricValue(t testing.TB, text, prefix string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		if rest, ok := strings.CutPrefix(line, prefix+" "); ok {
			v, err := strconv.ParseFloat(rest, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return v
		}
	}
	return 0
}

// getModelInfo is GET /v1/models/NAME's description, decoded.
func getModelInfo(t *testing.T, ts *httptest.Server, name string) ModelInfo {
	t.Helper()
	resp, err := ts.Client().Get(ts.URL + "/v1/models/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var info ModelInfo
	if err := json.NewDecoder(resp.Body).Decode(&info); err != nil {
		t.Fatal(err)
	}
	return info
}
