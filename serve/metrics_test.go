package serve

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// blockingWriter blocks every Write until release is closed, as a client that does not read.
type blockingWriter struct{ started, release chan struct{} }

func (w *blockingWriter) Write(p []byte) (int, error) {
	select {
	case w.started <- struct{}{}:
	default:
	}
	<-w.release
	return len(p), nil
}

// TestMetricsWriteDoesNotBlockRequests: while /metrics is writing to a client that does not
// read (its output past the 4 KiB buffer, so the write reaches the connection), every other
// request still records its count at once.
func TestMetricsWriteDoesNotBlockRequests(t *testing.T) {
	mt := newMetrics([]string{"m"})
	for i := range 200 { // ~14 KB of error counters
		mt.request("m", 400, fmt.Sprintf("kind_%03d", i), time.Millisecond)
	}
	w := &blockingWriter{started: make(chan struct{}, 1), release: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- mt.write(w, true, nil) }()
	select {
	case <-w.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the metrics never reached the writer")
	}
	counted := make(chan struct{})
	go func() {
		mt.request("m", 200, "", time.Millisecond)
		close(counted)
	}()
	select {
	case <-counted:
	case <-time.After(2 * time.Second):
		t.Error("a request's count waited for a blocked /metrics client")
	}
	close(w.release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	<-counted
	mt.write(io.Discard, true, nil)
}

// TestServeCountsEveryRefusal: the 404s of an unknown endpoint or :verb and the 405 of a wrong
// method are counted like every other refusal (requests_total by status, errors_total by kind),
// and normalized takes only the documented true or false.
func TestServeCountsEveryRefusal(t *testing.T) {
	_, ts := newTestServer(t, Config{}, ModelConfig{Name: "mnist", Path: demoModel})
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/nothing", 404},
		{"POST", "/v1/models/mnist:explain", 404},
		{"POST", "/metrics", 405},
		{"POST", "/v1/models/mnist:predict?normalized=1", 400},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, strings.NewReader(`{"instances": [[0]]}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || !strings.HasPrefix(string(b), `{"error":`) {
			t.Errorf("%s %s: %d %s, want %d with a JSON error", c.method, c.path, resp.StatusCode, b, c.code)
		}
	}
	m := metricsText(t, ts.URL)
	for metric, want := range map[string]float64{
		`edgebnn_serve_requests_total{model="",code="404"}`:              1,
		`edgebnn_serve_requests_total{model="mnist",code="404"}`:         1,
		`edgebnn_serve_requests_total{model="",code="405"}`:              1,
		`edgebnn_serve_errors_total{model="",kind="not_found"}`:          1,
		`edgebnn_serve_errors_total{model="mnist",kind="not_found"}`:     1,
		`edgebnn_serve_errors_total{model="",kind="method_not_allowed"}`: 1,
		`edgebnn_serve_errors_total{model="mnist",kind="bad_query"}`:     1,
	} {
		if v := metricValue(t, m, metric); v != want {
			t.Errorf("%s = %v, want %v", metric, v, want)
		}
	}
}
