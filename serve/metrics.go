package serve

import (
	"bufio"
	"cmp"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// latencyBuckets are the upper bounds (seconds) of the request-latency histogram.
var latencyBuckets = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// modelMetrics are one model's counters; they survive reloads. Requests for names that are not
// served count under the model "" (so that hostile URLs cannot grow the label set).
type modelMetrics struct {
	buckets []atomic.Uint64 // len(latencyBuckets)+1, the last +Inf
	sumNs   atomic.Uint64
	count   atomic.Uint64
	act     atomic.Uint64
	abstain atomic.Uint64
	samples atomic.Uint64
}

// metrics are the server's counters, written in the Prometheus text exposition format.
type metrics struct {
	mu       sync.Mutex
	models   map[string]*modelMetrics
	requests map[[2]string]uint64 // {model, code}
	errors   map[[2]string]uint64 // {model, kind}
	reloads  map[[2]string]uint64 // {model, result}
	inFlight atomic.Int64
	// bodyBytes is the bytes of the buffers holding request bodies (Config.MaxPendingBytes
	// bounds it).
	bodyBytes atomic.Int64
}

func newMetrics(names []string) *metrics {
	mt := &metrics{models: map[string]*modelMetrics{}, requests: map[[2]string]uint64{},
		errors: map[[2]string]uint64{}, reloads: map[[2]string]uint64{}}
	for _, n := range append([]string{""}, names...) {
		mt.models[n] = &modelMetrics{buckets: make([]atomic.Uint64, len(latencyBuckets)+1)}
	}
	return mt
}

// model returns the counters of a served model, or of "" for any other name.
func (mt *metrics) model(name string) *modelMetrics {
	if m, ok := mt.models[name]; ok {
		return m
	}
	return mt.models[""]
}

// request records a finished request of model (a served name or "") with its status, its error
// kind ("" for none) and its duration.
func (mt *metrics) request(model string, code int, kind string, d time.Duration) {
	mm := mt.model(model)
	if _, ok := mt.models[model]; !ok {
		model = ""
	}
	s := d.Seconds()
	i, _ := slices.BinarySearch(latencyBuckets, s)
	mm.buckets[i].Add(1)
	mm.sumNs.Add(uint64(max(d, 0)))
	mm.count.Add(1)
	mt.mu.Lock()
	mt.requests[[2]string{model, strconv.Itoa(code)}]++
	if kind != "" {
		mt.errors[[2]string{model, kind}]++
	}
	mt.mu.Unlock()
}

func (mt *metrics) reload(model string, ok bool) {
	res := "error"
	if ok {
		res = "ok"
	}
	mt.mu.Lock()
	mt.reloads[[2]string{model, res}]++
	mt.mu.Unlock()
}

// write writes every metric in the Prometheus text format (version 0.0.4).
func (mt *metrics) write(w io.Writer, ready bool, loaded map[string]float64) error {
	bw := bufio.NewWriter(w)
	names := make([]string, 0, len(mt.models))
	for n := range mt.models {
		names = append(names, n)
	}
	slices.Sort(names)
	label := func(k, v string) string { return k + `="` + escapeLabel(v) + `"` }
	header := func(name, typ, help string) {
		bw.WriteString("# HELP " + name + " " + help + "\n# TYPE " + name + " " + typ + "\n")
	}
	counterMap := func(name, help, l2 string, m map[[2]string]uint64) {
		header(name, "counter", help)
		keys := make([][2]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b [2]string) int {
			if a[0] != b[0] {
				return cmp.Compare(a[0], b[0])
			}
			return cmp.Compare(a[1], b[1])
		})
		for _, k := range keys {
			bw.WriteString(name + "{" + label("model", k[0]) + "," + label(l2, k[1]) + "} " + strconv.FormatUint(m[k], 10) + "\n")
		}
	}
	// A copy of the counters, taken under the lock and written after it: a client reading its
	// response slowly must not hold up every request's count (metrics.request).
	mt.mu.Lock()
	requests, errs, reloads := maps.Clone(mt.requests), maps.Clone(mt.errors), maps.Clone(mt.reloads)
	mt.mu.Unlock()
	counterMap("edgebnn_serve_requests_total", "Requests by model and HTTP status (model \"\": names not served).", "code", requests)
	counterMap("edgebnn_serve_errors_total", "Failed requests by model and kind of error.", "kind", errs)
	counterMap("edgebnn_serve_reloads_total", "Model reloads (SIGHUP) by model and result (ok, error: the old model kept serving).", "result", reloads)

	header("edgebnn_serve_request_duration_seconds", "histogram", "Latency of requests, from the request's start to its response, by model.")
	for _, n := range names {
		mm := mt.models[n]
		var cum uint64
		for i, b := range latencyBuckets {
			cum += mm.buckets[i].Load()
			bw.WriteString("edgebnn_serve_request_duration_seconds_bucket{" + label("model", n) + "," + label("le", strconv.FormatFloat(b, 'g', -1, 64)) + "} " + strconv.FormatUint(cum, 10) + "\n")
		}
		cum += mm.buckets[len(latencyBuckets)].Load()
		bw.WriteString("edgebnn_serve_request_duration_seconds_bucket{" + label("model", n) + `,le="+Inf"} ` + strconv.FormatUint(cum, 10) + "\n")
		bw.WriteString("edgebnn_serve_request_duration_seconds_sum{" + label("model", n) + "} " + strconv.FormatFloat(float64(mm.sumNs.Load())/1e9, 'g', -1, 64) + "\n")
		bw.WriteString("edgebnn_serve_request_duration_seconds_count{" + label("model", n) + "} " + strconv.FormatUint(mm.count.Load(), 10) + "\n")
	}
	header("edgebnn_serve_predictions_total", "counter", "Predictions (instances) by model and the policy's decision.")
	for _, n := range names[1:] {
		mm := mt.models[n]
		bw.WriteString("edgebnn_serve_predictions_total{" + label("model", n) + `,decision="act"} ` + strconv.FormatUint(mm.act.Load(), 10) + "\n")
		bw.WriteString("edgebnn_serve_predictions_total{" + label("model", n) + `,decision="abstain"} ` + strconv.FormatUint(mm.abstain.Load(), 10) + "\n")
	}
	header("edgebnn_serve_samples_total", "counter", "Posterior samples drawn, by model (fewer than instances × K with adaptive sampling).")
	for _, n := range names[1:] {
		bw.WriteString("edgebnn_serve_samples_total{" + label("model", n) + "} " + strconv.FormatUint(mt.models[n].samples.Load(), 10) + "\n")
	}
	header("edgebnn_serve_in_flight_requests", "gauge", "Requests being served.")
	bw.WriteString("edgebnn_serve_in_flight_requests " + strconv.FormatInt(mt.inFlight.Load(), 10) + "\n")
	header("edgebnn_serve_pending_body_bytes", "gauge", "Bytes of the buffers holding the bodies of requests being served (at most --max-pending-bytes).")
	bw.WriteString("edgebnn_serve_pending_body_bytes " + strconv.FormatInt(mt.bodyBytes.Load(), 10) + "\n")
	header("edgebnn_serve_model_loaded_timestamp_seconds", "gauge", "When the model now serving was loaded (Unix time).")
	for _, n := range names[1:] {
		bw.WriteString("edgebnn_serve_model_loaded_timestamp_seconds{" + label("model", n) + "} " + strconv.FormatFloat(loaded[n], 'f', 3, 64) + "\n")
	}
	header("edgebnn_serve_ready", "gauge", "1 when the server accepts predictions, 0 while it drains.")
	r := "0"
	if ready {
		r = "1"
	}
	bw.WriteString("edgebnn_serve_ready " + r + "\n")
	return bw.Flush()
}

// escapeLabel escapes a label value: backslash, double quote and newline.
func escapeLabel(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '\\' || c == '"' || c == '\n' {
			goto slow
		}
	}
	return s
slow:
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b = append(b, `\\`...)
		case '"':
			b = append(b, `\"`...)
		case '\n':
			b = append(b, `\n`...)
		default:
			b = append(b, c)
		}
	}
	return string(b)
}
