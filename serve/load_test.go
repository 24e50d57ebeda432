package serve

import (
	"bytes"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// loadDuration is how long the load test runs: EDGEBNN_SERVE_LOAD (a duration, e.g. 30s) if
// set, 0.5 s with -short (CI runs -short under QEMU, about 20 times slower), else 2 s.
func loadDuration(t *testing.T) time.Duration {
	if s := os.Getenv("EDGEBNN_SERVE_LOAD"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 || d > time.Hour {
			t.Fatalf("EDGEBNN_SERVE_LOAD=%q is not a duration up to 1h", s)
		}
		return d
	}
	if testing.Short() {
		return 500 * time.Millisecond
	}
	return 2 * time.Second
}

func percentile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[min(len(d)-1, int(q*float64(len(d))))]
}

// TestServeLoad runs 16 clients against the demo model (K = 32, one input per request) for
// loadDuration and reports throughput and latency next to in-process prediction; no request may
// fail.
func TestServeLoad(t *testing.T) {
	dur := loadDuration(t)
	opts := runtime.Options{Samples: 32, Seed: 1}
	s, err := New(Config{}, ModelConfig{Name: "mnist", Path: demoModel, Options: opts})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url, stop := startServer(t, s)
	body := instancesJSON(demoInputs(1, 11), 784)
	const clients = 16
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	var h hammer
	halt := make(chan struct{})
	start := time.Now()
	h.run(clients, url+"/v1/models/mnist:predict", body, c, halt)
	time.Sleep(dur)
	close(halt)
	h.wg.Wait()
	elapsed := time.Since(start)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if h.failed.Load() != 0 || h.ok.Load() == 0 {
		t.Fatalf("%d ok, %d failed: statuses %v, errors %v", h.ok.Load(), h.failed.Load(), h.statuses, h.netErrs[:min(len(h.netErrs), 5)])
	}
	// In process: one Predictor per core, as the server's pool has.
	m, err := runtime.Load(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	conc := s.Config().Concurrency
	x := demoInputs(1, 11)
	inDur := min(dur, time.Second)
	lats := make(chan []time.Duration, conc)
	inStart := time.Now()
	for range conc {
		go func() {
			p, err := m.NewPredictor(opts)
			if err != nil {
				panic(err)
			}
			var pr runtime.Prediction
			var l []time.Duration
			for time.Since(inStart) < inDur {
				t0 := time.Now()
				if err := p.Predict(x, &pr); err != nil {
					panic(err)
				}
				l = append(l, time.Since(t0))
			}
			lats <- l
		}()
	}
	var in []time.Duration
	for range conc {
		in = append(in, <-lats...)
	}
	inElapsed := time.Since(inStart)
	n := h.ok.Load()
	t.Logf("HTTP, %d clients, %v: %d requests, %.0f req/s, latency p50 %v p99 %v", clients, elapsed.Round(time.Millisecond), n,
		float64(n)/elapsed.Seconds(), percentile(h.lat, 0.5), percentile(h.lat, 0.99))
	t.Logf("in process, %d goroutines, %v: %d predictions, %.0f/s, latency p50 %v p99 %v", conc, inElapsed.Round(time.Millisecond),
		len(in), float64(len(in))/inElapsed.Seconds(), percentile(in, 0.5), percentile(in, 0.99))
}

// BenchmarkServe measures a predict request (one input, K = 32, the demo MLP) against the same
// prediction in process, the two alternated in one loop so that load changes hit both alike:
// through loopback HTTP ("loopback", what a client on the board sees) and through the server's
// handler called directly ("handler": routing, body parsing, the predictor pool, the prediction
// and the response, without the network). "overhead" is the extra time as a fraction of the
// in-process prediction (the target: ≤ 0.2).
func BenchmarkServe(b *testing.B) {
	for _, via := range []string{"loopback", "handler"} {
		for _, tc := range []struct{ name, ctype string }{{"json", "application/json"}, {"raw", "application/octet-stream"}} {
			b.Run(via+"/"+tc.name, func(b *testing.B) { benchServe(b, via, tc.ctype) })
		}
	}
}

func benchServe(b *testing.B, via, ctype string) {
	opts := runtime.Options{Samples: 32, Seed: 1}
	s, err := New(Config{Concurrency: 1}, ModelConfig{Name: "mnist", Path: demoModel, Options: opts})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	x := demoInputs(1, 11)
	body := instancesJSON(x, 784)
	if ctype != "application/json" {
		body = rawBody(x)
	}
	var request func()
	switch via {
	case "loopback":
		url, _ := startServer(b, s)
		url += "/v1/models/mnist:predict"
		c := &http.Client{}
		request = func() {
			resp, err := c.Post(url, ctype, bytes.NewReader(body))
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
	default:
		h := s.Handler()
		request = func() {
			req := httptest.NewRequest(http.MethodPost, "/v1/models/mnist:predict", bytes.NewReader(body))
			req.Header.Set("Content-Type", ctype)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Fatalf("status %d: %s", w.Code, w.Body.String())
			}
		}
	}
	m, err := runtime.Load(demoModel)
	if err != nil {
		b.Fatal(err)
	}
	defer m.Close()
	p, err := m.NewPredictor(opts)
	if err != nil {
		b.Fatal(err)
	}
	var pr runtime.Prediction
	request()
	var tReq, tIn time.Duration
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		request()
		t1 := time.Now()
		if err := p.Predict(x, &pr); err != nil {
			b.Fatal(err)
		}
		tReq += t1.Sub(t0)
		tIn += time.Since(t1)
	}
	b.ReportMetric(float64(tReq.Nanoseconds())/float64(b.N), "request-ns/op")
	b.ReportMetric(float64(tIn.Nanoseconds())/float64(b.N), "inprocess-ns/op")
	b.ReportMetric(float64(tReq)/float64(tIn)-1, "overhead")
}

// TestLoadNotesPolicyDraws: a model served with other draws than its policy was fitted with
// (another K, strategy or seed) is noted in the log at load; the defaults are the policy's and
// say nothing.
func TestLoadNotesPolicyDraws(t *testing.T) {
	for _, tc := range []struct {
		opts runtime.Options
		note string
	}{
		{runtime.Options{Samples: 4, PolicySeed: true}, "predicting with 4 samples, not 256"},
		{runtime.Options{Seed: 3}, "seed 3, not 42"},
		{runtime.Options{PolicySeed: true}, ""},
	} {
		var logged strings.Builder
		s, err := New(Config{Log: log.New(&logged, "", 0)}, ModelConfig{Name: "m", Path: demoModel, Options: tc.opts})
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got := strings.Contains(logged.String(), "note:"); got != (tc.note != "") || !strings.Contains(logged.String(), tc.note) {
			t.Errorf("%+v: log %q, want a note %q", tc.opts, logged.String(), tc.note)
		}
	}
}
