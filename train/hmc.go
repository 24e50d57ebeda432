package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"slices"
	"sync"
	"time"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/eval"
	"github.com/edgebnn/edgebnn/train/mcmc"
)

// Posterior hmc samples the exact posterior of all the weights and biases of a small network
// with NUTS (train/mcmc) and stores hmc_samples of the draws as an ensemble model (runtime
// Spec.Members, one deterministic network per kept draw, the form ensemble_w checkpoints have),
// so that convert, predict and eval run it as they run a deep ensemble.
//
// The log density is the log joint of the whole training set (full batch, in float64):
//
//	log p(θ | D) = Σ_n log p(y_n | x_n, θ) + Σ_i log N(θ_i; μ, s_i²) + const,
//
// with the Gaussian likelihood of fixed precision τ = noise_precision for regression (the noise
// is not learned: paper 003's toy, appendix J.1, states the data's noise variance 0.01, τ = 100)
// or the categorical (softmax) likelihood for classification. The prior is the one posterior
// ffg_w would use with the same inference config — prior_mean, prior_weight_sd and
// prior_bias_sd, divided by √d_in (d_in counting the bias) with sqrt_width_scaling — so HMC is
// the exact reference for FFG-W and the other methods trained with that prior; without an
// inference config every parameter has the prior N(0, 1/prior_precision). The gradient is
// written out by hand for the layers an MLP has (Linear, Flatten, ReLU, Tanh, Sigmoid,
// Identity); other layers are refused, as are networks of more than MaxHMCParams parameters.

// MaxHMCParams is the largest number of parameters posterior hmc samples: NUTS needs hundreds
// of full-batch gradients per draw, and thousands of draws for R̂ and ESS to mean anything.
const MaxHMCParams = 10_000

// The defaults of the hmc_* keys.
const (
	DefaultHMCChains       = 4
	DefaultHMCWarmup       = 1000
	DefaultHMCDraws        = 1000
	DefaultHMCSamples      = 100
	DefaultHMCMaxDepth     = 10
	DefaultHMCTargetAccept = 0.8
)

// maxHMCFunctionals bounds the test inputs whose predictions R̂ and ESS are computed for.
const maxHMCFunctionals = 64

// HMCReport is what posterior hmc records about its run: the sampler's settings and health and
// the convergence diagnostics (rank-normalised split-R̂ and bulk ESS, mcmc.Rhat and mcmc.ESSBulk)
// over the parameters, over the network's predictions at test inputs, and of the log density.
// The checkpoint keeps it in its training state (State.HMC).
type HMCReport struct {
	Algorithm string `json:"algorithm"`
	// Params is the dimension of θ; Chains, Warmup and Draws the sampler's shape (per chain).
	Params int `json:"params"`
	Chains int `json:"chains"`
	Warmup int `json:"warmup"`
	Draws  int `json:"draws"`
	// Kept is the number of draws stored as ensemble members, evenly spaced over the chains'
	// draws (chain after chain); Thin the spacing (draws per kept one, not an integer when Kept
	// does not divide Chains·Draws).
	Kept int     `json:"kept"`
	Thin float64 `json:"thin"`
	// Likelihood and Prior describe the log density.
	Likelihood string `json:"likelihood"`
	Prior      string `json:"prior"`
	// Divergences (kept iterations), WarmupDivergences and MaxDepthHits sum over the chains.
	Divergences       int `json:"divergences"`
	WarmupDivergences int `json:"warmup_divergences"`
	MaxDepthHits      int `json:"max_depth_hits"`
	// MeanAcceptStat and MeanTreeDepth average over the chains' kept iterations; StepSizes are
	// the chains' adapted step sizes.
	MeanAcceptStat float64   `json:"mean_accept_stat"`
	MeanTreeDepth  float64   `json:"mean_tree_depth"`
	StepSizes      []float64 `json:"step_sizes"`
	// Gradients is the number of gradient evaluations (leapfrog steps), warm-up included.
	Gradients int     `json:"gradients"`
	Seconds   float64 `json:"seconds"`
	// ParamDiag covers every parameter; FunctionDiag the network's outputs (regression: the
	// mean f(x); classification: the softmax probabilities) at up to 64 test inputs evenly
	// spaced through the test set (the training set when there is none); LogDensity is
	// log p(θ | D) up to its constant.
	ParamDiag    HMCDiag `json:"param_diag"`
	FunctionDiag HMCDiag `json:"function_diag"`
	LogDensity   HMCDiag `json:"log_density"`
}

// HMCDiag summarises R̂ and bulk ESS over a set of scalar quantities. Quantities whose
// diagnostics are undefined (constant draws) are counted in Undefined and left out.
type HMCDiag struct {
	// What names the quantities.
	What string `json:"what"`
	// Count is the number of quantities; Undefined those without R̂.
	Count     int `json:"count"`
	Undefined int `json:"undefined,omitempty"`
	// RhatMax, RhatQ90 and RhatQ50 are the largest R̂, its 90 % quantile and its median. These and
	// the ESS summaries are eval.Num: NaN (JSON null) when every quantity is undefined — chains
	// that never moved, every proposal divergent — whose report, as plain floats, made every
	// checkpoint of the run fail to write ("json: unsupported value: NaN").
	RhatMax eval.Num `json:"rhat_max"`
	RhatQ90 eval.Num `json:"rhat_q90"`
	RhatQ50 eval.Num `json:"rhat_q50"`
	// Above101 and Above105 count the quantities with R̂ > 1.01 and > 1.05.
	Above101 int `json:"rhat_above_1_01"`
	Above105 int `json:"rhat_above_1_05"`
	// ESSBulkMin, ESSBulkQ10 and ESSBulkQ50 are the smallest bulk ESS, its 10 % quantile and its
	// median.
	ESSBulkMin eval.Num `json:"ess_bulk_min"`
	ESSBulkQ10 eval.Num `json:"ess_bulk_q10"`
	ESSBulkQ50 eval.Num `json:"ess_bulk_q50"`
}

// summarizeDiag computes HMCDiag over quantities given as [quantity][chain][draw].
func summarizeDiag(what string, qs [][][]float64) HMCDiag {
	d := HMCDiag{What: what, Count: len(qs)}
	var rh, ess []float64
	for _, q := range qs {
		r, e := mcmc.Rhat(q), mcmc.ESSBulk(q)
		if math.IsNaN(r) || math.IsNaN(e) {
			d.Undefined++
			continue
		}
		rh, ess = append(rh, r), append(ess, e)
		if r > 1.01 {
			d.Above101++
		}
		if r > 1.05 {
			d.Above105++
		}
	}
	if len(rh) == 0 {
		nan := eval.Num(math.NaN())
		d.RhatMax, d.RhatQ90, d.RhatQ50, d.ESSBulkMin, d.ESSBulkQ10, d.ESSBulkQ50 = nan, nan, nan, nan, nan, nan
		return d
	}
	slices.Sort(rh)
	slices.Sort(ess)
	d.RhatMax, d.RhatQ90, d.RhatQ50 = eval.Num(rh[len(rh)-1]), eval.Num(quantile(rh, 0.9)), eval.Num(quantile(rh, 0.5))
	d.ESSBulkMin, d.ESSBulkQ10, d.ESSBulkQ50 = eval.Num(ess[0]), eval.Num(quantile(ess, 0.1)), eval.Num(quantile(ess, 0.5))
	return d
}

// quantile is the p-quantile of sorted s by linear interpolation (R's type 7). Infinite values
// (the R̂ of chains each stuck at its own point) are quantiles like any other: no interpolation
// between equal values or at an exact order statistic, where ∞ − ∞ and 0·∞ made NaN.
func quantile(s []float64, p float64) float64 {
	h := p * float64(len(s)-1)
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	frac := h - float64(lo)
	if frac == 0 || s[lo] == s[lo+1] {
		return s[lo]
	}
	return s[lo] + frac*(s[lo+1]-s[lo])
}

// Line returns the one-line summary the trainer prints.
func (d HMCDiag) Line() string {
	if d.Count > 0 && d.Undefined == d.Count {
		return fmt.Sprintf("R̂ over %d %s: undefined, every one constant (the chains did not move)", d.Count, d.What)
	}
	s := fmt.Sprintf("R̂ over %d %s: max %.3f, 90%% %.3f, median %.3f (%d > 1.01, %d > 1.05); bulk ESS min %.0f, 10%% %.0f, median %.0f",
		d.Count, d.What, d.RhatMax, d.RhatQ90, d.RhatQ50, d.Above101, d.Above105, d.ESSBulkMin, d.ESSBulkQ10, d.ESSBulkQ50)
	if d.Undefined > 0 {
		s += fmt.Sprintf(" (%d constant, left out)", d.Undefined)
	}
	return s
}

// Lines returns the report as the lines the trainer prints.
func (r *HMCReport) Lines() []string {
	return []string{
		fmt.Sprintf("%s: %d chains × (%d warm-up + %d draws), %d parameters, %d gradients in %.1f s; likelihood %s; prior %s",
			r.Algorithm, r.Chains, r.Warmup, r.Draws, r.Params, r.Gradients, r.Seconds, r.Likelihood, r.Prior),
		fmt.Sprintf("divergences %d (warm-up %d), max tree depth hit %d times, mean accept %.3f, mean tree depth %.2f, step sizes %s",
			r.Divergences, r.WarmupDivergences, r.MaxDepthHits, r.MeanAcceptStat, r.MeanTreeDepth, fmtFloats(r.StepSizes)),
		r.ParamDiag.Line(),
		r.FunctionDiag.Line(),
		fmt.Sprintf("log density: R̂ %.3f, bulk ESS %.0f", r.LogDensity.RhatMax, r.LogDensity.ESSBulkMin),
		fmt.Sprintf("kept %d draws (one every %.4g of %d) as an ensemble model", r.Kept, r.Thin, r.Chains*r.Draws),
	}
}

func fmtFloats(v []float64) string {
	s := ""
	for i, x := range v {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.3g", x)
	}
	return s
}

// hmcLayer is one layer of the hand-differentiated network.
type hmcLayer struct {
	op      runtime.Op
	name    string
	in, out int  // Linear: features; activations: width (in = out)
	bias    bool // Linear: has a bias
	off     int  // Linear: offset of the weight [out, in] in θ; the bias follows it
}

// hmcNet is the network posterior hmc samples: its layers, θ's layout and the prior.
type hmcNet struct {
	layers    []hmcLayer
	dim       int
	in, out   int
	priorMean float64
	priorPrec []float64 // 1/s_i² per parameter
	priorDesc string
}

// newHMCNet reads spec's layers (deterministic; the prior comes from cfg, an ffg inference
// config, or is N(0, 1/precision) when cfg is nil), refusing networks of more than maxParams
// parameters.
func newHMCNet(spec *runtime.Spec, cfg *bnnconfig.Config, precision float64, maxParams int) (*hmcNet, error) {
	if len(spec.InputShape) == 0 {
		return nil, errors.New("train: posterior hmc: the network has no input shape")
	}
	n := &hmcNet{in: 1}
	for _, d := range spec.InputShape {
		n.in *= d
	}
	width := n.in
	var sds []float64
	for _, l := range spec.Layers {
		switch l.Op {
		case runtime.OpLinear:
			if l.Posterior != nil && l.Posterior.Kind != runtime.KindDeterministic {
				return nil, fmt.Errorf("train: posterior hmc: layer %q has posterior %s (internal error: want deterministic)", l.Name, l.Posterior.Kind)
			}
			if l.In != width {
				return nil, fmt.Errorf("train: posterior hmc: layer %q takes %d inputs, the layer before gives %d", l.Name, l.In, width)
			}
			wsd, bsd := 1/math.Sqrt(precision), 1/math.Sqrt(precision)
			if cfg != nil {
				r, err := cfg.ResolveModule(l.Name, "Linear")
				if err != nil {
					return nil, fmt.Errorf("train: posterior hmc: inference config: %w", err)
				}
				if r.Kind != bnnconfig.FFG || r.FFG == nil {
					return nil, fmt.Errorf("train: posterior hmc: the inference config gives layer %q inference %q; hmc reads its prior "+
						"(prior_mean, prior_weight_sd, prior_bias_sd, sqrt_width_scaling) from an ffg config for every Linear layer", l.Name, r.Kind)
				}
				dIn := l.In
				if l.Bias {
					dIn++
				}
				wsd, bsd = r.FFG.EffectivePriorWeightSD(dIn), r.FFG.EffectivePriorBiasSD(dIn)
				if len(sds) > 0 && r.FFG.PriorMean != n.priorMean {
					return nil, fmt.Errorf("train: posterior hmc: layer %q has prior_mean %g, an earlier layer %g; hmc takes one prior mean", l.Name, r.FFG.PriorMean, n.priorMean)
				}
				n.priorMean = r.FFG.PriorMean
				if n.priorDesc != "" {
					n.priorDesc += ", "
				}
				n.priorDesc += fmt.Sprintf("%s: weight sd %.4g, bias sd %.4g", l.Name, wsd, bsd)
			}
			if !(wsd > 0) || !(bsd > 0) || math.IsInf(wsd, 0) || math.IsInf(bsd, 0) {
				return nil, fmt.Errorf("train: posterior hmc: layer %q: prior sd %g (weights), %g (bias) must be positive and finite", l.Name, wsd, bsd)
			}
			hl := hmcLayer{op: l.Op, name: l.Name, in: l.In, out: l.Out, bias: l.Bias, off: len(sds)}
			for i := 0; i < l.In*l.Out; i++ {
				sds = append(sds, wsd)
			}
			if l.Bias {
				for i := 0; i < l.Out; i++ {
					sds = append(sds, bsd)
				}
			}
			if len(sds) > maxParams {
				break
			}
			n.layers = append(n.layers, hl)
			width = l.Out
		case runtime.OpReLU, runtime.OpTanh, runtime.OpSigmoid:
			n.layers = append(n.layers, hmcLayer{op: l.Op, name: l.Name, in: width, out: width})
		case runtime.OpFlatten, runtime.OpIdentity:
			// The inputs are flat rows already.
		default:
			return nil, fmt.Errorf("train: posterior hmc: layer %q is %s; hmc samples MLPs only (Linear, Flatten, ReLU, Tanh, Sigmoid, Identity)", l.Name, l.Op)
		}
		if len(sds) > maxParams {
			return nil, fmt.Errorf("train: posterior hmc: the network has more than %d parameters (%d up to layer %q); HMC samples small networks only (at most MaxHMCParams = %d)",
				maxParams, len(sds), l.Name, maxParams)
		}
	}
	if len(sds) == 0 {
		return nil, errors.New("train: posterior hmc: the network has no Linear layer")
	}
	n.dim, n.out = len(sds), width
	n.priorPrec = make([]float64, len(sds))
	for i, s := range sds {
		n.priorPrec[i] = 1 / (s * s)
	}
	if cfg == nil {
		n.priorDesc = fmt.Sprintf("N(0, 1/%g) on every parameter", precision)
	} else {
		n.priorDesc = fmt.Sprintf("N(%g, s²) with %s", n.priorMean, n.priorDesc)
	}
	return n, nil
}

// hmcData is the training set as the log density sees it.
type hmcData struct {
	n       int
	x       []float32 // [n, in]
	labels  []int     // classification
	targets []float32 // regression [n, out]
	tau     float64   // regression noise precision
}

// hmcScratch holds one evaluation's activations: acts[k] is the input of layer k ([n, width]),
// acts[len(layers)] the output; delta is the gradient with respect to the current activation.
type hmcScratch struct {
	acts          [][]float64
	delta, delta2 []float64
}

// scratchValues returns the float64 values newScratch(rows) allocates: rows × (the input width,
// every layer's output width and twice the widest).
func (n *hmcNet) scratchValues(rows int) int64 {
	per, maxw := int64(n.in), int64(n.in)
	for _, l := range n.layers {
		per += int64(l.out)
		maxw = max(maxw, int64(l.out))
	}
	return int64(rows) * (per + 2*maxw)
}

// checkHMCMemory refuses, before anything is allocated, a full-batch log density whose working
// space — one hmcScratch of rows rows for each of chains chains run at once — would not fit in
// limit bytes (toy1d:1048576 with mlp:1-3000-1 asked for a 25 GB block and crashed).
func checkHMCMemory(n *hmcNet, rows, chains int, limit int64) error {
	per := n.scratchValues(rows) * 8
	if per <= limit/int64(max(chains, 1)) {
		return nil
	}
	return fmt.Errorf("train: posterior hmc: the full-batch log density holds %d training rows × %d values (inputs, activations, gradients) in float64 for each of the %d chain(s) run at once: %.1f GiB, above the memory available (%.1f GiB: the machine's, its cgroup's or what ulimit -v leaves): use fewer training rows (--train-limit), a narrower network or fewer chains",
		rows, n.scratchValues(1), chains, float64(per)*float64(max(chains, 1))/(1<<30), float64(limit)/(1<<30))
}

func (n *hmcNet) newScratch(rows int) *hmcScratch {
	s := &hmcScratch{acts: make([][]float64, len(n.layers)+1)}
	s.acts[0] = make([]float64, rows*n.in)
	maxw := n.in
	for k, l := range n.layers {
		s.acts[k+1] = make([]float64, rows*l.out)
		maxw = max(maxw, l.out)
	}
	s.delta, s.delta2 = make([]float64, rows*maxw), make([]float64, rows*maxw)
	return s
}

// forward runs the rows of x ([rows, in]) through the network with parameters theta; the output
// is s.acts[len(n.layers)].
func (n *hmcNet) forward(theta []float64, x []float32, rows int, s *hmcScratch) []float64 {
	a := s.acts[0][:rows*n.in]
	for i, v := range x[:rows*n.in] {
		a[i] = float64(v)
	}
	for k, l := range n.layers {
		a, b := s.acts[k][:rows*l.in], s.acts[k+1][:rows*l.out]
		switch l.op {
		case runtime.OpLinear:
			w := theta[l.off : l.off+l.in*l.out]
			for r := 0; r < rows; r++ {
				ar, br := a[r*l.in:(r+1)*l.in], b[r*l.out:(r+1)*l.out]
				for o := range br {
					acc := 0.0
					if l.bias {
						acc = theta[l.off+l.in*l.out+o]
					}
					wo := w[o*l.in : (o+1)*l.in]
					for i, v := range ar {
						acc += wo[i] * v
					}
					br[o] = acc
				}
			}
		case runtime.OpTanh:
			for i, v := range a {
				b[i] = math.Tanh(v)
			}
		case runtime.OpSigmoid:
			for i, v := range a {
				b[i] = 1 / (1 + math.Exp(-v))
			}
		case runtime.OpReLU:
			for i, v := range a {
				b[i] = max(v, 0)
			}
		}
	}
	return s.acts[len(n.layers)][:rows*n.out]
}

// logLik returns Σ_n log p(y_n | x_n, θ) (without constants: −τ/2·Σ(y − f)² for regression) and
// writes its gradient with respect to the outputs into dout.
func (d *hmcData) logLik(f, dout []float64, outs int) float64 {
	lp := 0.0
	if d.labels == nil {
		for i, v := range f {
			r := float64(d.targets[i]) - v
			lp -= 0.5 * d.tau * r * r
			dout[i] = d.tau * r
		}
		return lp
	}
	for r := 0; r < d.n; r++ {
		fr, dr := f[r*outs:(r+1)*outs], dout[r*outs:(r+1)*outs]
		m := slices.Max(fr)
		z := 0.0
		for _, v := range fr {
			z += math.Exp(v - m)
		}
		lz := m + math.Log(z)
		y := d.labels[r]
		lp += fr[y] - lz
		for o, v := range fr {
			dr[o] = -math.Exp(v - lz)
		}
		dr[y]++
	}
	return lp
}

// logPost is log p(θ | D) up to a constant, with its gradient in grad.
func (n *hmcNet) logPost(d *hmcData, theta, grad []float64, s *hmcScratch) float64 {
	f := n.forward(theta, d.x, d.n, s)
	delta := s.delta[:len(f)]
	lp := d.logLik(f, delta, n.out)
	clear(grad)
	for k := len(n.layers) - 1; k >= 0; k-- {
		l := n.layers[k]
		a, b := s.acts[k][:d.n*l.in], s.acts[k+1][:d.n*l.out]
		delta = delta[:d.n*l.out]
		next := s.delta2[:d.n*l.in]
		switch l.op {
		case runtime.OpLinear:
			w := theta[l.off : l.off+l.in*l.out]
			gw := grad[l.off : l.off+l.in*l.out]
			clear(next)
			for r := 0; r < d.n; r++ {
				ar, dr, nr := a[r*l.in:(r+1)*l.in], delta[r*l.out:(r+1)*l.out], next[r*l.in:(r+1)*l.in]
				for o, g := range dr {
					if g == 0 {
						continue
					}
					if l.bias {
						grad[l.off+l.in*l.out+o] += g
					}
					wo, gwo := w[o*l.in:(o+1)*l.in], gw[o*l.in:(o+1)*l.in]
					for i, v := range ar {
						gwo[i] += g * v
						nr[i] += g * wo[i]
					}
				}
			}
		case runtime.OpTanh:
			for i, y := range b {
				next[i] = delta[i] * (1 - y*y)
			}
		case runtime.OpSigmoid:
			for i, y := range b {
				next[i] = delta[i] * y * (1 - y)
			}
		case runtime.OpReLU:
			for i, y := range b {
				if y > 0 {
					next[i] = delta[i]
				} else {
					next[i] = 0
				}
			}
		}
		s.delta, s.delta2 = s.delta2, s.delta
		delta = s.delta
	}
	for i, v := range theta {
		r := v - n.priorMean
		lp -= 0.5 * n.priorPrec[i] * r * r
		grad[i] -= n.priorPrec[i] * r
	}
	return lp
}

// hmcRun is posterior hmc's part of a Trainer.
type hmcRun struct {
	net    *hmcNet
	data   hmcData
	pool   sync.Pool // *hmcScratch of the training set's size
	Report *HMCReport
}

// newHMCRun checks that t's network is one hmc samples and prepares the log density.
func newHMCRun(t *Trainer) (*hmcRun, error) {
	c := &t.Config
	icfg, err := t.inferenceConfig()
	if err != nil {
		return nil, err
	}
	net, err := newHMCNet(t.spec, icfg, c.PriorPrecision, MaxHMCParams)
	if err != nil {
		return nil, err
	}
	if got := t.Nets[0].NumParams(); got != net.dim {
		return nil, fmt.Errorf("train: posterior hmc: the network has %d parameters, %d of them in Linear layers; hmc samples MLPs only", got, net.dim)
	}
	d := t.Train
	r := &hmcRun{net: net, data: hmcData{n: d.N, x: d.X, labels: d.Labels, targets: d.Targets, tau: c.NoisePrecision}}
	if d.Dim != net.in {
		return nil, fmt.Errorf("train: posterior hmc: the data has %d features, the network %d inputs", d.Dim, net.in)
	}
	// The chains run concurrently (mcmc.Config.Parallelism 0: up to GOMAXPROCS), each with its
	// own scratch from the pool; runHMC reuses one afterwards.
	if err := checkHMCMemory(net, d.N, min(c.HMCChains, goruntime.GOMAXPROCS(0)), memoryLimit()); err != nil {
		return nil, err
	}
	r.pool.New = func() any { return net.newScratch(d.N) }
	return r, nil
}

// logDensity is the mcmc.LogDensity of the posterior (safe for concurrent use).
func (r *hmcRun) logDensity(theta, grad []float64) float64 {
	s := r.pool.Get().(*hmcScratch)
	defer r.pool.Put(s)
	return r.net.logPost(&r.data, theta, grad, s)
}

// initialPoint draws a chain's starting point as PyTorch initialises a Linear layer: every
// weight and bias uniform in ±1/√in.
func (n *hmcNet) initialPoint(rng *rand.Rand) []float64 {
	theta := make([]float64, n.dim)
	for _, l := range n.layers {
		if l.op != runtime.OpLinear {
			continue
		}
		b := 1 / math.Sqrt(float64(l.in))
		end := l.off + l.in*l.out
		if l.bias {
			end += l.out
		}
		for i := l.off; i < end; i++ {
			theta[i] = b * (2*rng.Float64() - 1)
		}
	}
	return theta
}

// mcmcConfig returns the sampler's configuration for c.
func (c *Config) mcmcConfig() mcmc.Config {
	m := mcmc.DefaultConfig()
	m.Chains, m.Warmup, m.Draws, m.Seed = c.HMCChains, c.HMCWarmup, c.HMCDraws, c.Seed
	m.MaxTreeDepth, m.TargetAccept = c.HMCMaxDepth, c.HMCTargetAccept
	return m
}

// hmcKeep returns the indices (chain after chain, [0, total)) of the k draws kept of total:
// ⌊i·total/k⌋ for i < k, evenly spaced.
func hmcKeep(total, k int) []int {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = int(int64(i) * int64(total) / int64(k))
	}
	return idx
}

// sample runs NUTS and returns the kept draws and the report. progress (may be nil) is called
// after every iteration of every chain, serialised.
func (r *hmcRun) sample(ctx context.Context, c *Config, test [][]float32, progress func()) ([][]float64, *HMCReport, error) {
	mc := c.mcmcConfig()
	// Every draw is kept (and copied once per parameter for the diagnostics), and the function
	// diagnostics hold every draw's outputs at the test inputs: refuse what would not fit
	// before sampling, not by running out of memory at the end.
	perDraw := 2*int64(r.net.dim) + int64(len(test))*int64(r.net.out)
	if need := int64(mc.Chains) * int64(mc.Draws) * perDraw * 8; need > memoryLimit() {
		return nil, nil, fmt.Errorf("train: posterior hmc: %d chains × %d draws of %d parameters (and %d outputs at the test inputs) need %.1f GiB, more than the %.1f GiB available: fewer draws or chains",
			mc.Chains, mc.Draws, r.net.dim, len(test)*r.net.out, float64(need)/(1<<30), float64(memoryLimit())/(1<<30))
	}
	for k := 0; k < mc.Chains; k++ {
		mc.Inits = append(mc.Inits, r.net.initialPoint(rand.New(rand.NewPCG(c.Seed, 0x484d43+uint64(k)))))
	}
	if progress != nil {
		var mu sync.Mutex
		mc.Progress = func(int, int) {
			mu.Lock()
			defer mu.Unlock()
			progress()
		}
	}
	start := time.Now()
	res, err := mcmc.Sample(ctx, r.logDensity, r.net.dim, mc)
	if err != nil {
		return nil, nil, fmt.Errorf("train: posterior hmc: %w", err)
	}
	rep := &HMCReport{Algorithm: mc.Algorithm.String(), Params: r.net.dim, Chains: mc.Chains, Warmup: mc.Warmup,
		Draws: mc.Draws, Kept: c.HMCSamples, Thin: float64(mc.Chains*mc.Draws) / float64(c.HMCSamples),
		Prior: r.net.priorDesc, Seconds: time.Since(start).Seconds()}
	if r.data.labels == nil {
		rep.Likelihood = fmt.Sprintf("Gaussian, fixed noise precision %g (variance %.4g)", r.data.tau, 1/r.data.tau)
	} else {
		rep.Likelihood = "categorical (softmax)"
	}
	for _, in := range res.Info {
		rep.Divergences += in.Divergences
		rep.WarmupDivergences += in.WarmupDivergences
		rep.MaxDepthHits += in.MaxDepthHits
		rep.MeanAcceptStat += in.MeanAcceptStat / float64(mc.Chains)
		rep.MeanTreeDepth += in.MeanTreeDepth / float64(mc.Chains)
		rep.StepSizes = append(rep.StepSizes, in.StepSize)
		rep.Gradients += in.Leapfrog
	}
	params := make([][][]float64, res.Dim)
	for j := range params {
		params[j] = res.Param(j)
	}
	rep.ParamDiag = summarizeDiag("parameters", params)
	rep.FunctionDiag = r.functionDiag(res, test)
	lp := make([][]float64, res.Chains)
	for ch := range lp {
		for _, st := range res.Stats[ch] {
			lp[ch] = append(lp[ch], st.LogDensity)
		}
	}
	rep.LogDensity = summarizeDiag("log densities", [][][]float64{lp})
	all := res.Flatten(1)
	var kept [][]float64
	for _, i := range hmcKeep(len(all), c.HMCSamples) {
		kept = append(kept, all[i])
	}
	return kept, rep, nil
}

// functionDiag computes R̂ and ESS of the network's predictions at the inputs test: the output
// f(x) (regression) or the softmax probabilities (classification), every output of every input.
func (r *hmcRun) functionDiag(res *mcmc.Result, test [][]float32) HMCDiag {
	n := r.net
	rows := len(test)
	x := make([]float32, 0, rows*n.in)
	for _, t := range test {
		x = append(x, t...)
	}
	what := "predictive means f(x) at test inputs"
	if r.data.labels != nil {
		what = "predictive probabilities at test inputs"
	}
	qs := make([][][]float64, rows*n.out)
	for q := range qs {
		qs[q] = make([][]float64, res.Chains)
		for ch := range qs[q] {
			qs[q][ch] = make([]float64, res.Draws)
		}
	}
	s := n.newScratch(rows)
	for ch := 0; ch < res.Chains; ch++ {
		for i := 0; i < res.Draws; i++ {
			f := n.forward(res.Draw(ch, i), x, rows, s)
			if r.data.labels != nil {
				for row := 0; row < rows; row++ {
					softmaxInPlace(f[row*n.out : (row+1)*n.out])
				}
			}
			for q, v := range f {
				qs[q][ch][i] = v
			}
		}
	}
	return summarizeDiag(what, qs)
}

func softmaxInPlace(v []float64) {
	m := slices.Max(v)
	z := 0.0
	for i, x := range v {
		v[i] = math.Exp(x - m)
		z += v[i]
	}
	for i := range v {
		v[i] /= z
	}
}

// hmcTestInputs returns up to maxHMCFunctionals inputs evenly spaced through the test set (the
// training set when the test set is empty).
func (t *Trainer) hmcTestInputs() [][]float32 {
	d := t.Test
	if d == nil || d.N == 0 {
		d = t.Train
	}
	k := min(d.N, maxHMCFunctionals)
	var out [][]float32
	for _, i := range hmcKeep(d.N, k) {
		out = append(out, d.Row(i))
	}
	return out
}

// setHMCNets replaces t.Nets by one deterministic network per kept draw (member k > 0 named
// under runtime.MemberPrefix(k)).
func (t *Trainer) setHMCNets(kept [][]float64) error {
	n := t.hmc.net
	nets := make([]*bnn.Net[float32], len(kept))
	for k, theta := range kept {
		net, err := bnn.New[float32](t.spec, nil, rand.New(rand.NewPCG(0, 0)))
		if err != nil {
			return fmt.Errorf("train: posterior hmc: %w", err)
		}
		byName := map[string][]float32{}
		for _, p := range net.Params() {
			byName[p.Name] = p.Value
		}
		for _, l := range n.layers {
			if l.op != runtime.OpLinear {
				continue
			}
			prefix := ""
			if l.name != "" {
				prefix = l.name + "."
			}
			set := func(tensor string, from []float64) error {
				v, ok := byName[prefix+tensor]
				if !ok || len(v) != len(from) {
					return fmt.Errorf("train: posterior hmc: layer %q: no %s tensor of %d values", l.name, tensor, len(from))
				}
				for i, x := range from {
					v[i] = float32(x)
				}
				return nil
			}
			w := l.off + l.in*l.out
			if err := set("weight", theta[l.off:w]); err != nil {
				return err
			}
			if l.bias {
				if err := set("bias", theta[w:w+l.out]); err != nil {
					return err
				}
			}
		}
		if k > 0 {
			net.SetPrefix(runtime.MemberPrefix(k))
		}
		nets[k] = net
	}
	t.Nets = nets
	return nil
}

// runHMC samples the posterior, stores the kept draws as the ensemble, evaluates it and writes
// the checkpoint and model (posterior hmc's Run). The sampler keeps no resumable state: an
// interrupted run returns ctx's error and writes nothing.
func (t *Trainer) runHMC(ctx context.Context, h Hooks) error {
	c := &t.Config
	if t.Epoch >= 1 {
		return nil
	}
	total := t.StepsPerEpoch()
	done := 0
	var progress func()
	if h.Step != nil {
		progress = func() {
			done++
			h.Step(StepInfo{Epoch: 1, Batch: done, Batches: total, Step: int64(done)})
		}
	}
	start := time.Now()
	kept, rep, err := t.hmc.sample(ctx, c, t.hmcTestInputs(), progress)
	if err != nil {
		return err
	}
	t.hmc.Report = rep
	if err := t.setHMCNets(kept); err != nil {
		return err
	}
	t.TrainSeconds += time.Since(start).Seconds()
	t.Epoch, t.Step = 1, int64(total)
	em := EpochMetrics{Epoch: 1, Step: t.Step, TrainSeconds: t.TrainSeconds, StepsPerSecond: float64(total) / max(rep.Seconds, 1e-9)}
	// Loss and NLL: the kept draws' mean −log p(θ | D)/N (up to its constant) and mean
	// per-example negative log-likelihood (with its constants, as the other posteriors report).
	s := t.hmc.pool.Get().(*hmcScratch) // the training set's size, as the chains used
	defer t.hmc.pool.Put(s)
	grad := make([]float64, t.hmc.net.dim)
	for _, theta := range kept {
		lp := t.hmc.net.logPost(&t.hmc.data, theta, grad, s)
		em.Loss -= lp / float64(t.Train.N)
		em.NLL += t.hmc.nll(theta, s)
	}
	em.Loss /= float64(len(kept))
	em.NLL /= float64(len(kept))
	if t.Test.N > 0 {
		if em.Test, err = t.Evaluate(); err != nil {
			return err
		}
	}
	t.History = append(t.History, em)
	if h.Epoch != nil {
		h.Epoch(em)
	}
	return t.saveFinal(h)
}

// nll is the mean per-example negative log-likelihood of the training set at theta, with the
// constants (½·log 2π − ½·log τ per output for regression).
func (r *hmcRun) nll(theta []float64, s *hmcScratch) float64 {
	d := &r.data
	f := r.net.forward(theta, d.x, d.n, s)
	ll := d.logLik(f, s.delta[:len(f)], r.net.out)
	if d.labels == nil {
		ll -= float64(len(f)) * 0.5 * (math.Log(2*math.Pi) - math.Log(d.tau))
	}
	return -ll / float64(d.n)
}

// HMC returns posterior hmc's report once sampling is done (nil otherwise).
func (t *Trainer) HMC() *HMCReport {
	if t.hmc == nil {
		return nil
	}
	return t.hmc.Report
}
