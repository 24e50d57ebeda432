package serve

import (
	"errors"
	"fmt"
	"log"
	"net"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// Defaults of Config. Every request is hostile until parsed: the defaults bound what one request
// may cost (bytes read, instances predicted, time spent waiting) and how long a connection may
// be held, and the server listens on the loopback interface only.
const (
	// DefaultAddr is the default listening address: loopback only, on TensorFlow Serving's REST
	// port. Serving other machines needs an explicit address (":8501", "0.0.0.0:8501").
	DefaultAddr = "127.0.0.1:8501"
	// DefaultMaxBodyBytes bounds a request body (4 MiB: 64 JSON instances of 784 values need
	// about 0.5 MiB).
	DefaultMaxBodyBytes = 4 << 20
	// DefaultMaxInstances bounds the instances of one request.
	DefaultMaxInstances = 64
	// DefaultQueueTimeout is how long a request waits for a free predictor before it gets 503.
	DefaultQueueTimeout = 1 * time.Second
	// DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout and
	// DefaultIdleTimeout are the connection timeouts (net/http.Server's fields).
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 60 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// DefaultMaxHeaderBytes bounds the request line and headers (16 KiB).
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultDrainTimeout is how long a shutdown waits for requests in flight.
	DefaultDrainTimeout = 10 * time.Second
	// DefaultMaxBatch is the default ModelConfig.MaxBatch (capped by MaxInstances).
	DefaultMaxBatch = 16
	// DefaultMaxPendingBytes is the default MaxPendingBytes (32 MiB: eight bodies of the default
	// MaxBodyBytes, or thousands of one-image requests), raised to MaxBodyBytes if that is larger.
	DefaultMaxPendingBytes = 32 << 20
)

// Upper bounds of Config and ModelConfig: larger values are refused by Validate.
const (
	MaxBodyBytesLimit = 1 << 30
	// MaxPendingBytesLimit bounds MaxPendingBytes.
	MaxPendingBytesLimit = 1 << 40
	MaxInstancesLimit    = 1 << 16
	MaxConcurrency       = 1024
	MaxModels            = 256
	MaxNameLen           = 64
	// MaxDrainTimeout bounds DrainTimeout (and so how long a shutdown can take).
	MaxDrainTimeout = 5 * time.Minute
)

// Config is the server's configuration. A zero field takes its default (the Default*
// constants; Concurrency: GOMAXPROCS), so Config{} is a safe configuration.
type Config struct {
	// Addr is the TCP address to listen on (DefaultAddr: 127.0.0.1:8501).
	Addr string
	// MaxBodyBytes bounds a request body; a larger one gets 413.
	MaxBodyBytes int64
	// MaxPendingBytes bounds the bytes of request bodies the server holds at once, over all its
	// requests (counted as the buffers holding them grow — up to 64 KiB before any byte arrives,
	// when Content-Length announces that much — released when a request is answered): a request whose
	// body would take the total above it gets 503 with Retry-After — before anything is read
	// when its Content-Length already would — so that clients holding large bodies open cannot
	// grow the server's memory with their number (default: DefaultMaxPendingBytes, at least
	// MaxBodyBytes).
	MaxPendingBytes int64
	// MaxInstances bounds the instances of one request; more get 400.
	MaxInstances int
	// Concurrency is the number of Predictors per model, i.e. of requests of one model predicted
	// at the same time (default GOMAXPROCS). Further requests wait up to QueueTimeout for one to
	// be free, then get 503 with Retry-After.
	Concurrency int
	// QueueTimeout is how long a request waits for a free Predictor.
	QueueTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout and MaxHeaderBytes are given to
	// net/http.Server: a client that sends its request slowly, or holds an idle connection, is
	// disconnected.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// DrainTimeout is how long Serve, once its context is cancelled, waits for requests in
	// flight before closing their connections (at most MaxDrainTimeout).
	DrainTimeout time.Duration
	// Log receives the server's log lines (start, reloads, shutdown); nil discards them.
	Log *log.Logger
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxPendingBytes == 0 {
		c.MaxPendingBytes = max(DefaultMaxPendingBytes, c.MaxBodyBytes)
	}
	if c.MaxInstances == 0 {
		c.MaxInstances = DefaultMaxInstances
	}
	if c.Concurrency == 0 {
		c.Concurrency = goruntime.GOMAXPROCS(0)
	}
	set(&c.QueueTimeout, DefaultQueueTimeout)
	set(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	set(&c.ReadTimeout, DefaultReadTimeout)
	set(&c.WriteTimeout, DefaultWriteTimeout)
	set(&c.IdleTimeout, DefaultIdleTimeout)
	set(&c.DrainTimeout, DefaultDrainTimeout)
	if c.MaxHeaderBytes == 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	return c
}

// Validate checks c (after WithDefaults); errors name the field.
func (c Config) Validate() error {
	if _, port, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("serve: Addr %q: %v", c.Addr, err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("serve: Addr %q: port %q is not a number from 0 to 65535", c.Addr, port)
	}
	switch {
	case c.MaxBodyBytes < 1 || c.MaxBodyBytes > MaxBodyBytesLimit:
		return fmt.Errorf("serve: MaxBodyBytes %d out of range (1 to %d)", c.MaxBodyBytes, MaxBodyBytesLimit)
	case c.MaxPendingBytes < 1 || c.MaxPendingBytes > MaxPendingBytesLimit:
		return fmt.Errorf("serve: MaxPendingBytes %d out of range (1 to %d)", c.MaxPendingBytes, int64(MaxPendingBytesLimit))
	case c.MaxPendingBytes < c.MaxBodyBytes:
		return fmt.Errorf("serve: MaxPendingBytes %d is below MaxBodyBytes %d: a body of the largest size could never be read", c.MaxPendingBytes, c.MaxBodyBytes)
	case c.MaxInstances < 1 || c.MaxInstances > MaxInstancesLimit:
		return fmt.Errorf("serve: MaxInstances %d out of range (1 to %d)", c.MaxInstances, MaxInstancesLimit)
	case c.Concurrency < 1 || c.Concurrency > MaxConcurrency:
		return fmt.Errorf("serve: Concurrency %d out of range (1 to %d)", c.Concurrency, MaxConcurrency)
	case c.MaxHeaderBytes < 1024 || c.MaxHeaderBytes > 1<<20:
		return fmt.Errorf("serve: MaxHeaderBytes %d out of range (1024 to %d)", c.MaxHeaderBytes, 1<<20)
	case c.DrainTimeout < 0 || c.DrainTimeout > MaxDrainTimeout:
		return fmt.Errorf("serve: DrainTimeout %v out of range (0 to %v)", c.DrainTimeout, MaxDrainTimeout)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"QueueTimeout", c.QueueTimeout}, {"ReadHeaderTimeout", c.ReadHeaderTimeout}, {"ReadTimeout", c.ReadTimeout},
		{"WriteTimeout", c.WriteTimeout}, {"IdleTimeout", c.IdleTimeout}} {
		if d.v < 0 || d.v > time.Hour {
			return fmt.Errorf("serve: %s %v out of range (0 to 1h)", d.name, d.v)
		}
	}
	return nil
}

// ModelConfig is one model the server serves.
type ModelConfig struct {
	// Name is the model's name in URLs (/v1/models/NAME): 1 to MaxNameLen letters, digits,
	// '.', '_' or '-', not starting with '.'.
	Name string
	// Path is the model file (.ebnn); Reload reads it again.
	Path string
	// Options configure the model's Predictors: Samples, Seed (PolicySeed: the model's policy's),
	// Strategy, Threads, Mean, Adaptive (and AdaptiveRound, AdaptiveDelta), Policy, MaxMemory. MaxBatch is the largest
	// number of instances predicted in one pass (default min(DefaultMaxBatch, MaxInstances));
	// KeepSamples is not supported. With the Weight and Local strategies an instance's samples
	// do not depend on MaxBatch or on the other instances of its request, and its outputs agree
	// to float32 rounding (the kernels' summation order depends on how many instances share a
	// pass: the last digits may differ); for Auto the samples may differ.
	Options runtime.Options
	// Load configures how the file is loaded (LoadOptions.KeepF16), on Reload too. Unless Mmap
	// is set, the server reads the file into memory (LoadOptions.NoMmap whatever Load says).
	Load runtime.LoadOptions
	// Mmap maps the file instead of reading it: less memory for a large model, but the file
	// must then only be replaced by rename — copied over in place (cp, scp) while served, it
	// is truncated under the mapping and the fault ends the whole server (SIGBUS).
	Mmap bool
}

// ValidName reports whether name may name a model.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLen || name[0] == '.' {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func validateModels(models []ModelConfig) error {
	if len(models) == 0 {
		return errors.New("serve: no models")
	}
	if len(models) > MaxModels {
		return fmt.Errorf("serve: %d models (limit %d)", len(models), MaxModels)
	}
	seen := map[string]bool{}
	for i, m := range models {
		if !ValidName(m.Name) {
			return fmt.Errorf("serve: model %d: name %.80q must be 1 to %d letters, digits, '.', '_' or '-' (not starting with '.')", i, m.Name, MaxNameLen)
		}
		if seen[m.Name] {
			return fmt.Errorf("serve: model name %q given twice", m.Name)
		}
		seen[m.Name] = true
		if m.Path == "" {
			return fmt.Errorf("serve: model %q: no file", m.Name)
		}
		if m.Options.KeepSamples {
			return fmt.Errorf("serve: model %q: KeepSamples is not supported", m.Name)
		}
		if m.Options.MaxBatch < 0 || m.Options.MaxBatch > MaxInstancesLimit {
			return fmt.Errorf("serve: model %q: MaxBatch %d out of range (0 to %d)", m.Name, m.Options.MaxBatch, MaxInstancesLimit)
		}
	}
	return nil
}
