package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// Strategy selects how weights are sampled.
type Strategy int

const (
	// Auto picks, per dense layer and batch size, whichever of Weight and Local costs fewer
	// multiply-adds. The samples an input gets then depend on the batch size; choose Weight or
	// Local for samples that do not.
	Auto Strategy = iota
	// Weight draws whole weight matrices per sample, shared by every input of a batch. It works for
	// every layer kind.
	Weight
	// Local samples each dense layer's outputs per input (MATH.md §1 and §2), which is exact per
	// input and much cheaper for small batches; conv layers still sample weights.
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

// ParseStrategy parses "auto", "weight" or "local".
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
	// Samples is the number K of Monte Carlo samples per prediction (default 32). A
	// deterministic model always uses one.
	Samples int
	// Seed selects the random streams; the same seed gives bit-identical predictions.
	Seed uint64
	// Strategy selects weight or per-input (local) sampling.
	Strategy Strategy
	// MaxBatch is the largest number of inputs processed at once (default 1); PredictBatch splits
	// larger batches. Scratch memory grows with it.
	MaxBatch int
	// KeepSamples makes every Prediction carry the per-sample outputs (logits or regression means).
	KeepSamples bool
	// Mean predicts once at the posterior mean weights (conditional mean for inducing layers, U at
	// its mean, ensemble member 0), without noise.
	Mean bool
}

// Prediction is the predictive distribution for one input. Its slices are reused by later calls
// that write into the same Prediction.
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
}

// Predictor computes predictions with one Model. It owns scratch memory and is not safe for
// concurrent use; make one per goroutine (the Model is shared).
type Predictor struct {
	m     *Model
	opts  Options
	fc    fwdCtx
	bufs  [][]float32
	free  []int
	bufSz int
	// first is the index of the first stochastic top-level node (len(nodes) if none).
	first int
	prep  []float32
	// Accumulators, MaxBatch × outputs.
	sum, sum2 []float64
	sumH      []float64
	probs     []float32
	one       [1]Prediction
}

// fwdCtx is the per-call state passed to the layers.
type fwdCtx struct {
	seed     uint64
	sample   int
	strategy Strategy
	mean     bool
	scratch  []float32
	faH      []float32
	// rng is the current layer's random stream (kept here so that it does not escape to the heap).
	rng kernels.Stream
}

// NewPredictor makes a Predictor. It sizes every buffer up front and runs one warm-up pass, so
// that Predict and PredictBatch allocate nothing afterwards.
func (m *Model) NewPredictor(opts Options) (*Predictor, error) {
	if opts.Samples == 0 {
		opts.Samples = 32
	}
	if opts.MaxBatch == 0 {
		opts.MaxBatch = 1
	}
	if opts.Samples < 0 || opts.Samples > 1<<20 {
		return nil, fmt.Errorf("runtime: %d samples is out of range (1 to %d)", opts.Samples, 1<<20)
	}
	if opts.MaxBatch < 0 || opts.MaxBatch > 1<<16 {
		return nil, fmt.Errorf("runtime: max batch %d is out of range (1 to %d)", opts.MaxBatch, 1<<16)
	}
	if opts.Strategy < Auto || opts.Strategy > Local {
		return nil, fmt.Errorf("runtime: unknown strategy %d", opts.Strategy)
	}
	if !m.stochastic || opts.Mean {
		opts.Samples = 1
	}
	p := &Predictor{m: m, opts: opts}
	p.fc = fwdCtx{seed: opts.Seed, strategy: opts.Strategy, mean: opts.Mean}
	n := opts.MaxBatch
	maxAct := m.inShape.size()
	scratch := 0
	walkNodes(m.nodes, func(nd node) {
		maxAct = max(maxAct, nd.outSize())
		scratch = max(scratch, nd.scratchSize(n, opts.Strategy))
		if opts.Strategy == Auto {
			scratch = max(scratch, nd.scratchSize(n, Weight), nd.scratchSize(n, Local))
		}
	})
	p.bufSz = maxAct * n
	p.fc.scratch = make([]float32, scratch)
	if m.fa != nil {
		p.fc.faH = make([]float32, m.fa.rank)
	}
	p.first = len(m.nodes)
	for i, nd := range m.nodes {
		if nd.stochastic() {
			p.first = i
			break
		}
	}
	if d, ok := p.firstLocal(); ok {
		p.prep = make([]float32, d.post.prepSize(n))
	}
	out := m.outShape.size()
	p.sum, p.sum2 = make([]float64, n*out), make([]float64, n*out)
	p.sumH = make([]float64, n)
	p.probs = make([]float32, out)
	// Warm up: one single-sample pass over a zero batch per strategy in use creates every
	// activation buffer.
	saved := p.opts.Samples
	p.opts.Samples = 1
	warm := make([]Prediction, n)
	zeros := make([]float32, n*m.inShape.size())
	for _, st := range []Strategy{Weight, Local} {
		if opts.Strategy == Auto || opts.Strategy == st {
			p.fc.strategy = st
			p.predictChunk(zeros, warm, n)
		}
	}
	p.fc.strategy = opts.Strategy
	p.opts.Samples = saved
	return p, nil
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
func (p *Predictor) firstLocal() (*dense, bool) {
	if p.first >= len(p.m.nodes) || p.opts.Strategy == Weight {
		return nil, false
	}
	d, ok := p.m.nodes[p.first].(*dense)
	if !ok || d.conv || d.post == nil {
		return nil, false
	}
	return d, true
}

// Options returns the predictor's options with defaults filled in.
func (p *Predictor) Options() Options { return p.opts }

// ScratchBytes is the memory the Predictor holds for activations, sampled weights and
// accumulators.
func (p *Predictor) ScratchBytes() int64 {
	b := int64(len(p.fc.scratch)+len(p.prep)+len(p.fc.faH)+len(p.probs)) * 4
	for _, buf := range p.bufs {
		b += int64(len(buf)) * 4
	}
	return b + int64(len(p.sum)+len(p.sum2)+len(p.sumH))*8
}

// Predict computes the predictive distribution of one input (Model.InputSize values; images are
// channel-major, C×H×W). A wrong length or a NaN or infinite value is an error.
func (p *Predictor) Predict(x []float32, out *Prediction) error {
	p.one[0] = *out
	err := p.PredictBatch(x, p.one[:])
	*out = p.one[0]
	p.one[0] = Prediction{}
	return err
}

// PredictBatch computes predictions for len(out) inputs stored one after the other in xs.
func (p *Predictor) PredictBatch(xs []float32, out []Prediction) error {
	in := p.m.inShape.size()
	if len(xs) != len(out)*in {
		if len(out) == 1 {
			return fmt.Errorf("runtime: input has %d values; the model takes %d", len(xs), in)
		}
		return fmt.Errorf("runtime: batch of %d inputs needs %d values, got %d (the model takes %d per input)", len(out), len(out)*in, len(xs), in)
	}
	for i, v := range xs {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			what := "NaN"
			if !math.IsNaN(float64(v)) {
				what = "infinite"
			}
			return fmt.Errorf("runtime: input %d, value %d is %s", i/in, i%in, what)
		}
	}
	for start := 0; start < len(out); start += p.opts.MaxBatch {
		n := min(p.opts.MaxBatch, len(out)-start)
		p.predictChunk(xs[start*in:(start+n)*in], out[start:start+n], n)
	}
	return nil
}

func (p *Predictor) acquire() int {
	if k := len(p.free); k > 0 {
		i := p.free[k-1]
		p.free = p.free[:k-1]
		return i
	}
	p.bufs = append(p.bufs, make([]float32, p.bufSz))
	return len(p.bufs) - 1
}

func (p *Predictor) release(i int) { p.free = append(p.free, i) }

// runSeq runs nodes on buffer in (never modified) and returns the buffer holding the result, which
// the caller owns (it is in itself when nodes is empty).
func (p *Predictor) runSeq(nodes []node, in, n int) int {
	cur := in
	for _, nd := range nodes {
		if r, ok := nd.(*residual); ok {
			sc := p.runSeq(r.shortcut, cur, n)
			body := p.runSeq(r.body, cur, n)
			kernels.Axpy(1, p.bufs[sc][:n*r.s.size()], p.bufs[body][:n*r.s.size()])
			if sc != cur {
				p.release(sc)
			}
			if cur != in {
				p.release(cur)
			}
			cur = body
			continue
		}
		if nd.inPlace() && cur != in {
			nd.forward(&p.fc, p.bufs[cur], p.bufs[cur], n)
			continue
		}
		o := p.acquire()
		if nd.inPlace() {
			copy(p.bufs[o][:n*nd.outSize()], p.bufs[cur][:n*nd.outSize()])
			nd.forward(&p.fc, p.bufs[o], p.bufs[o], n)
		} else {
			nd.forward(&p.fc, p.bufs[cur], p.bufs[o], n)
		}
		if cur != in {
			p.release(cur)
		}
		cur = o
	}
	return cur
}

func (p *Predictor) predictChunk(xs []float32, out []Prediction, n int) {
	m := p.m
	nodes := m.nodes
	p.free = p.free[:0]
	for i := len(p.bufs) - 1; i >= 0; i-- {
		p.free = append(p.free, i)
	}
	x := p.acquire()
	copy(p.bufs[x], xs)
	// The deterministic prefix runs once.
	pre := p.runSeq(nodes[:p.first], x, n)
	rest := nodes[p.first:]
	local, cached := p.firstLocal()
	if cached {
		cached = p.fc.strategy == Local || (p.fc.strategy == Auto && local.autoLocal(n))
	}
	if cached {
		local.post.prepare(p.bufs[pre], n, p.prep[:local.post.prepSize(n)])
	}
	outSz := m.outShape.size()
	K := p.opts.Samples
	clear(p.sum[:n*outSz])
	clear(p.sum2[:n*outSz])
	clear(p.sumH[:n])
	for i := range out {
		o := &out[i]
		if p.opts.KeepSamples {
			o.Outputs = grow(o.Outputs, K*outSz)
		} else {
			o.Outputs = o.Outputs[:0]
		}
	}
	for k := 0; k < K; k++ {
		p.fc.sample = k
		if p.fc.faH != nil {
			if p.fc.mean {
				clear(p.fc.faH)
			} else {
				p.fc.rng = kernels.NewStream(p.fc.seed, uint32(k), faStream)
				p.fc.rng.Normal(p.fc.faH)
			}
		}
		var res int
		if cached {
			o := p.acquire()
			p.fc.rng = kernels.NewStream(p.fc.seed, uint32(k), local.id)
			local.post.apply(&p.fc, &p.fc.rng, p.prep, p.bufs[o], n, p.fc.scratch)
			res = p.runSeq(rest[1:], o, n)
			if res != o {
				p.release(o)
			}
		} else {
			res = p.runSeq(rest, pre, n)
		}
		p.accumulate(p.bufs[res][:n*outSz], out, k, n)
		if res != pre {
			p.release(res)
		}
	}
	p.finish(out, n)
}

func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// accumulate adds sample k's outputs y (n × outputs) to the running sums.
func (p *Predictor) accumulate(y []float32, out []Prediction, k, n int) {
	c := p.m.outShape.size()
	for i := 0; i < n; i++ {
		yi := y[i*c : (i+1)*c]
		if p.opts.KeepSamples {
			copy(out[i].Outputs[k*c:(k+1)*c], yi)
		}
		s, s2 := p.sum[i*c:(i+1)*c], p.sum2[i*c:(i+1)*c]
		if p.m.spec.Task == Regression {
			for j, v := range yi {
				s[j] += float64(v)
				s2[j] += float64(v) * float64(v)
			}
			continue
		}
		kernels.Softmax(p.probs, yi)
		h := 0.0
		for j, q := range p.probs {
			qv := float64(q)
			s[j] += qv
			s2[j] += qv * qv
			if qv > 0 {
				h -= qv * math.Log(qv)
			}
		}
		p.sumH[i] += h
	}
}

// finish turns the sums into the predictive summaries (MATH.md §3).
func (p *Predictor) finish(out []Prediction, n int) {
	c := p.m.outShape.size()
	K := float64(p.opts.Samples)
	for i := 0; i < n; i++ {
		o := &out[i]
		s, s2 := p.sum[i*c:(i+1)*c], p.sum2[i*c:(i+1)*c]
		if p.m.spec.Task == Regression {
			o.Mean, o.Var, o.EpistemicVar = grow(o.Mean, c), grow(o.Var, c), grow(o.EpistemicVar, c)
			o.Probs, o.Std = o.Probs[:0], o.Std[:0]
			for j := range s {
				mu := s[j] / K
				ev := math.Max(s2[j]/K-mu*mu, 0)
				o.Mean[j], o.EpistemicVar[j] = float32(mu), float32(ev)
				o.Var[j] = float32(ev + p.m.spec.NoiseVar)
			}
			continue
		}
		o.Probs, o.Std = grow(o.Probs, c), grow(o.Std, c)
		o.Mean, o.Var, o.EpistemicVar = o.Mean[:0], o.Var[:0], o.EpistemicVar[:0]
		h := 0.0
		o.Class, o.Confidence = 0, -1
		for j := range s {
			mu := s[j] / K
			o.Probs[j] = float32(mu)
			o.Std[j] = float32(math.Sqrt(math.Max(s2[j]/K-mu*mu, 0)))
			if mu > 0 {
				h -= mu * math.Log(mu)
			}
			if o.Probs[j] > o.Confidence {
				o.Class, o.Confidence = j, o.Probs[j]
			}
		}
		o.Entropy = h
		o.ExpectedEntropy = p.sumH[i] / K
		o.MutualInfo = math.Max(h-o.ExpectedEntropy, 0)
	}
}
