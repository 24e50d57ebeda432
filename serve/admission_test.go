package serve

import (
	"bytes"
	"fmt"
	"io"
	"net"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestServeMaxPendingBytes: the request bodies the server holds at once are bounded by
// MaxPendingBytes. Clients that hold large bodies open take the budget as the buffers holding
// their bytes grow (to their Content-Length at most); then a request whose body would exceed it
// gets 503, Retry-After and the kind server_busy at once (not after the queue timeout), one
// whose Content-Length already would before any of its
// body is read. Before the bound, a review had 60 clients with 4 MiB bodies take a --concurrency 1
// server from 16 to 437 MB. Once the held requests leave, their bytes are released (the gauge
// edgebnn_serve_pending_body_bytes returns to 0) and requests are served again.
func TestServeMaxPendingBytes(t *testing.T) {
	const (
		maxBody = 1 << 20
		held    = 3
		sent    = maxBody - 10 // each held client's bytes: all of its body but the end
	)
	s, ts := newTestServer(t, Config{Concurrency: 1, MaxBodyBytes: maxBody, MaxPendingBytes: held * maxBody, QueueTimeout: time.Minute},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 2}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	waitBytes := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for s.mt.bodyBytes.Load() != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := s.mt.bodyBytes.Load(); got != want {
			t.Fatalf("%d body bytes held, want %d", got, want)
		}
	}
	conns := make([]net.Conn, held)
	for i := range held {
		conns[i] = dialPartial(t, addr, fmt.Sprintf("POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", maxBody, strings.Repeat(" ", sent)))
		waitBytes(int64(i+1) * maxBody) // the buffer has grown to the announced length
	}
	one := instancesJSON(demoInputs(1, 1), 784)
	// Nothing is left. A Content-Length of 1 MiB or of one image does not fit: refused before
	// the body is read. A chunked body (no Content-Length) is refused once it needs a buffer.
	for _, c := range []struct {
		body    []byte
		chunked bool
	}{{[]byte(strings.Repeat(" ", maxBody-1) + "x"), false}, {one, false}, {one, true}} {
		start := time.Now()
		var r io.Reader = bytes.NewReader(c.body)
		if c.chunked {
			r = io.MultiReader(r) // of unknown length: sent chunked
		}
		resp, err := ts.Client().Post(ts.URL+"/v1/models/mnist:predict", "application/json", r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || time.Since(start) > 10*time.Second || c.chunked == (resp.Request.ContentLength > 0) {
			t.Fatalf("beyond MaxPendingBytes (chunked %v): status %d after %v: %.200s", c.chunked, resp.StatusCode, time.Since(start), b)
		}
		if msg := errorOf(t, b); !strings.Contains(msg, fmt.Sprintf("would exceed %d bytes", held*maxBody)) || !strings.Contains(msg, "--max-pending-bytes") {
			t.Fatalf("error %q", msg)
		}
	}
	resp, err := ts.Client().Post(ts.URL+"/v1/models/mnist:predict", "application/json", strings.NewReader(string(one)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("status %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	m := metricsText(t, ts.URL)
	if v := metricValue(t, m, `edgebnn_serve_errors_total{model="mnist",kind="server_busy"}`); v != 4 {
		t.Fatalf("server_busy %v, want 4\n%s", v, m)
	}
	if v := metricValue(t, m, "edgebnn_serve_pending_body_bytes"); v != held*maxBody {
		t.Fatalf("pending body bytes %v, want %d (the refused requests' bytes released)", v, held*maxBody)
	}
	for _, c := range conns {
		c.Close()
	}
	conns = nil
	waitBytes(0)
	for range 3 {
		if code, b := post(t, ts.Client(), ts.URL+"/v1/models/mnist:predict", "application/json", one); code != 200 {
			t.Fatalf("after the held requests left: %d %s", code, b)
		}
	}
	waitBytes(0)
}

// TestServeMaxPendingBytesConfig: the budget's default is DefaultMaxPendingBytes raised to
// MaxBodyBytes, and one below MaxBodyBytes (a largest body could never be read) is refused.
func TestServeMaxPendingBytesConfig(t *testing.T) {
	for _, c := range []struct {
		cfg  Config
		want int64
	}{
		{Config{}, DefaultMaxPendingBytes},
		{Config{MaxBodyBytes: 64 << 20}, 64 << 20},
		{Config{MaxPendingBytes: 1 << 30}, 1 << 30},
	} {
		if got := c.cfg.WithDefaults().MaxPendingBytes; got != c.want {
			t.Errorf("%+v: MaxPendingBytes %d, want %d", c.cfg, got, c.want)
		}
	}
	for _, c := range []Config{{MaxPendingBytes: -1}, {MaxPendingBytes: 1 << 20}, {MaxPendingBytes: MaxPendingBytesLimit + 1}} {
		if err := c.WithDefaults().Validate(); err == nil || !strings.Contains(err.Error(), "MaxPendingBytes") {
			t.Errorf("%+v: %v, want an error naming MaxPendingBytes", c, err)
		}
	}
}

// TestServeMaxPendingBytesCountsBuffers: the budget counts the memory a request's body holds,
// not only the bytes that have arrived. A client that announces a large Content-Length and then
// sends nothing (or one byte, or waits for its 100 Continue) makes the server hold a buffer
// (bodyPrealloc, 64 KiB) all the same; were that not counted, connections doing so would grow
// the server's memory with their number, whatever MaxPendingBytes (a review measured 1000 such
// connections at 82 MB of heap under the 32 MiB default, 1000 bytes counted). Here the budget
// holds 32 such buffers: of 64 connections, some must be refused with server_busy, and the
// total counted never exceeds the budget.
func TestServeMaxPendingBytesCountsBuffers(t *testing.T) {
	const (
		maxBody = 512 << 10 // unread beyond 256 KiB, net/http answers at once (no discarding first)
		budget  = 2 << 20
		conns   = 64
	)
	for _, c := range []struct {
		name string
		head string // after the request line and Host
		body string // the part of the body sent
	}{
		{"announced, nothing sent", fmt.Sprintf("Content-Length: %d\r\n", maxBody), ""},
		{"announced, one byte sent", fmt.Sprintf("Content-Length: %d\r\n", maxBody), " "},
		{"waiting for 100 Continue", fmt.Sprintf("Content-Length: %d\r\nExpect: 100-continue\r\n", maxBody), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, ts := newTestServer(t, Config{Concurrency: 1, MaxBodyBytes: maxBody, MaxPendingBytes: budget, QueueTimeout: time.Minute},
				ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 2}})
			addr := strings.TrimPrefix(ts.URL, "http://")
			open := make([]net.Conn, conns)
			for i := range open {
				open[i] = dialPartial(t, addr, fmt.Sprintf("POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\n%s\r\n%s", c.head, c.body))
			}
			var busy atomic.Int64
			var wg sync.WaitGroup
			deadline := time.Now().Add(2 * time.Second)
			for _, cn := range open {
				wg.Go(func() {
					cn.SetReadDeadline(deadline)
					b, _ := io.ReadAll(cn) // until the deadline or the server closes the connection
					if strings.HasPrefix(string(b), "HTTP/1.1 503") && strings.Contains(string(b), "--max-pending-bytes") {
						busy.Add(1)
					}
				})
			}
			wg.Wait()
			if got := s.mt.bodyBytes.Load(); busy.Load() == 0 || got > budget {
				t.Fatalf("%d of %d connections holding body buffers refused, %d bytes counted (budget %d): the buffers are not counted", busy.Load(), conns, got, budget)
			}
		})
	}
}

// TestServeMaxPendingBytesLargestBody: a budget of exactly MaxBodyBytes (the smallest allowed)
// still reads a body of the largest size, with a Content-Length or chunked — the buffer that
// holds it, which is what the budget counts, never grows past the limit — and a body one byte
// larger gets 413, not 503.
func TestServeMaxPendingBytesLargestBody(t *testing.T) {
	one := instancesJSON(demoInputs(1, 1), 784)
	const maxBody = 200 << 10
	_, ts := newTestServer(t, Config{MaxBodyBytes: maxBody, MaxPendingBytes: maxBody},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 2}})
	for _, c := range []struct {
		size    int
		chunked bool
		want    int
	}{
		{maxBody, false, 200}, {maxBody, true, 200}, {maxBody + 1, false, 413}, {maxBody + 1, true, 413},
	} {
		body := append(bytes.Repeat([]byte(" "), c.size-len(one)), one...)
		var r io.Reader = bytes.NewReader(body)
		if c.chunked {
			r = io.MultiReader(r)
		}
		resp, err := ts.Client().Post(ts.URL+"/v1/models/mnist:predict", "application/json", r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("body of %d bytes (chunked %v), budget %d: status %d, want %d: %.200s", c.size, c.chunked, maxBody, resp.StatusCode, c.want, b)
		}
	}
}

// TestServeSlowBodyHoldsOnlyItsBuffer: a request whose body has not arrived holds only the
// buffer for it, which MaxPendingBytes counts — not the pooled memory of a request (parsed
// inputs, network inputs, predictions, response) that the previous requests of 64 instances
// grew to some 400 KB. Were that memory taken before the body, clients that each announce 100
// bytes and send one, interleaved with such requests, would pin it one per connection, whatever
// the budget (a review measured 400 of them at 170 MB of heap, 40 kB counted).
func TestServeSlowBodyHoldsOnlyItsBuffer(t *testing.T) {
	const (
		rounds = 25
		per    = 4
	)
	s, ts := newTestServer(t, Config{Concurrency: 1, QueueTimeout: time.Minute},
		ModelConfig{Name: "mnist", Path: demoModel, Options: runtime.Options{Samples: 1}})
	addr := strings.TrimPrefix(ts.URL, "http://")
	req := instancesJSON(demoInputs(64, 1), 784)
	slow := 0
	var before, after goruntime.MemStats
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	for range rounds {
		var wg sync.WaitGroup
		for range per {
			wg.Go(func() {
				if code, b := post(t, ts.Client(), ts.URL+"/v1/models/mnist:predict", "application/json", req); code != 200 {
					t.Errorf("%d %.200s", code, b)
				}
			})
		}
		wg.Wait()
		for range per {
			dialPartial(t, addr, "POST /v1/models/mnist:predict HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n ")
			slow++
		}
		deadline := time.Now().Add(10 * time.Second)
		for s.mt.bodyBytes.Load() < int64(slow)*100 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	}
	ts.Client().CloseIdleConnections()
	goruntime.GC()
	goruntime.GC() // the pools' victims too: what is left is held by the connections
	goruntime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	t.Logf("%d slow clients: heap grew %d bytes, %d counted", slow, grown, s.mt.bodyBytes.Load())
	if limit := int64(slow) * 64 << 10; grown > limit {
		t.Fatalf("%d clients waiting to send their bodies: heap grew %d bytes (more than %d), %d counted: they hold more than their body buffers",
			slow, grown, limit, s.mt.bodyBytes.Load())
	}
}
