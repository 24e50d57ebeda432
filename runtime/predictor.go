package runtime

import (
	"errors"
	"fmt"
	"math"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/edgebnn/edgebnn/kernels"
)

// Strategy selects how weights are sampled.
type Strategy int

const (
	// Auto picks, per dense layer, batch size and number of samples, whichever of Weight and
	// Local costs less (multiply-adds and normal draws). The samples an input gets then depend
	// on the batch size and K; choose Weight or Local for samples that do not. For a model whose
	// decision policy records the strategy it was calibrated with (Policy.Strategy), Auto — the
	// zero Options — means that strategy.
	Auto Strategy = iota
	// Weight draws whole weight matrices per sample, shared by every input of a batch. It works for
	// every layer kind.
	Weight
	// Local samples each dense layer's outputs per input (MATH.md §1 and §2), which is exact per
	// input and much cheaper for small batches; an inducing convolution's outputs are sampled per
	// input with W shared by the input's positions where that costs less than a weight sample (the
	// gram path, inducing_gram.go), other conv layers sample weights. The inputs of a batch share
	// each sample's random stream, not its W.
	Local
)

// String returns "auto", "weight" or "local".
func (s Strategy) String() string {
	switch s {
	case Auto:
		return "auto"
	case Weight:
		return "weight"
	case Local:
		return "local"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// MarshalText implements encoding.TextMarshaler: the name String gives (a JSON or flag value).
func (s Strategy) MarshalText() ([]byte, error) {
	if s < Auto || s > Local {
		return nil, fmt.Errorf("runtime: unknown strategy %d", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler with ParseStrategy (for flag.TextVar and
// JSON configurations).
func (s *Strategy) UnmarshalText(b []byte) error {
	v, err := ParseStrategy(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// ParseStrategy parses "auto", "weight" or "local" ("" is auto, the default).
func ParseStrategy(s string) (Strategy, error) {
	switch s {
	case "auto", "":
		return Auto, nil
	case "weight":
		return Weight, nil
	case "local":
		return Local, nil
	}
	return 0, fmt.Errorf("runtime: strategy %q is not auto, weight or local", s)
}

// Options configure a Predictor.
type Options struct {
	// Samples is the number K of Monte Carlo samples per prediction. By default it is the K
	// the decision policy (Options.Policy, else the model's) was fitted with, where the policy
	// records one (Policy.Samples), else 32. A deterministic model always uses one. For an
	// ensemble model (Model.Members() = M > 1) sample s runs member s mod M, so without a
	// policy's K the default is M: each member once, the deep-ensemble predictive. A Samples
	// that is not a multiple of M weights the first Samples mod M members once more than the
	// others.
	Samples int
	// Seed selects the random streams; the same seed gives bit-identical predictions.
	Seed uint64
	// Strategy selects weight or per-input (local) sampling; Auto (the zero value) the cheaper per
	// layer, or the decision policy's recorded strategy (Policy.Strategy) where it has one.
	Strategy Strategy
	// MaxBatch is the largest number of inputs processed at once (default 1); PredictBatch splits
	// larger batches. Scratch memory grows with it.
	MaxBatch int
	// KeepSamples makes every Prediction carry the per-sample outputs (logits or regression means):
	// Samples × outputs values each, in memory the caller's Predictions hold; NewPredictor counts
	// MaxBatch of them against MaxMemory (a PredictBatch of more inputs holds more).
	KeepSamples bool
	// Mean predicts once at the posterior mean weights (conditional mean for inducing layers, U at
	// its mean, Ensemble-U member 0), without noise. For an ensemble of networks (Model.Members()
	// = M > 1), whose average weights are no network anyone trained, Mean instead runs each member
	// once (Samples = M, whatever Samples says): the deep-ensemble predictive, which involves no
	// randomness either.
	Mean bool
	// Threads is the number of goroutines that draw the samples of one prediction in parallel
	// (default 1). Results are bit-identical whatever the number of threads. With more than one,
	// the Predictor keeps K × MaxBatch outputs and its worker goroutines run until Close.
	Threads int
	// Policy is the decision rule applied to every prediction (Prediction.Decision); nil means
	// the model's own (Model.Policy), if any. Its recorded Strategy is the default of Strategy
	// (Auto).
	Policy *Policy
	// PolicySeed predicts with the seed the policy's thresholds were fitted with (Policy.Seed),
	// where it records one, instead of Seed: every input then gets the draws it got at
	// calibration. edgebnn predict and serve set it unless --seed is given.
	PolicySeed bool
	// Adaptive draws the samples in rounds of AdaptiveRound and stops as soon as the policy's
	// decision for an input cannot change with probability at least 1 − AdaptiveDelta had all
	// Samples been drawn (a sequential test on the running estimates, docs/ADAPTIVE.md); then
	// Prediction.Samples < Samples. It needs a policy with at least one threshold.
	Adaptive bool
	// AdaptiveRound is the number of samples per round (default 8; rounded up to the sample
	// block — for a mixture of M posteriors to M blocks — so the samples are the same as
	// without Adaptive).
	AdaptiveRound int
	// AdaptiveDelta bounds the probability that an early decision differs from the full-K one
	// (default 0.01).
	AdaptiveDelta float64
	// MaxMemory bounds the bytes the Predictor may allocate (activations, scratch, accumulators
	// and its warm-up): NewPredictor computes what it needs before allocating anything and
	// refuses above it with an error saying how much it would need (ErrMemory). 0 means the
	// machine's physical memory (DefaultMaxMemory); negative means no limit.
	MaxMemory int64
}

// ErrMemory is matched (errors.Is) by NewPredictor's error when the Predictor would need more
// memory than Options.MaxMemory (or than the address space), and by a model's load error when a
// layer's buffers would exceed their bound or what its layers derive their limit
// (MaxBernsteinTableBytes, MaxInducingBytes).
var ErrMemory = errors.New("not enough memory")

// DefaultMaxMemory is the memory limit a Predictor has by default: the machine's physical memory
// (MemTotal of /proc/meminfo), or 1 TiB where that cannot be read, or the memory limit of the
// process's control group (a container's: cgroup v2 memory.max, v1 memory.limit_in_bytes) where
// that is lower; at most 3 GiB on 32-bit platforms, whose address space is 4 GiB.
func DefaultMaxMemory() int64 {
	m := physicalMemory()
	if c, ok := cgroupMemoryLimit(os.ReadFile); ok {
		m = min(m, c)
	}
	if strconv.IntSize == 32 {
		m = min(m, 3<<30)
	}
	return m
}

func physicalMemory() int64 {
	const fallback = 1 << 40
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return fallback
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil || kb <= 0 || kb > fallback>>10 {
				return fallback
			}
			return kb << 10
		}
	}
	return fallback
}

// sizeString prints a byte count with its binary-prefixed size.
func sizeString(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%d bytes (%.1f GiB)", b, float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%d bytes (%.1f MiB)", b, float64(b)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", b)
}

// predictorBytes is an upper bound on what NewPredictor allocates for opts (after defaults)
// with sample blocks of block, and whether the count overflowed int64.
func (m *Model) predictorBytes(opts Options, block, maxAct int, scratch int64) (int64, bool) {
	const huge = int64(1) << 62
	n, out, in := int64(opts.MaxBatch), int64(m.outShape.size()), int64(m.inShape.size())
	var total int64
	ok := true
	add := func(vals ...int64) {
		p := int64(1)
		for _, v := range vals {
			if v < 0 || (v > 0 && p > huge/v) {
				ok = false
				return
			}
			p *= v
		}
		if total > huge-p {
			ok = false
			return
		}
		total += p
	}
	if d, has := (&Predictor{m: m}).firstLocal(); has {
		add(4, d.post.prepSize(opts.MaxBatch))
	}
	add(4, n, in, 2)  // zeros, and the warm-up's zero batch
	add(8, n, out, 2) // sum, sum2
	if m.regression {
		add(8, n, out) // shift
		add(1, n)      // shiftSet
	}
	add(8, n, 2)                // sumH, prodS
	add(4, int64(block), out+2) // probs, and the sums of SoftmaxMoments
	add(4, n, out, 2)           // the warm-up's predictions (Probs and Std)
	add(4, n, out, 2)           // the predictions NewPredictor warms up (reused afterwards)
	if opts.Adaptive {          // the kept per-sample values, entropies and flags
		add(4, int64(opts.Samples), n, out)
		add(8, int64(opts.Samples), n)
		add(n)
	}
	if opts.Threads > 1 { // j.outs
		add(4, int64(opts.Samples), n, out)
	}
	if opts.KeepSamples { // the Predictions' kept outputs (Prediction.Outputs, grown by Predict)
		add(4, int64(opts.Samples), n, out)
	}
	// Per worker: its scratch, FA draws, and the activation buffers runSeq holds at once.
	bufs := int64(2 + liveBuffers(m.nodes))
	for t := 0; t < opts.Threads; t++ {
		add(4, scratch)
		if m.fa != nil {
			add(4, int64(block), int64(m.fa.rank))
		}
		if gs, gsc := m.globalSizes(); gs > 0 {
			add(4, int64(block), int64(gs))
			add(4, int64(gsc))
		}
		add(4, bufs, int64(maxAct), n, int64(block))
	}
	return total, ok
}

// liveBuffers bounds the activation buffers runSeq holds at once for nodes beyond its input: the
// current and the next for a plain layer; a residual block holds its input, its shortcut's result
// and its body's buffers.
func liveBuffers(nodes []node) int {
	most := 1
	for _, nd := range nodes {
		if r, ok := nd.(*residual); ok {
			most = max(most, 2+liveBuffers(r.shortcut)+liveBuffers(r.body))
			continue
		}
		most = max(most, 2)
	}
	return most
}

// Prediction is the predictive distribution for one input. Its slices are reused by later calls
// that write into the same Prediction — which is what keeps the prediction path free of
// allocations — so a copy of the struct shares them with the next prediction: keep one with
// Clone.
type Prediction struct {
	// Classification: predictive probabilities p̄ = (1/K) Σ_k softmax(logits_k), the per-class
	// standard deviation of softmax(logits_k) over the samples, the most probable class and its
	// probability.
	Probs      []float32
	Std        []float32
	Class      int
	Confidence float32
	// Classification (nats): total entropy H[p̄], expected entropy (1/K) Σ H[p_k] (aleatoric) and
	// mutual information, their difference (epistemic, ≥ 0).
	Entropy, ExpectedEntropy, MutualInfo float64
	// Regression: predictive mean, total variance (noise + epistemic) and the epistemic part (the
	// variance of the per-sample means), per output.
	Mean, Var, EpistemicVar []float32
	// Outputs holds the K per-sample outputs (K × outputs) when Options.KeepSamples is set.
	Outputs []float32
	// Samples is the number of posterior samples the prediction used: Options.Samples, or
	// fewer when Options.Adaptive stopped early.
	Samples int
	// Decision is the policy's verdict (Options.Policy, else the model's; Policy.Decide): act
	// on the prediction or abstain, and why.
	Decision Decision

	nonFinite bool // some summary is NaN or infinite (PredictBatch then returns a NonFiniteError)
}

// Predictor computes predictions with one Model. It owns scratch memory and is not safe for
// concurrent use; make one per goroutine (the Model is shared).
type Predictor struct {
	m    *Model
	opts Options
	// closed is set by Close.
	closed bool
	// first is the index of the first stochastic top-level node (len(nodes) if none).
	first int
	// workers[0] runs on the caller's goroutine, the others on their own.
	workers []*worker
	job     *job
	stop    *stopper
	// prep holds the first stochastic layer's input projections when it samples locally.
	prep []float32
	// block is the unit of samples drawn together: a pass through the network draws one block,
	// or (pass > block) several whole blocks at once.
	block, pass int
	// zeros (MaxBatch inputs' worth) checks inputs for NaN and infinities (Σ 0·x).
	zeros []float32
	// Accumulators, MaxBatch × outputs.
	sum, sum2 []float64
	sumH      []float64
	// shift holds, for a regression model, each input's first accumulated sample (outputs): sum
	// and sum2 add the samples' deviations from it, so that the variance Σd²/K − (Σd/K)² does not
	// cancel as E[y²] − E[y]² does for outputs far from zero (a mean of 3e7 with a spread of 1
	// gave 0 or 122 at K = 1000 and 10 000). shiftSet says which inputs have theirs.
	shift    []float64
	shiftSet []bool
	// prodS is each input's running product of the samples' softmax sums Σ e (at least 1 each)
	// whose logarithm is not yet in sumH: one logarithm per input and prediction instead of one
	// per sample (see accumulate).
	prodS []float64
	// probs, expSum and expDot hold a pass's probabilities and kernels.SoftmaxMoments's sums.
	probs, expSum, expDot []float32
	one                   [1]Prediction
	// out is the chunk being predicted (for KeepSamples).
	out []Prediction
	// policy decides each prediction; adapt is the adaptive sampler's state (nil without it).
	policy *Policy
	adapt  *adaptive
}

// fwdCtx is the state passed to the layers: the block of samples being drawn (block samples
// from sample on), the strategy, and the worker's scratch.
type fwdCtx struct {
	seed     uint64
	sample   int
	block    int
	strategy Strategy
	mean     bool
	// dry makes the layers that sample leave their outputs as they are (NewPredictor's
	// warm-up passes that only create activation buffers).
	dry     bool
	scratch []float32
	// faHs holds the FA latent h of each sample of the block (block × rank); faH is the current
	// sample's while a layer draws whole weight matrices.
	faHs, faH []float32
	// glob is the model's global inducing posterior (nil without one); guHs holds the U_{1:L}
	// of each sample of the block (block × glob.size()), guH the current sample's while a layer
	// draws whole weight matrices, guScratch the scratch of drawing one U_{1:L}.
	glob                 *globalU
	guHs, guH, guScratch []float32
	// rng is the current layer's random stream (kept here so that it does not escape to the heap).
	rng kernels.Stream
}

// worker owns the scratch memory of one thread: the forward context and the activation buffers.
type worker struct {
	id    int
	fc    fwdCtx
	bufs  [][]float32
	free  []int
	bufSz int
	wake  chan struct{} // nil for worker 0
}

// job is one chunk's work, shared by the workers (written before they are woken, read-only while
// they run, except for each worker's own part of outs).
type job struct {
	wg       sync.WaitGroup
	nodes    []node // the nodes from the first stochastic one on
	pre      []float32
	cached   *dense // the first stochastic layer, when prep holds its projections
	prep     []float32
	n        int
	from     int // the samples drawn are from … samples-1
	samples  int
	threads  int
	outSz    int
	outs     []float32 // threads > 1: samples × n × outSz
	strategy Strategy
	block    int
	pass     int // samples per pass of whole blocks (Predictor.pass)
	// The samples drawn are one member's of a mixture: local sample l is the prediction's sample
	// l·stride + offset (stride 1, offset 0 for a single network).
	stride, offset int
}

// stopper ends the worker goroutines once, from Close or when the Predictor is collected.
type stopper struct {
	once sync.Once
	wake []chan struct{}
}

func (s *stopper) close() {
	s.once.Do(func() {
		for _, c := range s.wake {
			close(c)
		}
	})
}

// defaultSamples is the K of Options.Samples = 0: the K the policy's thresholds were fitted with
// where it records one (with another K the uncertainty it thresholds is estimated differently),
// else one sample per member of an ensemble, else 32 (a mixture of ensembles: 32 or more, the
// same number from every member).
func (m *Model) defaultSamples(policy *Policy) int {
	switch {
	case policy != nil && policy.Samples > 0:
		return policy.Samples
	case m.parts != nil:
		return (max(32, m.members) + m.members - 1) / m.members * m.members
	case m.members > 1:
		return m.members
	}
	return 32
}

// PredictorSamples is the K a Predictor made with opts draws per prediction: opts.Samples, or
// its default where that is 0 (Options.Samples says how it is chosen); one for a deterministic
// model or with Options.Mean, the M members once each for Options.Mean on an ensemble. It does
// not validate opts (NewPredictor does).
func (m *Model) PredictorSamples(opts Options) int {
	policy := m.policy
	if opts.Policy != nil {
		policy = opts.Policy
	}
	k := opts.Samples
	if k == 0 {
		k = m.defaultSamples(policy)
	}
	switch {
	case opts.Mean && m.members > 1:
		k = m.members
	case !m.stochastic || opts.Mean:
		k = 1
	}
	return k
}

// Clone returns a copy of p that shares no slice with it, to keep after p is written again.
func (p *Prediction) Clone() Prediction {
	c := *p
	c.Probs, c.Std = slices.Clone(p.Probs), slices.Clone(p.Std)
	c.Mean, c.Var, c.EpistemicVar = slices.Clone(p.Mean), slices.Clone(p.Var), slices.Clone(p.EpistemicVar)
	c.Outputs = slices.Clone(p.Outputs)
	return c
}

// NewPredictor makes a Predictor. It sizes every buffer up front and runs one warm-up pass, so
// that Predict and PredictBatch allocate nothing afterwards — once the Predictions they write
// into have been used (a new Prediction's slices are made on its first call, then reused).
func (m *Model) NewPredictor(opts Options) (*Predictor, error) {
	if !m.use() {
		return nil, ErrClosed // its warm-up would read the unmapped file
	}
	defer m.done()
	policy := m.policy
	if opts.Policy != nil {
		if err := opts.Policy.Validate(m.spec.Task); err != nil {
			return nil, fmt.Errorf("runtime: Options.Policy: %w", err)
		}
		policy = opts.Policy.clone()
	}
	if policy != nil {
		// The strategy and seed the thresholds were fitted with, where recorded (Validate has
		// checked the name); the mean network samples nothing (and Local would compute its
		// variances for nothing).
		if st, err := ParseStrategy(policy.Strategy); err == nil && opts.Strategy == Auto && !opts.Mean {
			opts.Strategy = st
		}
		if opts.PolicySeed && policy.Seed != nil {
			opts.Seed = *policy.Seed
		}
	}
	opts.PolicySeed = false // Seed is the one predictions use (Options reports it)
	if opts.Samples < 0 || opts.Samples > 1<<20 {
		return nil, fmt.Errorf("runtime: %d samples is out of range (1 to %d)", opts.Samples, 1<<20)
	}
	opts.Samples = m.PredictorSamples(opts)
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 1
	}
	if opts.Threads == 0 {
		opts.Threads = 1
	}
	if opts.MaxBatch < 0 || opts.MaxBatch > 1<<16 {
		return nil, fmt.Errorf("runtime: max batch %d is out of range (1 to %d)", opts.MaxBatch, 1<<16)
	}
	if opts.Threads < 0 || opts.Threads > 1024 {
		return nil, fmt.Errorf("runtime: %d threads is out of range (1 to 1024)", opts.Threads)
	}
	if opts.Strategy < Auto || opts.Strategy > Local {
		return nil, fmt.Errorf("runtime: unknown strategy %d", opts.Strategy)
	}
	opts.Threads = min(opts.Threads, opts.Samples)
	n := opts.MaxBatch
	out := m.outShape.size()
	if _, ok := elements([]int{opts.Samples, n, out}); opts.Threads > 1 && !ok {
		return nil, fmt.Errorf("runtime: %d samples × batch %d × %d outputs is too large to keep for %d threads: %w", opts.Samples, n, out, opts.Threads, ErrMemory)
	}
	if _, ok := elements([]int{opts.Samples, out}); opts.KeepSamples && !ok {
		// A Prediction's Outputs (Samples × outputs, sized in int by Predict).
		return nil, fmt.Errorf("runtime: %d samples × %d outputs is too large to keep in a prediction (Options.KeepSamples; limit %d values): %w", opts.Samples, out, maxTensor, ErrMemory)
	}
	p := &Predictor{m: m, opts: opts, job: &job{}, policy: policy}
	maxAct := m.inShape.size()
	walkNodes(m.nodes, func(nd node) { maxAct = max(maxAct, nd.outSize()) })
	p.block = blockSize(opts.Samples, n, maxAct)
	p.pass = p.block
	if m.passMerge() {
		p.pass = passSize(opts.Samples, n, maxAct, p.block)
	}
	if err := p.setAdaptive(); err != nil {
		return nil, err
	}
	// Sizes in int64 until the total is known to fit (sizes.go): scratch (values) included.
	scratch64 := int64(0)
	walkNodes(m.nodes, func(nd node) { scratch64 = max(scratch64, nd.scratchSize(n, p.pass, opts.Strategy, opts.Mean)) })
	limit, whose := opts.MaxMemory, "Options.MaxMemory"
	if limit == 0 {
		limit = DefaultMaxMemory()
	}
	if limit < 0 || limit > maxAddressable {
		limit, whose = maxAddressable, "the address space"
	}
	if need, ok := m.predictorBytes(p.opts, p.pass, maxAct, scratch64); !ok || need > limit {
		what := "more than 4 EiB"
		if ok {
			what = sizeString(need)
		}
		return nil, fmt.Errorf("runtime: a predictor for batch %d, %d samples and %d threads needs %s for activations (largest layer output %d values, input %v) and scratch (%d values); the limit is %s (%s): %w",
			n, opts.Samples, opts.Threads, what, maxAct, m.inShape, scratch64, sizeString(limit), whose, ErrMemory)
	}
	scratch := int(scratch64)
	p.first = m.firstStochastic()
	if d, ok := p.firstLocal(); ok {
		p.prep = make([]float32, int(d.post.prepSize(n)))
	}
	p.zeros = make([]float32, max(n*m.inShape.size(), 1))
	p.allocAdaptive()
	p.sum, p.sum2 = make([]float64, n*out), make([]float64, n*out)
	p.sumH, p.prodS = make([]float64, n), make([]float64, n)
	if m.regression {
		p.shift, p.shiftSet = make([]float64, n*out), make([]bool, n)
	}
	p.probs = make([]float32, p.pass*out)
	p.expSum, p.expDot = make([]float32, p.pass), make([]float32, p.pass)
	if opts.Threads > 1 {
		p.job.outs = make([]float32, opts.Samples*n*out)
		p.stop = &stopper{}
	}
	for t := 0; t < opts.Threads; t++ {
		w := &worker{id: t, bufSz: maxAct * n * p.pass,
			fc: fwdCtx{seed: opts.Seed, strategy: opts.Strategy, mean: opts.Mean, scratch: make([]float32, scratch)}}
		if m.fa != nil {
			w.fc.faHs = make([]float32, p.pass*m.fa.rank)
		}
		if gs, gsc := m.globalSizes(); gs > 0 {
			w.fc.glob = m.glob
			w.fc.guHs = make([]float32, p.pass*gs)
			w.fc.guScratch = make([]float32, gsc)
		}
		if t > 0 {
			w.wake = make(chan struct{})
			p.stop.wake = append(p.stop.wake, w.wake)
			go w.loop(p.job)
		}
		p.workers = append(p.workers, w)
	}
	if p.stop != nil {
		goruntime.AddCleanup(p, func(s *stopper) { s.close() }, p.stop)
	}
	// Warm up: a pass over a zero batch, one full pass per thread, creates every activation
	// buffer. Under Auto the first stochastic layer may or may not share its projections between
	// samples (setup), so dry passes under Weight and Local create the buffers of both first: in
	// them the layers that sample do nothing, so that Auto's scratch need not hold what Weight or
	// Local alone would use (a whole weight matrix where Auto takes the gram path).
	saved := p.opts.Samples
	p.opts.Samples = min(saved, opts.Threads*p.pass)
	warm := make([]Prediction, n)
	zeros := make([]float32, n*m.inShape.size())
	if opts.Strategy == Auto {
		p.setDry(true)
		p.predictChunk(zeros, warm, n, Weight)
		p.predictChunk(zeros, warm, n, Local)
		p.setDry(false)
	}
	p.predictChunk(zeros, warm, n, opts.Strategy)
	p.opts.Samples = saved
	for _, w := range p.workers {
		// Room to mark every buffer free (reset): the warm-up's last pass creates buffers after its
		// own reset, and the first call's reset would grow the list.
		w.free = slices.Grow(w.free, len(w.bufs)-len(w.free))
	}
	return p, nil
}

// setDry sets every worker's fwdCtx.dry.
func (p *Predictor) setDry(dry bool) {
	for _, w := range p.workers {
		w.fc.dry = dry
	}
}

// Close stops the Predictor's worker goroutines (Options.Threads > 1); it must not be used
// afterwards (a prediction after Close is ErrClosed). Without Close they stop when the Predictor
// is garbage collected.
func (p *Predictor) Close() error {
	if p.stop != nil {
		p.stop.close()
	}
	p.closed = true
	return nil
}

// ErrClosed is the error of a prediction from a Predictor, or a Model, that was closed: the
// workers are gone and a model's mapped file is unmapped, so the call would otherwise crash.
var ErrClosed = errors.New("runtime: predictor or model is closed")

// maxBlockSamples is the most samples drawn together in one pass, and maxBlockValues bounds the
// activations of one pass (values per buffer), so that large networks go one sample at a time.
const (
	maxBlockSamples = 8
	maxBlockValues  = 1 << 18
)

// maxPassSamples is the most samples a pass of whole blocks draws (Predictor.pass).
const maxPassSamples = 32

// passSize is the number of samples a pass of whole blocks of block samples draws together, for
// batches of n inputs whose largest activation has maxAct values: as many whole blocks as the
// samples fill, up to maxPassSamples and maxBlockValues values per activation buffer. Threads
// does not enter: each worker takes a contiguous range of blocks and draws its whole blocks in
// passes of at most this size (worker.run); the arithmetic of a sample does not depend on how
// many blocks a pass holds (Model.passMerge), so the predictions do not either.
func passSize(samples, n, maxAct, block int) int {
	b := maxPassSamples
	if per := prod(n, maxAct); per > 0 {
		b = min(b, int(maxBlockValues/per))
	}
	return max(block, min(b, samples)/block*block)
}

// passMerge reports whether whole blocks of samples may be drawn in one pass: every node after
// the deterministic prefix treats its rows alike whatever their number — elementwise and
// per-image layers, convolutions (one product per image), and inducing layers, whose local
// sampler's products go through kernels.GemmPacked with at least one block of rows, row for row
// the same in any number of rows — and the model has no FA posterior or mixture members (their
// per-block state is sized by block). Other layers (a Linear layer's plain Gemm over all rows,
// whose blocking depends on their number) keep one block per pass.
func (m *Model) passMerge() bool {
	if m.fa != nil || m.parts != nil {
		return false
	}
	ok := true
	var walk func(nodes []node)
	walk = func(nodes []node) {
		for _, nd := range nodes {
			switch v := nd.(type) {
			case *residual:
				walk(v.shortcut)
				walk(v.body)
			case *dense:
				if _, ind := v.post.(*inducing); !ind && (v.post != nil || !v.conv) {
					ok = false
				}
			case *activation, *pool, *adaptivePool, *batchNorm, *dropout:
			default:
				ok = false
			}
		}
	}
	walk(m.nodes[m.firstStochastic():])
	return ok
}

// firstStochastic is the index of the first stochastic top-level node (len(nodes) if none): the
// nodes before it are the deterministic prefix, run once per batch.
func (m *Model) firstStochastic() int {
	for i, nd := range m.nodes {
		if nd.stochastic() {
			return i
		}
	}
	return len(m.nodes)
}

// blockSize is the number of samples drawn together for batches of n inputs whose largest
// activation has maxAct values. It depends on neither Threads nor GOMAXPROCS, so the samples'
// arithmetic, and the predictions, do not either.
func blockSize(samples, n, maxAct int) int {
	b := min(samples, maxBlockSamples)
	if per := prod(n, maxAct); per > 0 {
		b = min(b, int(maxBlockValues/per))
	}
	return max(b, 1)
}

func walkNodes(nodes []node, fn func(node)) {
	for _, nd := range nodes {
		fn(nd)
		if r, ok := nd.(*residual); ok {
			walkNodes(r.body, fn)
			walkNodes(r.shortcut, fn)
		}
	}
}

// firstLocal returns the first stochastic top-level node when it is a dense layer that can sample
// locally; its input-only projections are then computed once per batch instead of per sample.
func (p *Predictor) firstLocal() (*dense, bool) { return p.firstLocalIn(p.m.nodes) }

// firstLocalIn is firstLocal for the nodes of one member of a mixture (or the model's own).
func (p *Predictor) firstLocalIn(nodes []node) (*dense, bool) {
	if p.first >= len(nodes) || p.opts.Strategy == Weight {
		return nil, false
	}
	d, ok := nodes[p.first].(*dense)
	if !ok || d.conv || d.post == nil || !canLocal(d.post) {
		return nil, false
	}
	return d, true
}

// Options returns the predictor's options with defaults filled in; Policy is the policy its
// predictions are decided by (Options.Policy, else the model's; nil: none).
func (p *Predictor) Options() Options {
	o := p.opts
	o.Policy = p.policy.clone()
	return o
}

// ScratchBytes is the memory the Predictor holds for activations, sampled weights, kept outputs
// and accumulators, over all its threads.
func (p *Predictor) ScratchBytes() int64 {
	b := int64(len(p.prep)+len(p.probs)+len(p.expSum)+len(p.expDot)+len(p.job.outs)+len(p.zeros)) * 4
	for _, w := range p.workers {
		b += int64(len(w.fc.scratch)+len(w.fc.faHs)+len(w.fc.guHs)+len(w.fc.guScratch)) * 4
		for _, buf := range w.bufs {
			b += int64(len(buf)) * 4
		}
	}
	return b + int64(len(p.sum)+len(p.sum2)+len(p.sumH)+len(p.prodS)+len(p.shift))*8 + int64(len(p.shiftSet))
}

// Predict computes the predictive distribution of one input (Model.InputSize values; images are
// channel-major, C×H×W). A wrong length or a NaN or infinite value is an error.
func (p *Predictor) Predict(x []float32, out *Prediction) error {
	if out == nil {
		return errors.New("runtime: Predict: the *Prediction to write is nil")
	}
	p.one[0] = *out
	err := p.PredictBatch(x, p.one[:])
	*out = p.one[0]
	p.one[0] = Prediction{}
	return err
}

// PredictBatch computes predictions for len(out) inputs stored one after the other in xs.
func (p *Predictor) PredictBatch(xs []float32, out []Prediction) error {
	if p.closed || !p.m.use() {
		return ErrClosed
	}
	defer p.m.done() // a Close from another goroutine waits for this call
	in := p.m.inShape.size()
	if need := prod(len(out), in); int64(len(xs)) != need { // int64: len(out)·in may wrap on 32-bit
		if len(out) == 1 {
			return fmt.Errorf("runtime: input has %d values; the model takes %d", len(xs), in)
		}
		return fmt.Errorf("runtime: batch of %d inputs needs %d values, got %d (the model takes %d per input)", len(out), need, len(xs), in)
	}
	// Σ 0·x is NaN exactly when some x is NaN or infinite: one vectorised pass per chunk, and the
	// value is located only then.
	for start := 0; start < len(xs); start += len(p.zeros) {
		chunk := xs[start:min(start+len(p.zeros), len(xs))]
		if s := kernels.Dot(chunk, p.zeros[:len(chunk)]); s == s {
			continue
		}
		for i, v := range chunk {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				i += start
				return &InputValueError{Input: i / in, Value: i % in, NaN: math.IsNaN(float64(v))}
			}
		}
	}
	var bad *NonFiniteError
	for start := 0; start < len(out); start += p.opts.MaxBatch {
		n := min(p.opts.MaxBatch, len(out)-start)
		p.predictChunk(xs[start*in:(start+n)*in], out[start:start+n], n, p.opts.Strategy)
		for i := 0; i < n; i++ {
			if out[start+i].nonFinite {
				if bad == nil {
					bad = &NonFiniteError{Input: start + i}
				}
				bad.Count++
			}
		}
	}
	if bad != nil {
		return bad
	}
	return nil
}

// ErrNonFinite is matched (errors.Is) by the error of a prediction whose outputs are not finite.
var ErrNonFinite = errors.New("outputs are not finite")

// InputValueError is PredictBatch's error for an input value that is NaN or infinite: nothing
// is predicted.
type InputValueError struct {
	// Input is the index (within the batch) of the first such input, Value the index of the
	// value within it (in the network's order: Model.RawIndex gives the raw input's); NaN tells
	// NaN from an infinity.
	Input, Value int
	NaN          bool
}

func (e *InputValueError) Error() string {
	what := "infinite"
	if e.NaN {
		what = "NaN"
	}
	return fmt.Sprintf("runtime: input %d, value %d is %s", e.Input, e.Value, what)
}

// NonFiniteError reports inputs whose predictions are not finite numbers: the network's outputs
// overflowed float32 (typically inputs far outside the range the model was trained on, such as
// unnormalised values of magnitude 1e20) or a sample produced NaN. The predictions of those
// inputs are invalid and must not be used; the other inputs' predictions in the same batch are
// valid. errors.Is(err, ErrNonFinite) is true.
type NonFiniteError struct {
	// Input is the index (within the batch) of the first such input; Count how many there are.
	Input, Count int
}

func (e *NonFiniteError) Error() string {
	msg := fmt.Sprintf("runtime: input %d: %v (the network overflowed float32: is the input far outside the training range?)", e.Input, ErrNonFinite)
	if e.Count > 1 {
		msg += fmt.Sprintf("; %d inputs of the batch are affected", e.Count)
	}
	return msg
}

// Unwrap returns ErrNonFinite.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }

func (w *worker) acquire() int {
	if k := len(w.free); k > 0 {
		i := w.free[k-1]
		w.free = w.free[:k-1]
		return i
	}
	w.bufs = append(w.bufs, make([]float32, w.bufSz))
	return len(w.bufs) - 1
}

func (w *worker) release(i int) { w.free = append(w.free, i) }

// reset marks every activation buffer free.
func (w *worker) reset() {
	w.free = w.free[:0]
	for i := len(w.bufs) - 1; i >= 0; i-- {
		w.free = append(w.free, i)
	}
}

// runSeq runs nodes on buffer in (never modified), w.fc.block samples of n inputs each, and
// returns the buffer holding the result, which the caller owns (it is in itself when nodes is
// empty).
func (w *worker) runSeq(nodes []node, in, n int) int { return w.runFrom(nodes, in, in, n) }

// runOwned is runSeq on a buffer the caller hands over: in-place nodes overwrite it, and it is
// released (or returned) like the intermediate buffers.
func (w *worker) runOwned(nodes []node, in, n int) int { return w.runFrom(nodes, in, -1, n) }

// runFrom runs nodes from buffer in; keep is the buffer never modified nor released (in for
// runSeq, none for runOwned).
func (w *worker) runFrom(nodes []node, in, keep, n int) int {
	cur := in
	for _, nd := range nodes {
		if r, ok := nd.(*residual); ok {
			sc := w.runSeq(r.shortcut, cur, n)
			body := w.runSeq(r.body, cur, n)
			rows := w.fc.block * n
			kernels.Axpy(1, w.bufs[sc][:rows*r.s.size()], w.bufs[body][:rows*r.s.size()])
			if sc != cur {
				w.release(sc)
			}
			if cur != keep {
				w.release(cur)
			}
			cur = body
			continue
		}
		if nd.inPlace() && cur != keep {
			nd.forward(&w.fc, w.bufs[cur], w.bufs[cur], n)
			continue
		}
		o := w.acquire()
		if nd.inPlace() {
			copy(w.bufs[o][:w.fc.block*n*nd.outSize()], w.bufs[cur][:w.fc.block*n*nd.outSize()])
			nd.forward(&w.fc, w.bufs[o], w.bufs[o], n)
		} else {
			nd.forward(&w.fc, w.bufs[cur], w.bufs[o], n)
		}
		if cur != keep {
			w.release(cur)
		}
		cur = o
	}
	return cur
}

// loop serves jobs until the wake channel is closed.
func (w *worker) loop(j *job) {
	for range w.wake {
		w.reset()
		pre := w.acquire()
		copy(w.bufs[pre][:len(j.pre)], j.pre)
		w.run(j, nil, pre)
		j.wg.Done()
	}
}

// run draws this worker's blocks of samples of job j from the prefix output in its buffer pre
// (n rows, never modified): the blocks j.from, j.from+block, … up to j.samples are split into
// one contiguous range per worker, whose whole blocks go in passes of up to j.pass samples and
// whose last block, when the job ends with a partial one, goes alone. With p set (the
// single-thread case) each sample's outputs are accumulated at once; otherwise they are stored
// in j.outs.
func (w *worker) run(j *job, p *Predictor, pre int) {
	w.fc.strategy = j.strategy
	n := j.n
	fa := w.fc.faHs
	total := j.samples - j.from
	full, nb := total/j.block, ceilDiv(total, j.block)
	lo, hi := w.id*nb/j.threads, (w.id+1)*nb/j.threads
	for bl := lo; bl < hi; {
		s0 := j.from + bl*j.block
		B := min(j.block, j.samples-s0) // the partial block
		if bl < full {
			B = min(j.pass/j.block, min(hi, full)-bl) * j.block
		}
		bl += ceilDiv(B, j.block)
		w.fc.sample, w.fc.block = s0, B
		if fa != nil {
			rank := len(fa) / j.pass
			w.fc.faHs = fa[:B*rank]
			for b := 0; b < B; b++ {
				h := fa[b*rank : (b+1)*rank]
				if w.fc.mean {
					clear(h)
				} else {
					w.fc.rng.Reset(w.fc.seed, uint32(s0+b), faStream)
					w.fc.rng.Normal(h)
				}
			}
		}
		if w.fc.glob != nil {
			w.fc.glob.fill(&w.fc, s0, B)
		}
		var res int
		if j.cached != nil {
			o := w.acquire()
			j.cached.post.apply(&w.fc, j.cached.id, j.prep, true, w.bufs[o], n, B, w.fc.scratch)
			res = w.runOwned(j.nodes[1:], o, n)
		} else {
			// Every sample of the block starts from the prefix output.
			in := w.bufs[pre][:len(j.pre)]
			src := pre
			if B > 1 {
				src = w.acquire()
				for b := 0; b < B; b++ {
					copy(w.bufs[src][b*len(in):(b+1)*len(in)], in)
				}
			}
			if src == pre {
				res = w.runSeq(j.nodes, src, n)
			} else {
				res = w.runOwned(j.nodes, src, n)
			}
		}
		y := w.bufs[res][:B*n*j.outSz]
		if p != nil {
			p.accumulate(y, B, n, s0*j.stride+j.offset, j.stride)
		} else {
			copy(j.outs[s0*n*j.outSz:], y)
		}
		if res != pre {
			w.release(res)
		}
	}
	w.fc.faHs = fa
}

func (p *Predictor) predictChunk(xs []float32, out []Prediction, n int, st Strategy) {
	m := p.m
	j := p.job
	j.samples = p.opts.Samples
	outSz := m.outShape.size()
	pre := 0
	if m.parts == nil {
		// The deterministic prefix runs once.
		pre = p.setup(0, xs, n, st)
	}
	clear(p.sum[:n*outSz])
	clear(p.sum2[:n*outSz])
	clear(p.sumH[:n])
	if p.shiftSet != nil {
		clear(p.shiftSet[:n])
	}
	for i := range p.prodS[:n] {
		p.prodS[i] = 1
	}
	p.out = out
	K := p.opts.Samples
	for i := range out {
		if p.opts.KeepSamples {
			out[i].Outputs = grow(out[i].Outputs, K*outSz)
		} else {
			out[i].Outputs = out[i].Outputs[:0]
		}
	}
	if p.adapt == nil {
		p.drawRange(xs, n, st, pre, 0, K)
		for i := range out[:n] {
			p.finish(&out[i], i, K)
		}
		p.out = nil
		return
	}
	// Adaptive sampling: rounds of samples, after each of which the inputs whose decision is
	// settled are finished with the samples drawn so far.
	a := p.adapt
	done := a.done[:n]
	clear(done)
	left := n
	for from := 0; from < K && left > 0; {
		to := min(from+a.round, K)
		p.drawRange(xs, n, st, pre, from, to)
		from = to
		for i := range out[:n] {
			if done[i] || (from < K && !a.settled(p, i, from, K)) {
				continue
			}
			done[i] = true
			left--
			p.finish(&out[i], i, from)
		}
	}
	p.out = nil
}

// setup prepares p.job for drawing member k's samples (k = 0 for a single network) of the n
// inputs xs: it runs the member's deterministic prefix (returning the buffer of worker 0 that
// holds its output), the cached projections of its first stochastic layer when that samples
// locally, and its random streams (a mixture's member k is keyed by mixtureSeed).
func (p *Predictor) setup(k int, xs []float32, n int, st Strategy) int {
	m := p.m
	nodes, stride, seed := m.nodes, 1, p.opts.Seed
	if m.parts != nil {
		nodes, stride, seed = m.parts[k].nodes, len(m.parts), mixtureSeed(p.opts.Seed, k)
	}
	for _, w := range p.workers {
		w.fc.seed = seed
		if m.parts != nil {
			w.fc.glob = m.parts[k].glob
		}
	}
	w0 := p.workers[0]
	w0.reset()
	w0.fc.strategy = st
	w0.fc.sample, w0.fc.block = 0, 1
	x := w0.acquire()
	copy(w0.bufs[x], xs)
	pre := w0.runSeq(nodes[:p.first], x, n)
	j := p.job
	j.nodes, j.n, j.threads, j.strategy = nodes[p.first:], n, p.opts.Threads, st
	j.stride, j.offset = stride, k
	j.block, j.pass = p.block, p.pass
	j.pre = w0.bufs[pre][:n*p.inSizeAt(p.first)]
	j.outSz = m.outShape.size()
	j.cached, j.prep = nil, nil
	if d, ok := p.firstLocalIn(nodes); ok && (st == Local || (st == Auto && d.autoLocalShared(n, p.opts.Samples))) {
		j.cached, j.prep = d, p.prep[:d.post.prepSize(n)]
		d.post.prepare(j.pre, n, j.prep)
	}
	return pre
}

// drawRange draws the prediction's samples from … to-1 and accumulates them: from the prefix
// output pre that setup made, or, for a mixture, each member's share (sample s is member
// s mod M's local sample s div M), member after member.
func (p *Predictor) drawRange(xs []float32, n int, st Strategy, pre, from, to int) {
	parts := p.m.parts
	if parts == nil {
		p.draw(p.job, pre, from, to)
		return
	}
	M := len(parts)
	for k := range parts {
		lo, hi := ceilDiv(from-k, M), ceilDiv(to-k, M)
		if lo < hi {
			p.draw(p.job, p.setup(k, xs, n, st), lo, hi)
		}
	}
}

// ceilDiv is ⌈a/m⌉ for m > 0, and 0 for a ≤ 0.
func ceilDiv(a, m int) int {
	if a <= 0 {
		return 0
	}
	return (a + m - 1) / m
}

// mixtureSeed keys member k of a mixture's random streams: member 0 draws what the same
// posterior alone draws with seed, the others streams of their own.
func mixtureSeed(seed uint64, k int) uint64 { return seed + uint64(k)*0x9e3779b97f4a7c15 }

// draw runs samples from … to-1 of job j (local samples of a mixture's member) from the prefix
// output pre and accumulates them.
func (p *Predictor) draw(j *job, pre, from, to int) {
	j.from, j.samples = from, to
	n := j.n
	if j.threads == 1 {
		p.workers[0].run(j, p, pre)
		return
	}
	j.wg.Add(j.threads - 1)
	for _, w := range p.workers[1:] {
		w.wake <- struct{}{}
	}
	p.workers[0].run(j, nil, pre)
	j.wg.Wait()
	for k := from; k < to; k += p.pass {
		B := min(p.pass, to-k)
		p.accumulate(j.outs[k*n*j.outSz:(k+B)*n*j.outSz], B, n, k*j.stride+j.offset, j.stride)
	}
}

// inSizeAt is the size of one input to top-level node i.
func (p *Predictor) inSizeAt(i int) int {
	if i == 0 {
		return p.m.inShape.size()
	}
	return p.m.nodes[i-1].outSize()
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// accumulate adds B samples' outputs y (B × n × outputs, sample-major; at most p.pass samples)
// to the running sums: sample b is the prediction's sample k0 + b·kStep. Classification turns
// each input's B rows into probabilities and entropies in one kernels.SoftmaxMoments call; the
// sums take the samples in order, so the results do not depend on B. Sampling adaptively it
// keeps each sample's probabilities or regression means for the stopping test.
func (p *Predictor) accumulate(y []float32, B, n, k0, kStep int) {
	c := p.m.outShape.size()
	a := p.adapt
	for i := 0; i < n; i++ {
		if a != nil && a.done[i] {
			continue
		}
		if p.opts.KeepSamples {
			for b := 0; b < B; b++ {
				k := k0 + b*kStep
				copy(p.out[i].Outputs[k*c:(k+1)*c], y[(b*n+i)*c:(b*n+i+1)*c])
			}
		}
		s, s2 := p.sum[i*c:(i+1)*c], p.sum2[i*c:(i+1)*c]
		if p.m.regression {
			sh := p.shift[i*c : (i+1)*c]
			for b := 0; b < B; b++ {
				yi := y[(b*n+i)*c : (b*n+i+1)*c]
				if !p.shiftSet[i] {
					for j, v := range yi {
						sh[j] = float64(v)
					}
					p.shiftSet[i] = true
				}
				for j, v := range yi {
					d := float64(v) - sh[j]
					s[j] += d
					s2[j] += d * d
				}
				if a != nil {
					k := k0 + b*kStep
					copy(a.vals[(i*a.k+k)*c:(i*a.k+k+1)*c], yi)
				}
			}
			continue
		}
		// Softmax of each sample's row, Σ p and Σ p² (normalised probabilities), and the entropy
		// log Σ e − Σ p d (d = z − max z).
		kernels.SoftmaxMoments(B, c, y[i*c:], n*c, p.probs, c, p.expSum, p.expDot, s, s2)
		// The sum of the entropies: Σ log Σ e is the logarithm of the product of the sums, taken
		// when the product passes 2^600 and at the end (entropySum), one logarithm per input
		// instead of one per sample, in the order of the samples whatever B is. Each sum is at
		// least 1 (its row's maximum contributes e⁰) and d ≤ 0, so no sample's term is negative.
		prod, h := p.prodS[i], p.sumH[i]
		for b := 0; b < B; b++ {
			sum := p.expSum[b]
			q := float64(p.expDot[b] * (1 / sum))
			se := expSum64(sum, p.probs[b*c:(b+1)*c])
			prod *= se
			h -= q
			if prod > 0x1p600 {
				h += log64(prod)
				prod = 1
			}
			if a != nil {
				// Sampling adaptively: each sample's entropy too, for the stopping test.
				k := k0 + b*kStep
				copy(a.vals[(i*a.k+k)*c:(i*a.k+k+1)*c], p.probs[b*c:(b+1)*c])
				a.h[i*a.k+k] = max(log64(se)-q, 0)
			}
		}
		p.prodS[i], p.sumH[i] = prod, h
	}
}

// expSum64 is Σ e (kernels.SoftmaxMoments's sum of e^(z − max z), at least 1) to float64 accuracy
// where float32 loses it. For a confident sample (sum < 2: its top probability 1/Σe is above ½)
// Σe = 1 + ε with ε below float32's resolution at 1 for near-one-hot rows, and ln Σe — the
// sample's entropy is ln Σe − Σ p d — came out wrong by up to 6e-8 nats, more than a confident
// prediction's whole mutual information. There Σe = 1/(1 − E) with E the sum of the other
// probabilities (each float32-accurate relative to itself) summed in float64: all but the first
// at least ½ — the top one, unless float32 rounding lifted a near-tied second one to ½ as well,
// which then counts in E.
func expSum64(sum float32, probs []float32) float64 {
	if !(sum < 2) {
		return float64(sum)
	}
	e, top := 0.0, true
	for _, v := range probs {
		if top && v >= 0.5 {
			top = false
			continue
		}
		e += float64(v)
	}
	return 1 / (1 - e)
}

// entropySum is the sum of input i's sample entropies so far (see accumulate).
func (p *Predictor) entropySum(i int) float64 { return p.sumH[i] + log64(p.prodS[i]) }

// log64 returns ln x within a few units in the last place (relative 1e-15) for a positive normal
// float64, several times cheaper than math.Log (no call to Frexp): x = m·2^e with m in [√½, √2),
// ln m = 2 atanh s = 2(s + s³/3 + … + s¹⁹/19) with s = (m − 1)/(m + 1), |s| ≤ 0.172 (the next term
// is below 3e-17 of the sum). Anything else (0, subnormal, negative, infinite, NaN) goes to
// math.Log.
func log64(x float64) float64 {
	b := math.Float64bits(x)
	if b-(1<<52) >= 0x7fe0000000000000 {
		return math.Log(x)
	}
	e := float64(int64(b>>52) - 1023)
	m := math.Float64frombits(b&(1<<52-1) | 1023<<52) // [1, 2)
	if m > math.Sqrt2 {
		m *= 0.5
		e++
	}
	s := (m - 1) / (m + 1)
	z := s * s
	p := 1.0/9 + z*(1.0/11+z*(1.0/13+z*(1.0/15+z*(1.0/17+z*(1.0/19)))))
	return e*math.Ln2 + 2*s*(1+z*(1.0/3+z*(1.0/5+z*(1.0/7+z*p))))
}

// finish turns input i's sums over its first k samples into the predictive summaries
// (MATH.md §3) and the policy's decision.
func (p *Predictor) finish(o *Prediction, i, k int) {
	c := p.m.outShape.size()
	K := float64(k)
	o.Samples = k
	if p.opts.KeepSamples {
		o.Outputs = o.Outputs[:k*c]
	}
	s, s2 := p.sum[i*c:(i+1)*c], p.sum2[i*c:(i+1)*c]
	sumH := p.entropySum(i)
	// x − x is 0 for finite x and NaN for NaN and ±Inf: one pass over the sums.
	chk := sumH - sumH
	for j := range s {
		chk += (s[j] - s[j]) + (s2[j] - s2[j])
	}
	o.nonFinite = chk != 0
	if p.m.regression {
		o.Mean, o.Var, o.EpistemicVar = grow(o.Mean, c), grow(o.Var, c), grow(o.EpistemicVar, c)
		o.Probs, o.Std = o.Probs[:0], o.Std[:0]
		// A Prediction a classifier filled before keeps nothing of it.
		o.Class, o.Confidence, o.Entropy, o.ExpectedEntropy, o.MutualInfo = 0, 0, 0, 0, 0
		var chk32 float32
		sh := p.shift[i*c : (i+1)*c]
		for j := range s {
			// s and s2 sum the deviations from the first sample (see shift).
			dm := s[j] / K
			ev := math.Max(s2[j]/K-dm*dm, 0)
			o.Mean[j], o.EpistemicVar[j] = float32(sh[j]+dm), float32(ev)
			o.Var[j] = float32(ev + p.m.spec.NoiseVar)
			chk32 += (o.Mean[j] - o.Mean[j]) + (o.Var[j] - o.Var[j])
		}
		// Finite float64 sums can still overflow float32: outputs near 1e20 whose spread squared
		// is 1e40 (EpistemicVar ≤ Var, so Var's check covers it).
		o.nonFinite = o.nonFinite || chk32 != 0
		o.Decision = p.policy.Decide(o)
		return
	}
	o.Probs, o.Std = grow(o.Probs, c), grow(o.Std, c)
	o.Mean, o.Var, o.EpistemicVar = o.Mean[:0], o.Var[:0], o.EpistemicVar[:0]
	// The predictive entropy of the mean probabilities normalised in float64: the float32
	// softmax rows sum to 1 only within their rounding (1 + 5e-8 for 1000 equal classes, which
	// put the entropy above log c and the mutual information of identical samples at 3e-7).
	tot := 0.0
	for _, v := range s {
		tot += v
	}
	h := 0.0
	o.Class, o.Confidence = 0, -1
	for j := range s {
		mu := s[j] / K
		o.Probs[j] = float32(mu)
		o.Std[j] = float32(math.Sqrt(math.Max(s2[j]/K-mu*mu, 0)))
		if q := s[j] / tot; q > 0 {
			h -= q * log64(q)
		}
		if o.Probs[j] > o.Confidence {
			o.Class, o.Confidence = j, o.Probs[j]
		}
	}
	o.Entropy = h
	o.ExpectedEntropy = max(sumH/K, 0)
	o.MutualInfo = math.Max(h-o.ExpectedEntropy, 0)
	if k == 1 {
		// One sample is its own predictive: the two entropies are equal and the mutual
		// information 0, not the rounding difference of their two computations.
		o.ExpectedEntropy, o.MutualInfo = h, 0
	}
	if o.nonFinite {
		// Not finite probabilities have no entropy (the sum above skips NaN).
		nan := math.NaN()
		o.Entropy, o.ExpectedEntropy, o.MutualInfo = nan, nan, nan
	}
	o.Decision = p.policy.Decide(o)
}
