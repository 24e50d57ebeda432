//go:build !noserve

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/serve"
)

const serveUsage = `Usage: edgebnn serve --model [NAME=]FILE [--model ...] [flags]

Serves model files over HTTP/JSON in TensorFlow Serving's REST shape until
SIGINT or SIGTERM (docs/SERVE.md):

  POST /v1/models/NAME:predict   {"instances": [[...], ...]} -> {"predictions": [...]}
                                 or a raw little-endian float32 body
                                 (Content-Type: application/octet-stream);
                                 ?normalized=true: inputs are already normalised
  GET  /v1/models, /v1/models/NAME, /healthz, /readyz, /metrics (Prometheus)

Every prediction carries its uncertainty (entropy, expected entropy, mutual
information; regression: mean, variance, epistemic variance) and the model's
policy decision (act or abstain). NAME defaults to FILE's base name without
its extension. The sampling flags apply to every model.

It listens on 127.0.0.1:8501 (loopback only) unless --addr says otherwise.
SIGHUP reloads the model files: a file that fails to load keeps the model
loaded before serving (logged, and counted in /metrics). SIGINT or SIGTERM
drains: new connections are refused, requests in flight finish within
--drain-timeout; then the exit status is 130. Log lines go to stderr. Model
files are read into memory, so that one copied over in place while served
cannot fault the server; --mmap maps them instead (replace them by rename).`

var serveCmd = command{
	name:    "serve",
	summary: "serve models over HTTP/JSON (TF Serving REST shape, Prometheus metrics)",
	usage:   serveUsage,
	run:     runServe,
	grace:   serve.MaxDrainTimeout + drainMargin,
}

// drainMargin is how much longer than its drain serve may take to stop once interrupted
// (closing connections, unloading models) before the dispatcher gives up on it.
const drainMargin = 5 * time.Second

// modelFlags collects repeated --model flags.
type modelFlags []serve.ModelConfig

func (m *modelFlags) String() string { return "" }

func (m *modelFlags) Set(s string) error {
	name, path, ok := strings.Cut(s, "=")
	if !ok {
		path = s
		name = strings.TrimSuffix(filepath.Base(s), filepath.Ext(s))
	}
	if path == "" {
		return fmt.Errorf("--model %q: no file", s)
	}
	if !serve.ValidName(name) {
		return fmt.Errorf("--model %q: name %q must be 1 to %d letters, digits, '.', '_' or '-' (use NAME=FILE)", s, name, serve.MaxNameLen)
	}
	*m = append(*m, serve.ModelConfig{Name: name, Path: path})
	return nil
}

func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("serve")
	var models modelFlags
	fs.Var(&models, "model", "a model to serve, `[NAME=]FILE` (repeatable)")
	addr := fs.String("addr", serve.DefaultAddr, "listen on `HOST:PORT` (port 0: any free port; \":8501\" serves every interface)")
	samples := fs.Int("samples", 0, "Monte Carlo samples `K` per prediction (default: the K each model's policy was fitted with, else 32;\nan ensemble of M networks: M)")
	seed := fs.Uint64("seed", 0, "random `seed`; the same seed gives identical predictions (default: the seed each calibrated\nmodel's policy was fitted with, else 0)")
	strategy := fs.String("strategy", "auto", "sampling `strategy`: weight, local or auto (weight and local: an instance's samples do not depend on the other instances of its request;\nauto: a calibrated model's policy's, if it records one)")
	threads := fs.Int("threads", 1, "goroutines drawing the samples of one prediction (`T`)")
	mean := fs.Bool("mean", false, "predict once at the posterior mean (no sampling)")
	keepF16 := fs.Bool("keep-f16", false, "keep the fp16 weights of deterministic layers as stored and widen them per use: half their memory, bit-identical outputs")
	mmap := fs.Bool("mmap", false, "map the model files instead of reading them into memory (less memory; then replace a served file only by rename: one truncated in place, as cp and scp do, ends the server)")
	adaptive := fs.Bool("adaptive", false, "adaptive sampling: stop drawing samples once the policy's decision is settled (needs a policy in the model file)")
	batch := fs.Int("batch", 0, "instances predicted in one pass (`B`, default 16, at most --max-instances)")
	conc := fs.Int("concurrency", 0, "predictors per model, i.e. requests of one model predicted at once (`N`, default GOMAXPROCS)")
	pending := fs.Int64("max-pending-bytes", 0, "request body `bytes` held at once over all requests (at least --max-body); a request that\nwould exceed it gets 503 (default 32 MiB, raised to --max-body)")
	queue := fs.Duration("queue-timeout", serve.DefaultQueueTimeout, "how long a request waits for a free predictor before 503")
	maxBody := fs.Int64("max-body", serve.DefaultMaxBodyBytes, "largest request body in `bytes` (413 above)")
	maxInst := fs.Int("max-instances", serve.DefaultMaxInstances, "most instances per request (`N`)")
	rht := fs.Duration("read-header-timeout", serve.DefaultReadHeaderTimeout, "time a client has to send its request headers")
	rt := fs.Duration("read-timeout", serve.DefaultReadTimeout, "time a client has to send its whole request")
	wt := fs.Duration("write-timeout", serve.DefaultWriteTimeout, "time from the end of the request headers to the end of the response")
	it := fs.Duration("idle-timeout", serve.DefaultIdleTimeout, "how long an idle keep-alive connection is kept")
	mhb := fs.Int("max-header-bytes", serve.DefaultMaxHeaderBytes, "largest request line and headers, in `bytes`")
	drain := fs.Duration("drain-timeout", serve.DefaultDrainTimeout, "on SIGINT/SIGTERM, how long requests in flight may take to finish (at most 5m)")
	if err := parseFlagsOnly(fs, serveUsage, args, stdout); err != nil {
		return err
	}
	if len(models) == 0 {
		return usagef("--model is required")
	}
	st, err := runtime.ParseStrategy(*strategy)
	if err != nil {
		return usagef("%v", err)
	}
	// The server's own limits, checked here to name the flags (serve.Config.Validate names its
	// fields); 0 is no default for a flag whose default is printed.
	switch {
	case *samples < 0 || *samples > maxSamplesFlag:
		return usagef("--samples %d out of range (0 to %d)", *samples, maxSamplesFlag)
	case *threads < 1 || *threads > maxThreadsFlag:
		return usagef("--threads %d out of range (1 to %d)", *threads, maxThreadsFlag)
	case *maxBody < 1 || *maxBody > serve.MaxBodyBytesLimit:
		return usagef("--max-body %d out of range (1 to %d)", *maxBody, int64(serve.MaxBodyBytesLimit))
	case *maxInst < 1 || *maxInst > serve.MaxInstancesLimit:
		return usagef("--max-instances %d out of range (1 to %d)", *maxInst, serve.MaxInstancesLimit)
	case *conc < 0 || *conc > serve.MaxConcurrency:
		return usagef("--concurrency %d out of range (0 for GOMAXPROCS, or 1 to %d)", *conc, serve.MaxConcurrency)
	case flagSet(fs, "max-pending-bytes") && (*pending < *maxBody || *pending > serve.MaxPendingBytesLimit):
		return usagef("--max-pending-bytes %d out of range (--max-body, %d, to %d)", *pending, *maxBody, int64(serve.MaxPendingBytesLimit))
	case *mhb < 1024 || *mhb > 1<<20:
		return usagef("--max-header-bytes %d out of range (1024 to %d)", *mhb, 1<<20)
	case *drain > serve.MaxDrainTimeout:
		return usagef("--drain-timeout %v out of range (at most %v)", *drain, serve.MaxDrainTimeout)
	case *batch < 0 || *batch > *maxInst:
		return usagef("--batch %d out of range (0 to --max-instances, %d)", *batch, *maxInst)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"queue-timeout", *queue}, {"read-header-timeout", *rht}, {"read-timeout", *rt}, {"write-timeout", *wt}, {"idle-timeout", *it}, {"drain-timeout", *drain}} {
		if d.v <= 0 {
			return usagef("--%s must be positive", d.name)
		}
	}
	for i := range models {
		models[i].Options = runtime.Options{Samples: *samples, Seed: *seed, PolicySeed: !flagSet(fs, "seed"), Strategy: st,
			Threads: *threads, Mean: *mean, Adaptive: *adaptive, MaxBatch: *batch}
		models[i].Load = runtime.LoadOptions{KeepF16: *keepF16}
		models[i].Mmap = *mmap
	}
	// --max-pending-bytes unset (0): serve's default, 32 MiB raised to --max-body.
	cfg := serve.Config{Addr: *addr, MaxBodyBytes: *maxBody, MaxInstances: *maxInst, Concurrency: *conc, MaxPendingBytes: *pending, QueueTimeout: *queue,
		ReadHeaderTimeout: *rht, ReadTimeout: *rt, WriteTimeout: *wt, IdleTimeout: *it, MaxHeaderBytes: *mhb,
		DrainTimeout: *drain, Log: log.New(stderr, "edgebnn serve: ", log.LstdFlags)}
	if err := cfg.WithDefaults().Validate(); err != nil {
		return usagef("%v", strings.TrimPrefix(err.Error(), "serve: "))
	}
	// Stopping takes the drain the flags ask for, not the longest one allowed.
	setGrace(ctx, *drain+drainMargin)
	// SIGHUP is caught before the models load: one sent while they load (a deploy script that
	// has just replaced a file) must not kill the server by the signal's default action; it
	// reloads them once the server runs.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	s, err := serve.New(cfg, models...)
	if err != nil {
		return err
	}
	defer s.Close()
	l, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-hup:
				_ = s.Reload() // logged; the old models keep serving
			}
		}
	}()
	return s.Serve(ctx, l)
}

var _ flag.Value = (*modelFlags)(nil)
