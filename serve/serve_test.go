package serve

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

func TestServePredictMatchesPredictor(t *testing.T) {
	opts := runtime.Options{Samples: 32, Seed: 7, Strategy: runtime.Local}
	_, ts := newTestServer(t, Config{Concurrency: 2}, ModelConfig{Name: "mnist", Path: demoModel, Options: opts})
	m, p := serverPredictor(t, demoModel, opts)
	const n = 3
	xs := demoInputs(n, 1)
	// The server applies the model's preprocessing to the raw values it receives; the
	// in-process predictor is given the network's inputs.
	norm := make([]float32, len(xs))
	if err := m.Normalize(norm, xs); err != nil {
		t.Fatal(err)
	}
	want := make([]runtime.Prediction, n)
	if err := p.PredictBatch(norm, want); err != nil {
		t.Fatal(err)
	}
	url := ts.URL + "/v1/models/mnist:predict"
	for _, tc := range []struct {
		name, ctype string
		body        []byte
	}{
		{"json", "application/json", instancesJSON(xs, 784)},
		{"json without content type", "", instancesJSON(xs, 784)},
		{"json as curl -d sends it", "application/x-www-form-urlencoded", instancesJSON(xs, 784)},
		{"raw", "application/octet-stream", rawBody(xs)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, ts.Client(), url, tc.ctype, tc.body)
			if code != http.StatusOK {
				t.Fatalf("status %d: %s", code, body)
			}
			got := decodePredictions(t, body)
			if len(got) != n {
				t.Fatalf("%d predictions, want %d", len(got), n)
			}
			for i := range got {
				checkSame(t, i, got[i], &want[i])
				// The demo model carries a policy (edgebnn calibrate): the server's decision is the
				// in-process one.
				if got[i].Decision != want[i].Decision.String() || got[i].Reason != want[i].Decision.Reason.String() ||
					got[i].Samples != 32 || got[i].ClassName != fashionClasses[want[i].Class] {
					t.Fatalf("instance %d: %+v", i, got[i])
				}
			}
		})
	}
	// Nested arrays are flattened row-major: [28][28] is the same input as [784].
	var nested bytes.Buffer
	nested.WriteString(`{"instances":[[`)
	for r := range 28 {
		if r > 0 {
			nested.WriteByte(',')
		}
		row, _ := json.Marshal(xs[r*28 : (r+1)*28])
		nested.Write(row)
	}
	nested.WriteString("]]}")
	code, body := post(t, ts.Client(), url, "application/json", nested.Bytes())
	if code != http.StatusOK {
		t.Fatalf("nested: status %d: %s", code, body)
	}
	// A batch of one input: the in-process prediction of that batch (a batch's arithmetic,
	// not its samples, depends on its size).
	var one runtime.Prediction
	if err := p.Predict(norm[:784], &one); err != nil {
		t.Fatal(err)
	}
	checkSame(t, 0, decodePredictions(t, body)[0], &one)
}

func TestServeRegressionPreprocessAdaptive(t *testing.T) {
	dir := t.TempDir()
	path := writeRegModel(t, dir, true)
	opts := runtime.Options{Samples: 64, Seed: 3, Strategy: runtime.Weight, Adaptive: true}
	_, ts := newTestServer(t, Config{Concurrency: 1}, ModelConfig{Name: "reg", Path: path, Options: opts})
	m, p := serverPredictor(t, path, opts)
	raw := []float32{1, 2, 3, -4, 0.5, 8, 100, -100, 0}
	norm := make([]float32, len(raw))
	if err := m.Normalize(norm, raw); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query string
		model []float32 // what the network gets
	}{{"", norm}, {"?normalized=false", norm}, {"?normalized=true", raw}} {
		want := make([]runtime.Prediction, 3)
		if err := p.PredictBatch(tc.model, want); err != nil {
			t.Fatal(err)
		}
		code, body := post(t, ts.Client(), ts.URL+"/v1/models/reg:predict"+tc.query, "application/json", instancesJSON(raw, 3))
		if code != http.StatusOK {
			t.Fatalf("%q: status %d: %s", tc.query, code, body)
		}
		got := decodePredictions(t, body)
		if len(got) != len(want) {
			t.Fatalf("%q: %d predictions, want %d", tc.query, len(got), len(want))
		}
		for i := range got {
			checkSame(t, i, got[i], &want[i])
			if got[i].Samples < 8 || got[i].Samples > 64 || len(got[i].Mean) != 2 || got[i].Probs != nil {
				t.Fatalf("%q: instance %d: %+v", tc.query, i, got[i])
			}
		}
	}
	// The model list describes the preprocessing and the policy.
	info := getModelInfo(t, ts, "reg")
	if info.Name != "reg" || info.Task != runtime.Regression || info.InputSize != 3 || info.Outputs != 2 || !info.Adaptive ||
		info.Samples != 64 || info.Preprocessing == nil || info.Preprocessing.Scale != 0.5 || info.Policy == nil || info.Strategy != "weight" {
		t.Fatalf("info %+v", info)
	}
}

func TestServeErrors(t *testing.T) {
	_, ts := newTestServer(t, Config{Concurrency: 1, MaxBodyBytes: 64 << 10, MaxInstances: 4},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 4}})
	one := instancesJSON(demoInputs(1, 2), 784)
	bad := demoInputs(2, 3)
	bad[784+17] = float32(math.NaN())
	inf := demoInputs(1, 3)
	inf[5] = float32(math.Inf(-1))
	short := instancesJSON(demoInputs(1, 2)[:783], 783)
	pred := "/v1/models/mnist:predict"
	for _, tc := range []struct {
		name, method, path, ctype string
		body                      []byte
		code                      int
		msg                       string
	}{
		{"malformed JSON", "POST", pred, "application/json", []byte(`{"instances": [[1, 2]`), 400, "malformed request"},
		{"not JSON", "POST", pred, "application/json", []byte(`hello`), 400, "malformed request"},
		{"double comma", "POST", pred, "application/json", []byte(`{"instances": [[1,,2]]}`), 400, "want a number, got ','"},
		{"missing comma", "POST", pred, "application/json", []byte(`{"instances": [[1 2]]}`), 400, "want ',' or ']'"},
		{"leading zero", "POST", pred, "application/json", []byte(`{"instances": [[01]]}`), 400, `"01" is not a JSON number`},
		{"plus sign", "POST", pred, "application/json", []byte(`{"instances": [[+1]]}`), 400, "want a number"},
		{"bare dot", "POST", pred, "application/json", []byte(`{"instances": [[1.]]}`), 400, `"1.]" is not a JSON number`},
		{"bare exponent", "POST", pred, "application/json", []byte(`{"instances": [[1e]]}`), 400, `"1e]" is not a JSON number`},
		{"instances twice", "POST", pred, "application/json", []byte(`{"instances": [[1]], "instances": [[1]]}`), 400, `"instances" given twice`},
		{"escaped key", "POST", pred, "application/json", []byte(`{"\u0069nstances": [[1]]}`), 400, "unknown field"},
		{"missing colon", "POST", pred, "application/json", []byte(`{"instances" [[1]]}`), 400, "want ':' after a key"},
		{"trailing comma", "POST", pred, "application/json", []byte(`{"instances": [[1],]}`), 400, "want an array of 784 numbers"},

		{"unknown field", "POST", pred, "application/json", []byte(`{"instances": [[1]], "signature_name": "x"}`), 400, `unknown field "signature_name"`},
		{"trailing data", "POST", pred, "application/json", append(append([]byte{}, one...), `{}`...), 400, "data after the JSON object"},
		{"no instances", "POST", pred, "application/json", []byte(`{}`), 400, `no "instances"`},
		{"empty instances", "POST", pred, "application/json", []byte(`{"instances": []}`), 400, "empty"},
		{"instances not an array", "POST", pred, "application/json", []byte(`{"instances": {"a": 1}}`), 400, "must be an array"},
		{"wrong size", "POST", pred, "application/json", short, 400, "instance 0 has 783 values; the model takes 784"},
		{"string value", "POST", pred, "application/json", []byte(`{"instances": [[1, "2"]]}`), 400, "instance 0, value 1: want a number, got a string"},
		{"ragged", "POST", pred, "application/json", []byte(`{"instances": [[[1, 2], [3]]]}`), 400, "ragged"},
		{"mixed", "POST", pred, "application/json", []byte(`{"instances": [[1, [2]]]}`), 400, "mixes numbers and arrays"},
		{"scalar instance", "POST", pred, "application/json", []byte(`{"instances": [1]}`), 400, "instance 0: want an array of 784 numbers, got a number"},
		{"float32 overflow", "POST", pred, "application/json", []byte(`{"instances": [[1e39]]}`), 400, "outside float32's range"},
		{"deep nesting", "POST", pred, "application/json", []byte(`{"instances": [[[[[[[[[[1]]]]]]]]]]}`), 400, "nested deeper"},
		{"too many instances", "POST", pred, "application/json", instancesJSON(demoInputs(5, 1), 784), 400, "more than 4 instances"},
		{"raw NaN", "POST", pred, "application/octet-stream", rawBody(bad), 400, "instance 1, value 17 is NaN"},
		{"raw infinity", "POST", pred, "application/octet-stream", rawBody(inf), 400, "instance 0, value 5 is infinite"},
		{"raw partial input", "POST", pred, "application/octet-stream", rawBody(demoInputs(1, 1))[:3000], 400, "not a whole number of inputs"},
		{"raw empty", "POST", pred, "application/octet-stream", nil, 400, "empty body"},
		{"raw too many", "POST", pred, "application/octet-stream", rawBody(demoInputs(5, 1)), 400, "5 instances"},
		{"oversized body", "POST", pred, "application/octet-stream", make([]byte, 65<<10), 413, "larger than 65536 bytes"},
		{"oversized JSON", "POST", pred, "application/json", bytes.Repeat([]byte(" "), 65<<10), 413, "larger than"},
		{"bad media type", "POST", pred, "text/csv", []byte("1,2"), 415, "text/csv"},
		{"bad query", "POST", pred + "?signature=x", "application/json", one, 400, "query parameter"},
		{"bad normalized", "POST", pred + "?normalized=maybe", "application/json", one, 400, "not true or false"},
		{"query with a semicolon", "POST", pred + "?normalized=true;x=1", "application/json", one, 400, "invalid semicolon separator"},
		{"query with a bad escape", "POST", pred + "?normalized=%74rue%", "application/json", one, 400, "invalid URL escape"},
		{"query with a bad pair", "POST", pred + "?normalized=true&bogus%=1", "application/json", one, 400, "invalid URL escape"},
		{"unknown model", "POST", "/v1/models/nope:predict", "application/json", one, 404, `model "nope" is not served`},
		{"unknown model info", "GET", "/v1/models/nope", "", nil, 404, `model "nope" is not served`},
		{"unknown verb", "POST", "/v1/models/mnist:classify", "application/json", one, 404, "unknown method"},
		{"GET predict", "GET", pred, "", nil, 405, "use POST"},
		{"POST model list", "POST", "/v1/models", "application/json", one, 405, "use GET"},
		{"DELETE model", "DELETE", "/v1/models/mnist", "", nil, 405, "use GET"},
		{"POST healthz", "POST", "/healthz", "", nil, 405, "use GET"},
		{"unknown path", "GET", "/v2/models", "", nil, 404, "no endpoint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, ts.URL+tc.path, bytes.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := ts.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.code {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.code, body)
			}
			msg := errorOf(t, body)
			if !strings.Contains(msg, tc.msg) {
				t.Fatalf("error %q does not contain %q", msg, tc.msg)
			}
			if tc.code == 405 && resp.Header.Get("Allow") == "" {
				t.Fatal("405 without Allow")
			}
		})
	}
	// After all that, the server still predicts.
	if code, body := post(t, ts.Client(), ts.URL+pred, "application/json", one); code != 200 {
		t.Fatalf("status %d: %s", code, body)
	}
}

func TestServeNonFiniteOutput(t *testing.T) {
	_, ts := newTestServer(t, Config{Concurrency: 1}, ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 4}})
	xs := demoInputs(2, 5)
	for i := 784; i < 2*784; i++ {
		xs[i] = 3e38
	}
	code, body := post(t, ts.Client(), ts.URL+"/v1/models/mnist:predict?normalized=true", "application/octet-stream", rawBody(xs))
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422: %s", code, body)
	}
	if msg := errorOf(t, body); !strings.Contains(msg, `model "mnist": instance 1: the predictions are not finite`) {
		t.Fatalf("error %q", msg)
	}
	m := metricsText(t, ts.URL)
	if v := metricValue(t, m, `edgebnn_serve_errors_total{model="mnist",kind="non_finite_output"}`); v != 1 {
		t.Fatalf("non_finite_output errors = %v\n%s", v, m)
	}
}

func TestServeHealthReadyMetricsList(t *testing.T) {
	dir := t.TempDir()
	s, ts := newTestServer(t, Config{Concurrency: 1}, ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 8}},
		ModelConfig{Name: "reg", Path: writeRegModel(t, dir, false)})
	for _, p := range []string{"/healthz", "/readyz"} {
		resp, err := ts.Client().Get(ts.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d", p, resp.StatusCode)
		}
	}
	for range 3 {
		if code, body := post(t, ts.Client(), ts.URL+"/v1/models/mnist:predict", "application/json", instancesJSON(demoInputs(2, 1), 784)); code != 200 {
			t.Fatalf("%d %s", code, body)
		}
	}
	post(t, ts.Client(), ts.URL+"/v1/models/nope:predict", "application/json", []byte("{}"))
	resp, err := ts.Client().Get(ts.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Models []ModelInfo `json:"models"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil || len(list.Models) != 2 || list.Models[0].Name != "mnist" || list.Models[0].InputSize != 784 ||
		list.Models[0].Outputs != 10 || !list.Models[0].Stochastic || list.Models[0].Samples != 8 || list.Models[1].Name != "reg" {
		t.Fatalf("list %+v %v", list, err)
	}
	m := metricsText(t, ts.URL)
	for line, want := range map[string]float64{
		`edgebnn_serve_requests_total{model="mnist",code="200"}`:                 3,
		`edgebnn_serve_requests_total{model="",code="404"}`:                      1,
		`edgebnn_serve_errors_total{model="",kind="unknown_model"}`:              1,
		`edgebnn_serve_samples_total{model="mnist"}`:                             48,
		`edgebnn_serve_request_duration_seconds_count{model="mnist"}`:            3,
		`edgebnn_serve_request_duration_seconds_bucket{model="mnist",le="+Inf"}`: 3,
		`edgebnn_serve_in_flight_requests`:                                       0,
		`edgebnn_serve_ready`:                                                    1,
	} {
		if got := metricValue(t, m, line); got != want {
			t.Errorf("%s = %v, want %v", line, got, want)
		}
	}
	if act, abstain := metricValue(t, m, `edgebnn_serve_predictions_total{model="mnist",decision="act"}`),
		metricValue(t, m, `edgebnn_serve_predictions_total{model="mnist",decision="abstain"}`); act+abstain != 6 {
		t.Errorf("predictions: %v act + %v abstain, want 6 in all", act, abstain)
	}
	for _, name := range []string{"edgebnn_serve_requests_total", "edgebnn_serve_request_duration_seconds", "edgebnn_serve_reloads_total",
		"edgebnn_serve_errors_total", "edgebnn_serve_in_flight_requests", "edgebnn_serve_samples_total"} {
		if !strings.Contains(m, "# TYPE "+name+" ") {
			t.Errorf("no TYPE line for %s", name)
		}
	}
	// Shutting down: readyz answers 503.
	s.draining.Store(true)
	resp, err = ts.Client().Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 {
		t.Fatalf("readyz while draining: %d", resp.StatusCode)
	}
}

func TestServeConfigValidate(t *testing.T) {
	for _, c := range []Config{
		{Addr: "nohost"}, {Addr: "127.0.0.1:99999"}, {MaxBodyBytes: -1}, {MaxInstances: 1 << 20}, {Concurrency: -2},
		{QueueTimeout: -time.Second}, {MaxHeaderBytes: 10}, {DrainTimeout: time.Hour}, {MaxPendingBytes: 1 << 10},
	} {
		if _, err := New(c, ModelConfig{Name: "m", Path: demoModel}); err == nil {
			t.Errorf("New accepted %+v", c)
		}
	}
	for _, ms := range [][]ModelConfig{nil, {{Name: "a:b", Path: demoModel}}, {{Name: ".x", Path: demoModel}},
		{{Name: "m", Path: demoModel}, {Name: "m", Path: demoModel}}, {{Name: "m"}},
		{{Name: "m", Path: demoModel, Options: runtime.Options{KeepSamples: true}}},
		{{Name: "m", Path: "/nonexistent.ebnn"}}, {{Name: "m", Path: withoutPolicy(t, demoModel), Options: runtime.Options{Adaptive: true}}}} {
		if _, err := New(Config{}, ms...); err == nil {
			t.Errorf("New accepted %+v", ms)
		}
	}
	d := Config{}.WithDefaults()
	if d.Addr != "127.0.0.1:8501" || d.Concurrency < 1 || d.ReadHeaderTimeout == 0 || d.MaxBodyBytes != DefaultMaxBodyBytes ||
		d.MaxPendingBytes != DefaultMaxPendingBytes {
		t.Fatalf("defaults %+v", d)
	}
}

// startServer runs s.Serve on a loopback listener; stop cancels it and returns Serve's error.
// newStartedServer makes a Server for the models, closed when the test ends, and serves it
// (startServer).
func newStartedServer(t testing.TB, cfg Config, models ...ModelConfig) (s *Server, url string, stop func() error) {
	t.Helper()
	s, err := New(cfg, models...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	url, stop = startServer(t, s)
	return s, url, stop
}

func startServer(t testing.TB, s *Server) (url string, stop func() error) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, l) }()
	var once sync.Once
	var serr error
	stop = func() error {
		once.Do(func() {
			cancel()
			serr = <-done
		})
		return serr
	}
	t.Cleanup(func() { stop() })
	return "http://" + l.Addr().String(), stop
}

func TestServeSlowClients(t *testing.T) {
	_, url, _ := newStartedServer(t, Config{Concurrency: 1, ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: 400 * time.Millisecond},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 4}})
	addr := strings.TrimPrefix(url, "http://")
	// A client that never finishes its headers, and one that never finishes its body.
	header := dialPartial(t, addr, "POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\n")
	body := dialPartial(t, addr, "POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 10000\r\n\r\n{\"instances\": [[")
	// Meanwhile the server serves others.
	one := instancesJSON(demoInputs(1, 1), 784)
	for range 3 {
		if code, b := post(t, http.DefaultClient, url+"/v1/models/mnist:predict", "application/json", one); code != 200 {
			t.Fatalf("%d %s", code, b)
		}
	}
	for _, c := range []struct {
		name string
		conn net.Conn
	}{{"slow headers", header}, {"slow body", body}} {
		start := time.Now()
		c.conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c.conn)
		if err != nil {
			t.Fatalf("%s: the server did not close the connection: %v", c.name, err)
		}
		t.Logf("%s: closed after %v (%d bytes of response: %.60q)", c.name, time.Since(start), len(b), b)
		if c.conn == body && !bytes.HasPrefix(b, []byte("HTTP/1.1 408 ")) {
			t.Errorf("slow body: response %.60q, want 408 Request Timeout", b)
		}
	}
	if code, b := post(t, http.DefaultClient, url+"/v1/models/mnist:predict", "application/json", one); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
}

// TestServeAnnouncedBodyNotAllocated: a request whose headers announce a body of the server's
// whole limit, and which then sends almost nothing, must not make the server allocate that much:
// 32 such connections allocated 32 × 4 MiB before the buffer grew only as bytes arrived.
func TestServeAnnouncedBodyNotAllocated(t *testing.T) {
	s, url, _ := newStartedServer(t, Config{Concurrency: 1, ReadTimeout: 5 * time.Second},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 4}})
	addr := strings.TrimPrefix(url, "http://")
	const conns = 32
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for range conns {
		dialPartial(t, addr, fmt.Sprintf("POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n{\"instances\": [[", DefaultMaxBodyBytes))
	}
	// Wait until the server is reading every body (its in-flight gauge counts them).
	deadline := time.Now().Add(10 * time.Second)
	for s.mt.inFlight.Load() < conns && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := s.mt.inFlight.Load(); n < conns {
		t.Fatalf("%d of %d requests reached the body", n, conns)
	}
	time.Sleep(200 * time.Millisecond) // from the gauge to readBody's allocation
	goruntime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d connections announcing %d bytes each: %d bytes allocated", conns, DefaultMaxBodyBytes, alloc)
	if limit := uint64(conns * DefaultMaxBodyBytes / 4); alloc > limit {
		t.Fatalf("%d bytes allocated for %d announced but unsent bodies (more than %d): the server sizes buffers from Content-Length", alloc, conns, limit)
	}
}

// hold takes every Predictor of a model out of its pool (as busy requests would) and returns a
// function putting them back.
func hold(s *Server, name string) func() {
	l := s.get(name)
	var ps []*runtime.Predictor
	for range cap(l.pool) {
		ps = append(ps, <-l.pool)
	}
	return func() {
		for _, p := range ps {
			l.pool <- p
		}
		l.release()
	}
}

func TestServeQueueTimeoutAndDisconnect(t *testing.T) {
	s, ts := newTestServer(t, Config{Concurrency: 2, QueueTimeout: 150 * time.Millisecond},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 4}})
	one := instancesJSON(demoInputs(1, 1), 784)
	put := hold(s, "mnist")
	start := time.Now()
	resp, err := ts.Client().Post(ts.URL+"/v1/models/mnist:predict", "application/json", bytes.NewReader(one))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" || time.Since(start) < 150*time.Millisecond {
		t.Fatalf("pool exhausted: status %d, Retry-After %q after %v: %s", resp.StatusCode, resp.Header.Get("Retry-After"), time.Since(start), b)
	}
	if msg := errorOf(t, b); !strings.Contains(msg, "all 2 predictors stayed busy") {
		t.Fatalf("error %q", msg)
	}
	// A client that gives up while queued leaves nothing behind.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/models/mnist:predict", bytes.NewReader(one))
	if _, err := ts.Client().Do(req); err == nil {
		t.Fatal("a cancelled request succeeded")
	}
	cancel()
	// A client that disconnects in the middle of its body.
	dialPartial(t, strings.TrimPrefix(ts.URL, "http://"), "POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n{\"instances\": [[1, 2").Close()
	// The server notices both departures by itself, with every predictor still busy, and counts
	// both as the client's (499, client_canceled; not a bad body).
	errs := func(kind string) float64 {
		return metricValue(t, metricsText(t, ts.URL), `edgebnn_serve_errors_total{model="mnist",kind="`+kind+`"}`)
	}
	deadline := time.Now().Add(5 * time.Second)
	for (s.mt.inFlight.Load() != 0 || errs("client_canceled") != 2) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	put()
	m := metricsText(t, ts.URL)
	if v := metricValue(t, m, "edgebnn_serve_in_flight_requests"); v != 0 {
		t.Fatalf("in flight %v", v)
	}
	if v := metricValue(t, m, `edgebnn_serve_errors_total{model="mnist",kind="queue_timeout"}`); v != 1 {
		t.Fatalf("queue timeouts %v\n%s", v, m)
	}
	if v := metricValue(t, m, `edgebnn_serve_errors_total{model="mnist",kind="client_canceled"}`); v != 2 {
		t.Fatalf("client_canceled %v\n%s", v, m)
	}
	if v := metricValue(t, m, `edgebnn_serve_requests_total{model="mnist",code="499"}`); v != 2 {
		t.Fatalf("499s %v\n%s", v, m)
	}
	if strings.Contains(m, `kind="read_body"`) {
		t.Fatalf("a departure counted as a bad body:\n%s", m)
	}
	if code, b := post(t, ts.Client(), ts.URL+"/v1/models/mnist:predict", "application/json", one); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
}

// hammer runs clients that post req until stop is closed and counts the outcomes.
type hammer struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	statuses   map[int]int
	netErrs    []error
	lat        []time.Duration
	wg         sync.WaitGroup
}

func (h *hammer) run(clients int, url string, body []byte, c *http.Client, stop <-chan struct{}) {
	h.statuses = map[int]int{}
	for range clients {
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			var lat []time.Duration
			defer func() {
				h.mu.Lock()
				h.lat = append(h.lat, lat...)
				h.mu.Unlock()
			}()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				resp, err := c.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					h.failed.Add(1)
					h.mu.Lock()
					h.netErrs = append(h.netErrs, err)
					h.mu.Unlock()
					continue
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == 200 && bytes.HasPrefix(b, []byte(`{"predictions":[{`)) {
					h.ok.Add(1)
					lat = append(lat, time.Since(start))
					continue
				}
				h.failed.Add(1)
				h.mu.Lock()
				h.statuses[resp.StatusCode]++
				if err != nil {
					h.netErrs = append(h.netErrs, err)
				}
				h.mu.Unlock()
			}
		}()
	}
}

// TestServeModelOverwrittenInPlace: the served model file copied over in place — truncated
// first, as cp and scp do — must not touch the model serving (mapped, its pages would fault and
// SIGBUS would end the test binary); SIGHUP's reload then refuses the truncated file and keeps
// the old model.
func TestServeModelOverwrittenInPlace(t *testing.T) {
	// A deterministic 4096 → 2 layer stored as float32: mapped, its weights would be read from
	// the file's pages at every prediction.
	const in = 4096
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, InputShape: []int{in}, NoiseVar: 0.01,
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: in, Out: 2, Bias: true}}}
	w := format.NewWriter()
	modeltest.AddSpec(t, w, spec)
	wts := make([]float32, 2*in)
	for i := range wts {
		wts[i] = float32(i%7) / 100
	}
	for _, tn := range []struct {
		name  string
		shape []int
		data  []float32
	}{{"fc.weight", []int{2, in}, wts}, {"fc.bias", []int{2}, []float32{0.5, -0.5}}} {
		if _, err := w.AddTensor(tn.name, tn.shape, tn.data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "det.ebnn")
	modeltest.Save(t, w, path)
	s, ts := newTestServer(t, Config{Concurrency: 1}, ModelConfig{Name: "m", Path: path, Options: runtime.Options{Mean: true}})
	body := instancesJSON(demoInputs(6, 3)[:in], in)
	code, before := post(t, ts.Client(), ts.URL+"/v1/models/m:predict", "application/json", body)
	if code != 200 {
		t.Fatalf("%d %s", code, before)
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	code, after := post(t, ts.Client(), ts.URL+"/v1/models/m:predict", "application/json", body)
	if code != 200 || !bytes.Equal(after, before) {
		t.Fatalf("after truncating the file: %d %.200s, want the same 200 as before", code, after)
	}
	if err := s.Reload(); err == nil {
		t.Fatal("Reload accepted a truncated file")
	}
	if code, again := post(t, ts.Client(), ts.URL+"/v1/models/m:predict", "application/json", body); code != 200 || !bytes.Equal(again, before) {
		t.Fatalf("after the failed reload: %d %.200s", code, again)
	}
}

func TestServeReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.ebnn")
	copyFile(t, demoModel, path)
	s, ts := newTestServer(t, Config{Concurrency: 2}, ModelConfig{Name: "m", Path: path, Options: runtime.Options{Samples: 8}})
	first := s.get("m")
	first.release()
	var h hammer
	stop := make(chan struct{})
	h.run(4, ts.URL+"/v1/models/m:predict", instancesJSON(demoInputs(1, 9), 784), ts.Client(), stop)
	for range 3 {
		time.Sleep(50 * time.Millisecond)
		if err := s.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	// The replaced load is closed once its last request is done.
	select {
	case <-first.closed:
	case <-time.After(5 * time.Second):
		t.Fatal("the first load was never closed")
	}
	good := s.get("m")
	good.release()
	// A broken file (replaced atomically, as a deploy would) keeps the old model serving.
	if err := os.WriteFile(path+".tmp", []byte("EBNN garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	err := s.Reload()
	if err == nil || !strings.Contains(err.Error(), `reload of model "m" failed, the model loaded before keeps serving`) {
		t.Fatalf("reload of a broken file: %v", err)
	}
	if cur := s.get("m"); cur != good {
		t.Fatal("a failed reload replaced the model")
	} else {
		cur.release()
	}
	// A file of a model whose predictors cannot be made (adaptive sampling without a policy)
	// is likewise refused — here by a second server config on a valid file.
	time.Sleep(50 * time.Millisecond)
	close(stop)
	h.wg.Wait()
	if h.failed.Load() != 0 || h.ok.Load() == 0 {
		t.Fatalf("%d ok, %d failed (%v, %v)", h.ok.Load(), h.failed.Load(), h.statuses, h.netErrs)
	}
	m := metricsText(t, ts.URL)
	if ok, bad := metricValue(t, m, `edgebnn_serve_reloads_total{model="m",result="ok"}`),
		metricValue(t, m, `edgebnn_serve_reloads_total{model="m",result="error"}`); ok != 3 || bad != 1 {
		t.Fatalf("reloads ok %v, error %v", ok, bad)
	}
	t.Logf("%d requests during 3 reloads and a failed one", h.ok.Load())
}

func TestServeShutdownUnderLoad(t *testing.T) {
	s, url, stop := newStartedServer(t, Config{Concurrency: 2, DrainTimeout: 10 * time.Second},
		ModelConfig{Name: "m", Path: demoModel, Options: runtime.Options{Samples: 32}})
	// One connection per request: a request is either refused (no connection) or accepted
	// and then answered.
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var h hammer
	halt := make(chan struct{})
	h.run(8, url+"/v1/models/m:predict", instancesJSON(demoInputs(2, 4), 784), c, halt)
	time.Sleep(300 * time.Millisecond)
	ready := make(chan bool, 1)
	go func() {
		for s.Ready() {
			time.Sleep(time.Millisecond)
		}
		ready <- s.Ready()
	}()
	if err := stop(); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if <-ready {
		t.Fatal("ready during the drain")
	}
	close(halt)
	h.wg.Wait()
	served := metricValue(t, func() string {
		var b bytes.Buffer
		s.mt.write(&b, false, nil)
		return b.String()
	}(), `edgebnn_serve_requests_total{model="m",code="200"}`)
	// Every request the server started was answered: the clients saw as many successes as the
	// server served, and no failure other than at the connection level (refused after the
	// listener closed, or reset by the kernel while waiting in the listen backlog, never
	// accepted by the server).
	if int64(served) != h.ok.Load() || len(h.statuses) != 0 {
		t.Fatalf("server answered %v requests, clients got %d (statuses %v)", served, h.ok.Load(), h.statuses)
	}
	refused, reset := 0, 0
	for _, e := range h.netErrs {
		var op *net.OpError
		switch {
		case errors.As(e, &op) && op.Op == "dial":
			refused++
		case errors.Is(e, syscall.ECONNRESET) || errors.Is(e, syscall.EPIPE) || errors.Is(e, io.EOF) ||
			errors.Is(e, net.ErrClosed):
			// Reset in the backlog; the client may see it while still writing its request
			// (EPIPE, or its transport closing the connection under the write: net.ErrClosed,
			// seen under QEMU on arm64). The server never saw the request: served == ok above.
			reset++
		default:
			t.Fatalf("a request failed other than at the connection level: %v", e)
		}
	}
	t.Logf("%d requests answered; %d refused and %d reset in the backlog after the listener closed", h.ok.Load(), refused, reset)
}

// withoutPolicy writes a copy of the model file at path without its policy section and returns
// the copy's path.
func withoutPolicy(t *testing.T, path string) string {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := format.NewWriter()
	for _, s := range f.Sections() {
		if s.Name == runtime.PolicyBlob {
			continue
		}
		if err := w.CopySection(f, s.Name); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "nopolicy.ebnn")
	if err := w.WriteFile(out, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDescribeEffectivePolicy: GET /v1/models/NAME shows the policy the predictions are decided
// with — a model's configured Options.Policy where there is one, not the file's — and the
// decisions follow it.
func TestDescribeEffectivePolicy(t *testing.T) {
	dir := t.TempDir()
	path := writeRegModel(t, dir, true) // the file's policy
	limit := 1e6
	pol := &runtime.Policy{Version: runtime.DeployVersion, MaxEpistemicStd: &limit}
	for _, tc := range []struct {
		name string
		opts runtime.Options
		want *runtime.Policy // nil: the file's
	}{
		{"configured", runtime.Options{Samples: 16, Policy: pol}, pol},
		{"file", runtime.Options{Samples: 16}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := newTestServer(t, Config{}, ModelConfig{Name: "reg", Path: path, Options: tc.opts})
			info := getModelInfo(t, ts, "reg")
			want := tc.want
			if want == nil {
				m, err := runtime.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				defer m.Close()
				want = m.Policy()
			}
			if info.Policy == nil || want.MaxEpistemicStd == nil || info.Policy.MaxEpistemicStd == nil ||
				*info.Policy.MaxEpistemicStd != *want.MaxEpistemicStd {
				t.Fatalf("described policy %+v, want %+v", info.Policy, want)
			}
		})
	}
}
