package serve

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
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

// BenchmarkServe measures a predict request (one input, K = 32, the demo MLP) through loopback
// HTTP against the same prediction in process; "overhead" is the HTTP layer's extra time as a
// fraction of the in-process prediction (target ≤ 0.2).
func BenchmarkServe(b *testing.B) {
	for _, tc := range []struct{ name, ctype string }{{"json", "application/json"}, {"raw", "application/octet-stream"}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := runtime.Options{Samples: 32, Seed: 1}
			s, err := New(Config{Concurrency: 1}, ModelConfig{Name: "mnist", Path: demoModel, Options: opts})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			url, _ := startServer(b, s)
			url += "/v1/models/mnist:predict"
			x := demoInputs(1, 11)
			body := instancesJSON(x, 784)
			if tc.ctype != "application/json" {
				body = rawBody(x)
			}
			c := &http.Client{}
			do := func() {
				resp, err := c.Post(url, tc.ctype, bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					b.Fatalf("status %d", resp.StatusCode)
				}
			}
			do()
			b.ResetTimer()
			for range b.N {
				do()
			}
			httpNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
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
			t0 := time.Now()
			for range b.N {
				p.Predict(x, &pr)
			}
			inNs := float64(time.Since(t0).Nanoseconds()) / float64(b.N)
			b.ReportMetric(inNs, "inprocess-ns/op")
			b.ReportMetric(httpNs/inNs-1, "overhead")
		})
	}
}

// BenchmarkServeHandler measures the HTTP layer without the network: the server's handler
// (routing, body parsing, pool, prediction, response encoding) called directly, against the
// in-process prediction of the same input, the two alternated in one loop so that load changes
// hit both alike. It reports the handler's cost beyond the prediction ("overhead", a ratio).
func BenchmarkServeHandler(b *testing.B) {
	for _, tc := range []struct{ name, ctype string }{{"json", "application/json"}, {"raw", "application/octet-stream"}} {
		b.Run(tc.name, func(b *testing.B) {
			opts := runtime.Options{Samples: 32, Seed: 1}
			s, err := New(Config{Concurrency: 1}, ModelConfig{Name: "mnist", Path: demoModel, Options: opts})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			h := s.Handler()
			x := demoInputs(1, 11)
			body := instancesJSON(x, 784)
			if tc.ctype != "application/json" {
				body = rawBody(x)
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
			serve := func() {
				req := httptest.NewRequest(http.MethodPost, "/v1/models/mnist:predict", bytes.NewReader(body))
				req.Header.Set("Content-Type", tc.ctype)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body.String())
				}
			}
			serve()
			var tH, tP time.Duration
			b.ResetTimer()
			for range b.N {
				t0 := time.Now()
				serve()
				t1 := time.Now()
				if err := p.Predict(x, &pr); err != nil {
					b.Fatal(err)
				}
				tH += t1.Sub(t0)
				tP += time.Since(t1)
			}
			b.ReportMetric(float64(tH.Nanoseconds())/float64(b.N), "handler-ns/op")
			b.ReportMetric(float64(tP.Nanoseconds())/float64(b.N), "inprocess-ns/op")
			b.ReportMetric(float64(tH)/float64(tP)-1, "overhead")
		})
	}
}
