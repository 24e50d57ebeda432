package serve

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

// loaded is one load of a model file with its pool of Predictors. It is reference-counted:
// the server holds one reference while it is the model's current load, each request one while
// it uses it; the last release closes the Predictors and the Model (whose file is
// memory-mapped), so a reload never unmaps a file a request still reads.
type loaded struct {
	name, path string
	model      *runtime.Model
	opts       runtime.Options // the Predictors' options, defaults filled in
	pool       chan *runtime.Predictor
	preds      []*runtime.Predictor
	refs       atomic.Int64
	loadedAt   time.Time
	// info is the model's description (GET /v1/models/NAME), encoded once.
	info []byte
	// classNames are the class names as JSON strings (nil without names).
	classNames [][]byte
	// preprocess reports that the model records an input preprocessing (raw inputs are
	// normalised before predicting), read once at load.
	preprocess bool
	bufs       sync.Pool // *reqBuf
	// bodies pools request body buffers (*[]byte) apart from bufs: a request takes its reqBuf
	// only once its body has arrived, so that one waiting for its body holds nothing but the
	// buffer for it, which Config.MaxPendingBytes counts.
	bodies sync.Pool
	closed chan struct{}
}

// reqBuf is one request's memory but its body, pooled per load: the parsed inputs, the
// network's inputs, the predictions and the encoded response.
type reqBuf struct {
	raw, x []float32
	preds  []runtime.Prediction
	out    []byte
}

// load reads path and makes conc Predictors. On error nothing is left open.
func load(mc ModelConfig, cfg Config) (*loaded, error) {
	lo := mc.Load
	lo.NoMmap = lo.NoMmap || !mc.Mmap
	m, err := runtime.LoadWith(mc.Path, lo)
	if err != nil {
		return nil, err
	}
	opts := mc.Options
	if opts.MaxBatch == 0 {
		opts.MaxBatch = min(DefaultMaxBatch, cfg.MaxInstances)
	}
	l := &loaded{name: mc.Name, path: mc.Path, model: m, pool: make(chan *runtime.Predictor, cfg.Concurrency),
		loadedAt: time.Now(), closed: make(chan struct{})}
	for range cfg.Concurrency {
		p, err := m.NewPredictor(opts)
		if err != nil {
			l.closeAll()
			return nil, fmt.Errorf("%s: predictor %d of %d: %w", mc.Path, len(l.preds)+1, cfg.Concurrency, err)
		}
		l.preds = append(l.preds, p)
		l.pool <- p
	}
	l.opts = l.preds[0].Options()
	if pre := m.Preprocessing(); pre != nil {
		l.preprocess = true
		for _, n := range pre.ClassNames {
			b, _ := json.Marshal(n)
			l.classNames = append(l.classNames, b)
		}
	}
	l.info, err = json.Marshal(l.describe())
	if err != nil {
		l.closeAll()
		return nil, fmt.Errorf("%s: %w", mc.Path, err)
	}
	l.refs.Store(1)
	return l, nil
}

func (l *loaded) closeAll() {
	for _, p := range l.preds {
		p.Close()
	}
	l.preds = nil
	l.model.Close()
	close(l.closed)
}

// acquire adds a reference; the caller must hold a reference already or the server's lock.
func (l *loaded) acquire() { l.refs.Add(1) }

// release drops a reference; the last one closes the load.
func (l *loaded) release() {
	switch n := l.refs.Add(-1); {
	case n == 0:
		l.closeAll()
	case n < 0:
		panic("serve: model released more often than acquired")
	}
}

// ModelInfo describes a served model (GET /v1/models and /v1/models/NAME).
type ModelInfo struct {
	Name          string              `json:"name"`
	File          string              `json:"file"`
	Task          runtime.Task        `json:"task"`
	InputShape    []int               `json:"input_shape"`
	InputSize     int                 `json:"input_size"`
	Outputs       int                 `json:"outputs"`
	Members       int                 `json:"members"`
	Stochastic    bool                `json:"stochastic"`
	Samples       int                 `json:"samples"`
	Seed          uint64              `json:"seed"`
	Strategy      string              `json:"strategy"`
	Threads       int                 `json:"threads"`
	Mean          bool                `json:"mean"`
	Adaptive      bool                `json:"adaptive"`
	MaxBatch      int                 `json:"max_batch"`
	Predictors    int                 `json:"predictors"`
	Preprocessing *runtime.Preprocess `json:"preprocessing"`
	Policy        *runtime.Policy     `json:"policy"` // the one predictions are decided with: Options.Policy, else the file's
	ClassNames    []string            `json:"class_names,omitempty"`
	LoadedAt      time.Time           `json:"loaded_at"`
}

func (l *loaded) describe() ModelInfo {
	m := l.model
	spec := m.Spec()
	pre := m.Preprocessing()
	var names []string
	if pre != nil {
		names = pre.ClassNames
	}
	// The policy the predictions are decided with: the configured one, else the file's.
	pol := l.opts.Policy
	if pol == nil {
		pol = m.Policy()
	}
	return ModelInfo{Name: l.name, File: l.path, Task: m.Task(), InputShape: spec.InputShape, InputSize: m.InputSize(),
		Outputs: m.OutputSize(), Members: m.Members(), Stochastic: m.Stochastic(), Samples: l.opts.Samples,
		Seed: l.opts.Seed, Strategy: l.opts.Strategy.String(), Threads: l.opts.Threads, Mean: l.opts.Mean,
		Adaptive: l.opts.Adaptive, MaxBatch: l.opts.MaxBatch, Predictors: len(l.preds), Preprocessing: pre,
		Policy: pol, ClassNames: names, LoadedAt: l.loadedAt.UTC()}
}

func (l *loaded) getBuf() *reqBuf {
	if b, ok := l.bufs.Get().(*reqBuf); ok {
		return b
	}
	return &reqBuf{}
}

func (l *loaded) putBuf(b *reqBuf) {
	// A request of an unusual size must not pin its memory for ever.
	if cap(b.raw) > 1<<20 || cap(b.out) > 1<<20 {
		return
	}
	l.bufs.Put(b)
}

// getBody returns a pooled body buffer, emptied (a new empty one if there is none). The pool
// holds the *[]byte itself, so that returning a buffer allocates nothing.
func (l *loaded) getBody() *[]byte {
	if b, ok := l.bodies.Get().(*[]byte); ok {
		*b = (*b)[:0]
		return b
	}
	return new([]byte)
}

func (l *loaded) putBody(b *[]byte) {
	if cap(*b) == 0 || cap(*b) > 1<<20 { // an unusual size must not pin its memory for ever
		return
	}
	l.bodies.Put(b)
}
