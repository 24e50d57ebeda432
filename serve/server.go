package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// Server serves models over HTTP. Make one with New; it is safe for concurrent use.
type Server struct {
	cfg    Config
	models []ModelConfig
	log    *log.Logger

	mu       sync.RWMutex
	cur      map[string]*loaded
	reloadMu sync.Mutex

	mt       *metrics
	draining atomic.Bool
	closed   atomic.Bool
	handler  http.Handler
}

// New validates cfg (zero fields take their defaults) and the models, loads every model file
// and makes its Predictors (cfg.Concurrency per model). Any failure is an error: a server does
// not start with a model missing.
func New(cfg Config, models ...ModelConfig) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := validateModels(models); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, models: append([]ModelConfig(nil), models...), log: cfg.Log, cur: map[string]*loaded{}}
	if s.log == nil {
		s.log = log.New(io.Discard, "", 0)
	}
	names := make([]string, len(models))
	for i, mc := range models {
		names[i] = mc.Name
		l, err := load(mc, cfg)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("serve: model %q: %w", mc.Name, err)
		}
		s.cur[mc.Name] = l
		s.log.Printf("model %q: loaded %s (%s, input %v, %d outputs, K=%d, %d predictors)", mc.Name, mc.Path,
			l.model.Task(), l.model.Spec().InputShape, l.model.OutputSize(), l.opts.Samples, len(l.preds))
		if d := l.model.Policy().Differences(l.opts); d != nil && l.model.Stochastic() {
			s.log.Printf("model %q: note: its decision policy was fitted with other draws; predicting with %s (the defaults match)",
				mc.Name, strings.Join(d, ", "))
		}
	}
	s.mt = newMetrics(names)
	s.handler = s.routes()
	return s, nil
}

// Config returns the server's configuration, defaults filled in.
func (s *Server) Config() Config { return s.cfg }

// Handler returns the server's HTTP handler (the endpoints of docs/SERVE.md).
func (s *Server) Handler() http.Handler { return s.handler }

// Ready reports whether the server accepts predictions: its models are loaded and it is
// neither draining nor closed (/readyz).
func (s *Server) Ready() bool { return !s.draining.Load() && !s.closed.Load() }

// ListenAndServe listens on Config.Addr and calls Serve.
func (s *Server) ListenAndServe(ctx context.Context) error {
	l, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return s.Serve(ctx, l)
}

// Serve serves HTTP on l until ctx is cancelled, then shuts down gracefully: the listener is
// closed (new connections are refused), /readyz answers 503, idle connections are closed and
// requests in flight finish, for at most Config.DrainTimeout; connections still busy then are
// closed and Serve returns an error saying so. It returns nil after a complete drain. Serve does
// not Close the server (its models stay loaded).
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		ReadTimeout:       s.cfg.ReadTimeout,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          s.log,
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(l) }()
	s.log.Printf("serving on http://%s", l.Addr())
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	s.draining.Store(true)
	s.log.Printf("shutting down: draining %d requests in flight (deadline %v)", s.mt.inFlight.Load(), s.cfg.DrainTimeout)
	dctx, cancel := context.WithTimeout(context.Background(), s.cfg.DrainTimeout)
	defer cancel()
	if err := hs.Shutdown(dctx); err != nil {
		left := s.mt.inFlight.Load()
		hs.Close()
		<-errc
		return fmt.Errorf("serve: drain deadline %v passed with %d requests in flight; their connections were closed", s.cfg.DrainTimeout, left)
	}
	<-errc
	s.log.Printf("drained; stopped")
	return nil
}

// Reload reads every model file again (on SIGHUP). A model whose file fails to load or
// validate, or whose Predictors cannot be made, keeps serving the model loaded before; the
// failure is logged, counted in edgebnn_serve_reloads_total{result="error"} and returned
// (errors.Join of one error per model). Requests in flight finish with the model they started
// with, which is released (its file unmapped) after the last of them.
func (s *Server) Reload() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.closed.Load() {
		return errors.New("serve: reload: the server is closed")
	}
	var errs []error
	for _, mc := range s.models {
		nl, err := load(mc, s.cfg)
		if err != nil {
			s.mt.reload(mc.Name, false)
			err = fmt.Errorf("serve: reload of model %q failed, the model loaded before keeps serving: %w", mc.Name, err)
			s.log.Print(err)
			errs = append(errs, err)
			continue
		}
		s.mu.Lock()
		old := s.cur[mc.Name]
		s.cur[mc.Name] = nl
		s.mu.Unlock()
		if old != nil {
			old.release()
		}
		s.mt.reload(mc.Name, true)
		s.log.Printf("model %q: reloaded %s", mc.Name, mc.Path)
	}
	return errors.Join(errs...)
}

// Close stops serving predictions (they get 503) and releases the models once the requests
// still using them are done. Call it after Serve returns.
func (s *Server) Close() error {
	s.reloadMu.Lock()
	defer s.reloadMu.Unlock()
	if s.closed.Swap(true) {
		return nil
	}
	s.mu.Lock()
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	for _, l := range cur {
		l.release()
	}
	return nil
}

// Models describes the models being served, in the order they were given.
func (s *Server) Models() []ModelInfo {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []ModelInfo
	for _, mc := range s.models {
		if l := s.cur[mc.Name]; l != nil {
			out = append(out, l.describe())
		}
	}
	return out
}

// get returns the current load of a model with a reference the caller releases, or nil.
func (s *Server) get(name string) *loaded {
	s.mu.RLock()
	l := s.cur[name]
	if l != nil {
		l.acquire()
	}
	s.mu.RUnlock()
	return l
}

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", s.only("GET", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "alive"})
	}))
	mux.HandleFunc("/readyz", s.only("GET", func(w http.ResponseWriter, r *http.Request) {
		if !s.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "shutting down"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}))
	mux.HandleFunc("/metrics", s.only("GET", func(w http.ResponseWriter, r *http.Request) {
		loadedAt := map[string]float64{}
		s.mu.RLock()
		for n, l := range s.cur {
			loadedAt[n] = float64(l.loadedAt.UnixNano()) / 1e9
		}
		s.mu.RUnlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_ = s.mt.write(w, s.Ready(), loadedAt)
	}))
	mux.HandleFunc("/v1/models", s.only("GET", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, struct {
			Models []ModelInfo `json:"models"`
		}{s.Models()})
	}))
	mux.HandleFunc("/v1/models/{spec}", s.modelRoute)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, "", &reqError{http.StatusNotFound, kindNotFound, fmt.Sprintf("no endpoint %.100q (see GET /v1/models)", r.URL.Path)})
	})
	return mux
}

// only restricts h to one method (GET also allows HEAD); others get a JSON 405.
func (s *Server) only(method string, h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != method && !(method == "GET" && r.Method == "HEAD") {
			w.Header().Set("Allow", method)
			s.refuse(w, "", &reqError{http.StatusMethodNotAllowed, kindMethod, fmt.Sprintf("%s %s: method not allowed (use %s)", r.Method, r.URL.Path, method)})
			return
		}
		h(w, r)
	}
}

// modelRoute serves /v1/models/NAME (GET) and /v1/models/NAME:predict (POST).
func (s *Server) modelRoute(w http.ResponseWriter, r *http.Request) {
	spec := r.PathValue("spec")
	name, verb, hasVerb := strings.Cut(spec, ":")
	if !hasVerb {
		start := time.Now()
		code, kind := s.info(w, r, name)
		s.mt.request(name, code, kind, time.Since(start))
		return
	}
	if verb != "predict" {
		s.refuse(w, name, &reqError{http.StatusNotFound, kindNotFound, fmt.Sprintf("model %.80q: unknown method %.40q (the only one is :predict)", name, verb)})
		return
	}
	start := time.Now()
	s.mt.inFlight.Add(1)
	code, kind := func() (int, string) {
		defer s.mt.inFlight.Add(-1) // also if predict panics (net/http recovers the connection)
		return s.predict(w, r, name)
	}()
	s.mt.request(name, code, kind, time.Since(start))
}

func (s *Server) info(w http.ResponseWriter, r *http.Request, name string) (int, string) {
	if r.Method != "GET" && r.Method != "HEAD" {
		w.Header().Set("Allow", "GET")
		return fail(w, &reqError{http.StatusMethodNotAllowed, kindMethod, fmt.Sprintf("%s /v1/models/%.80s: method not allowed (use GET; predictions: POST /v1/models/NAME:predict)", r.Method, name)})
	}
	l := s.get(name)
	if l == nil {
		return fail(w, s.unknown(name))
	}
	defer l.release()
	w.Header().Set("Content-Type", "application/json")
	w.Write(l.info)
	return http.StatusOK, ""
}

func (s *Server) unknown(name string) *reqError {
	if s.closed.Load() {
		return &reqError{http.StatusServiceUnavailable, kindShutdown, "the server is shutting down"}
	}
	return &reqError{http.StatusNotFound, kindUnknownModel, fmt.Sprintf("model %.80q is not served (GET /v1/models lists the models)", name)}
}

// predict serves one predict request and returns its status and error kind.
func (s *Server) predict(w http.ResponseWriter, r *http.Request, name string) (int, string) {
	if r.Method != "POST" {
		w.Header().Set("Allow", "POST")
		return fail(w, &reqError{http.StatusMethodNotAllowed, kindMethod, fmt.Sprintf("%s /v1/models/%.80s:predict: method not allowed (use POST)", r.Method, name)})
	}
	l := s.get(name)
	if l == nil {
		return fail(w, s.unknown(name))
	}
	defer l.release()
	normalized := false
	if r.URL.RawQuery != "" {
		// url.Values.Query would drop the pairs it cannot parse (a ";", a bad %-escape) — and with
		// them a normalized=true, so that preprocessing ran twice on a 200.
		q, err := url.ParseQuery(r.URL.RawQuery)
		if err != nil {
			return fail(w, badRequest(kindBadQuery, "model %q: query %.80q: %v (the only parameter is normalized=true|false)", name, r.URL.RawQuery, err))
		}
		for k, v := range q {
			if k != "normalized" || len(v) != 1 {
				return fail(w, badRequest(kindBadQuery, "model %q: unknown or repeated query parameter %.40q (the only one is normalized=true|false)", name, k))
			}
			if v[0] != "true" && v[0] != "false" { // the documented words only, not ParseBool's 1, t, TRUE…
				return fail(w, badRequest(kindBadQuery, "model %q: normalized=%.40q is not true or false", name, v[0]))
			}
			normalized = v[0] == "true"
		}
	}
	ct, _, _ := strings.Cut(r.Header.Get("Content-Type"), ";")
	ct = strings.ToLower(strings.TrimSpace(ct))
	raw := false
	switch ct {
	case "", "application/json", "application/x-www-form-urlencoded": // the last: curl -d's default
	case "application/octet-stream":
		raw = true
	default:
		return fail(w, &reqError{http.StatusUnsupportedMediaType, kindMediaType,
			fmt.Sprintf("model %q: Content-Type %.80q is not application/json or application/octet-stream", name, ct)})
	}
	// Nothing is decompressed: an encoded body would be parsed (a raw one predicted on) as if it
	// were the numbers (RFC 9110 §8.4.1: 415 for a content coding the server does not accept).
	for _, ce := range r.Header.Values("Content-Encoding") {
		for _, c := range strings.Split(ce, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				w.Header().Set("Accept-Encoding", "identity")
				return fail(w, &reqError{http.StatusUnsupportedMediaType, kindMediaType,
					fmt.Sprintf("model %q: Content-Encoding %.40q is not accepted: send the body unencoded", name, c)})
			}
		}
	}
	var held int64 // body buffer bytes counted in mt.bodyBytes, released once the request is answered
	defer func() { s.mt.bodyBytes.Add(-held) }()
	bp := l.getBody()
	defer l.putBody(bp)
	// readBody drops a pooled buffer too large for this request: bp must not keep it alive while
	// the body arrives.
	dst := *bp
	*bp = nil
	body, rerr := s.readBody(w, r, name, dst, &held)
	*bp = body
	if rerr != nil {
		return fail(w, rerr)
	}
	// The rest of the request's memory is taken once its body has arrived: a client sending its
	// body slowly holds nothing the budget does not count.
	buf := l.getBuf()
	defer l.putBuf(buf)
	size := l.model.InputSize()
	var n int
	if raw {
		buf.raw, n, rerr = parseRaw(name, body, size, s.cfg.MaxInstances, buf.raw[:0])
	} else {
		buf.raw, n, rerr = parseJSON(name, body, size, s.cfg.MaxInstances, buf.raw[:0])
	}
	if rerr != nil {
		return fail(w, rerr)
	}
	x := buf.raw
	if !normalized && l.preprocess { // without preprocessing the raw values are the input
		buf.x = growF(buf.x, len(buf.raw))
		x = buf.x
		if err := l.model.Normalize(x, buf.raw); err != nil {
			return fail(w, &reqError{http.StatusInternalServerError, kindInternal, fmt.Sprintf("model %q: %v", name, err)})
		}
		for i, v := range x {
			if v-v != 0 {
				k, j := i/size, l.model.RawIndex(i%size)
				return fail(w, &reqError{http.StatusBadRequest, kindNonFiniteInput,
					fmt.Sprintf("model %q: instance %d, value %d is %s after the model's preprocessing (raw value %g)", name, k, j, nonFiniteName(v), buf.raw[k*size+j])})
			}
		}
	}
	var p *runtime.Predictor
	select {
	case p = <-l.pool:
	default:
		t := time.NewTimer(s.cfg.QueueTimeout)
		select {
		case p = <-l.pool:
			t.Stop()
		case <-t.C:
			w.Header().Set("Retry-After", "1")
			return fail(w, &reqError{http.StatusServiceUnavailable, kindQueueTimeout,
				fmt.Sprintf("model %q: all %d predictors stayed busy for %v (the queue timeout); retry later", name, cap(l.pool), s.cfg.QueueTimeout)})
		case <-r.Context().Done():
			t.Stop()
			return 499, kindCanceled // the client is gone: nobody reads a response
		}
	}
	if cap(buf.preds) < n {
		buf.preds = append(buf.preds[:cap(buf.preds)], make([]runtime.Prediction, n-cap(buf.preds))...)
	}
	preds := buf.preds[:n]
	err := func() error {
		defer func() { l.pool <- p }() // also if PredictBatch panics: the pool must not shrink
		return p.PredictBatch(x, preds)
	}()
	if err != nil {
		var nf *runtime.NonFiniteError
		if errors.As(err, &nf) {
			return fail(w, &reqError{http.StatusUnprocessableEntity, kindNonFiniteOut,
				fmt.Sprintf("model %q: instance %d: the predictions are not finite (%d of %d instances): the network overflowed float32; are the inputs scaled as in training?", name, nf.Input, nf.Count, n)})
		}
		return fail(w, &reqError{http.StatusInternalServerError, kindInternal, fmt.Sprintf("model %q: %v", name, err)})
	}
	mm := s.mt.model(name)
	var act, samples uint64
	for i := range preds {
		if preds[i].Decision.Act {
			act++
		}
		samples += uint64(preds[i].Samples)
	}
	mm.act.Add(act)
	mm.abstain.Add(uint64(n) - act)
	mm.samples.Add(samples)
	buf.out = encodePredictions(buf.out[:0], l, preds)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(buf.out)))
	w.WriteHeader(http.StatusOK)
	if _, err := w.Write(buf.out); err != nil {
		return 499, kindCanceled
	}
	return http.StatusOK, ""
}

// bodyPrealloc bounds the buffer readBody allocates from a request's Content-Length before any
// of the body has arrived (64 KiB: a few hundred 28×28 instances in JSON).
const bodyPrealloc = 64 << 10

// readBody reads the request body into dst within Config.MaxBodyBytes. What it counts in *held,
// and in the server's total that Config.MaxPendingBytes bounds, is the capacity of the buffer
// that holds the body — allocated before the bytes arrive, or taken from the pool — not the
// bytes read; the caller releases it when the request is answered.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, name string, dst []byte, held *int64) ([]byte, *reqError) {
	limit := s.cfg.MaxBodyBytes
	tooLarge := func() *reqError {
		return &reqError{http.StatusRequestEntityTooLarge, kindTooLarge,
			fmt.Sprintf("model %q: the request body is larger than %d bytes (the server's limit)", name, limit)}
	}
	if r.ContentLength > limit {
		return dst, tooLarge()
	}
	busy := func() *reqError {
		w.Header().Set("Retry-After", "1")
		return &reqError{http.StatusServiceUnavailable, kindBusy,
			fmt.Sprintf("model %q: the request bodies the server holds would exceed %d bytes (its limit, --max-pending-bytes); retry later", name, s.cfg.MaxPendingBytes)}
	}
	// A body announced too large for what is left is refused before any of it is read; one that
	// is not announced (chunked) or not sent as announced is counted as its buffer grows.
	if r.ContentLength > 0 && s.mt.bodyBytes.Load()+r.ContentLength > s.cfg.MaxPendingBytes {
		return dst, busy()
	}
	// hold makes the request count c bytes, the capacity of its buffer; it is false, and nothing
	// changes, when the server's total would exceed the budget.
	hold := func(c int64) bool {
		for {
			cur := s.mt.bodyBytes.Load()
			if cur+c-*held > s.cfg.MaxPendingBytes {
				return false
			}
			if s.mt.bodyBytes.CompareAndSwap(cur, cur+c-*held) {
				*held = c
				return true
			}
		}
	}
	// The buffer never grows past the announced length or the limit (bound), so a body of the
	// largest size fits a budget of that size.
	bound := limit
	if r.ContentLength >= 0 {
		bound = r.ContentLength
	}
	// A pooled buffer is kept if the request may need it and the budget has room for it.
	if c := int64(cap(dst)); c > 0 && (c > max(bound, bodyPrealloc) || !hold(c)) {
		dst = nil
	}
	// Content-Length sizes the first allocation only up to bodyPrealloc: a client that announces
	// megabytes and sends nothing must not get them; beyond that the buffer grows as bytes arrive.
	if want := min(r.ContentLength, bodyPrealloc); want > 0 && int64(cap(dst)) < want {
		if !hold(want) {
			return dst, busy()
		}
		dst = make([]byte, 0, want)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		var k int
		var err error
		if n := int64(len(dst)); n == int64(cap(dst)) && n >= bound {
			if r.ContentLength >= 0 {
				// All the announced bytes: net/http's body reader has no more to give.
				return dst, nil
			}
			// Full at the limit: what is left to read is the end of the body, or a byte too many.
			var one [1]byte
			k, err = body.Read(one[:])
			if k > 0 {
				return dst, tooLarge()
			}
		} else {
			if n == int64(cap(dst)) {
				c := max(2*n, 512)
				if n >= 256<<10 {
					c = n + n/4
				}
				c = min(c, bound)
				if !hold(c) {
					return dst, busy()
				}
				dst = append(make([]byte, 0, c), dst...)
			}
			k, err = body.Read(dst[len(dst):cap(dst)])
			dst = dst[:len(dst)+k]
		}
		if err == io.EOF {
			return dst, nil
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return dst, tooLarge()
			}
			// The connection's errors name its addresses: they are described, not printed.
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				return dst, &reqError{http.StatusRequestTimeout, kindReadBody, fmt.Sprintf("model %q: the request body did not arrive within --read-timeout", name)}
			}
			if _, ok := errors.AsType[*net.OpError](err); ok || errors.Is(err, io.ErrUnexpectedEOF) {
				return dst, &reqError{499, kindCanceled, fmt.Sprintf("model %q: the client closed the connection before its body ended", name)}
			}
			return dst, &reqError{http.StatusBadRequest, kindReadBody, fmt.Sprintf("model %q: reading the request body: %v", name, err)}
		}
	}
}

func growF(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// refuse answers a request that routing turns away (no endpoint, wrong method) with e and counts
// it in the metrics under model ("" when there is none).
func (s *Server) refuse(w http.ResponseWriter, model string, e *reqError) {
	start := time.Now()
	code, kind := fail(w, e)
	s.mt.request(model, code, kind, time.Since(start))
}

// fail writes e as {"error": "…"} and returns its status and kind.
func fail(w http.ResponseWriter, e *reqError) (int, string) {
	writeError(w, e.code, e.msg)
	return e.code, e.kind
}

func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = http.StatusInternalServerError, []byte(`{"error":"encoding the response failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	w.Write(append(b, '\n'))
}
