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

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bfvi"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// The draws PSIS takes by default and at least: Vehtari et al. recommend S large enough that
// the tail fit (M = ⌈min(S/5, 3√S)⌉ draws) is stable; with fewer than 100 draws the tail holds
// under 20 and k̂ is noise.
const (
	DefaultPSISDraws = 1000
	MinPSISDraws     = 100
	MaxPSISDraws     = 1_000_000
)

// MaxPSISWork bounds draws × training examples × network parameters (multiply-adds of the
// log-joint evaluations), about an hour on one core of the host: PSIS is a diagnostic for small
// models (the statistical models of paper 002, networks of a few thousand weights).
const MaxPSISWork = 2e12

// PSISOptions configures Trainer.PSIS.
type PSISOptions struct {
	// Draws is the number of draws from q (0: DefaultPSISDraws).
	Draws int
	// Seed seeds the draws: draw s uses its own stream (Seed, s), so the result does not depend
	// on the number of workers.
	Seed uint64
	// Workers evaluates draws in parallel (0: GOMAXPROCS).
	Workers int
}

// PSISReport is Pareto-smoothed importance sampling's verdict on how well a posterior q matches
// the exact posterior p(θ | D) ∝ p(θ) p(D | θ) of the model it was trained for, from S draws
// θ_s ~ q and the log importance ratios log r_s = log p(θ_s) + log p(D | θ_s) − log q(θ_s)
// (Yao, Vehtari, Simpson, Gelman 2018, "Yes, but did it work?").
type PSISReport struct {
	// KHat is the generalized-Pareto shape of the ratios' upper tail (bfvi.ParetoK): < 0.5 q is
	// close to the posterior, 0.5–0.7 usable for importance sampling, > 0.7 unreliable. It is
	// null when every ratio is equal (q is the posterior up to rounding), which Verdict says.
	KHat    *float64 `json:"khat"`
	Verdict string   `json:"verdict"`
	// Draws is S; Params the number of parameters drawn from q; Fixed the parameters held at
	// their values (deterministic layers: the diagnostic is then of q against the posterior
	// conditional on them); Examples the training examples in the likelihood.
	Draws    int `json:"draws"`
	Params   int `json:"params"`
	Fixed    int `json:"fixed_params"`
	Examples int `json:"examples"`
	// Posterior, Likelihood and Prior describe q and the log joint.
	Posterior  string `json:"posterior"`
	Likelihood string `json:"likelihood"`
	Prior      string `json:"prior"`
	// ELBO is the mean log ratio, the evidence lower bound of q at temperature 1 and with the
	// whole KL (whatever temperature or KL schedule training used); LogEvidence is the
	// importance-sampling estimate log (1/S) Σ r_s of log p(D), with every normalising constant;
	// ESS is the importance-sampling effective sample size (Σ r)² / Σ r² of the raw ratios.
	ELBO        float64 `json:"elbo"`
	LogEvidence float64 `json:"log_evidence_is"`
	ESS         float64 `json:"is_ess"`
	Seconds     float64 `json:"seconds"`
}

// Line is the report as one line of text.
func (r *PSISReport) Line() string {
	k := "undefined"
	if r.KHat != nil {
		k = fmt.Sprintf("%.3f", *r.KHat)
	}
	return fmt.Sprintf("PSIS k̂ %s (%s) from %d draws of q over %d parameters (%d held fixed); log joint of %d training examples; ELBO %.6g, IS log evidence %.6g, IS ESS %.1f",
		k, r.Verdict, r.Draws, r.Params, r.Fixed, r.Examples, r.ELBO, r.LogEvidence, r.ESS)
}

// psisVerdict reads k̂ as Vehtari et al. do.
func psisVerdict(k float64) string {
	switch {
	case k < 0.5:
		return "good: q is close to the posterior"
	case k < 0.7:
		return "ok: importance sampling with q is usable"
	}
	return "unreliable: q misses the posterior's tails"
}

// PSIS computes the Pareto-smoothed importance sampling diagnostic k̂ of the trainer's posterior
// against the log joint of its training set (the data the checkpoint was trained on, in full,
// as one batch): log p(D | θ) with the trainer's likelihood (categorical for classification,
// Gaussian of precision noise_precision for regression, with its constants) plus log p(θ), each
// layer's own prior (ffg's prior buffers, fcg's and Bernstein's N(0, s²); for the factor-analysis
// posteriors N(0, 1/prior_precision), or N(0, 1/(N·weight_decay)) for fa_em, fa_sga and swag
// trained with weight decay — the prior that SGD's L2 term is).
//
// Posteriors with a closed-form density over the weights are supported: ffg_w, fcg_w,
// bernstein_last (the deterministic body is held fixed) and the factor-analysis kinds vifa,
// fa_em, fa_sga and swag. Inducing-weight posteriors (q(W) is a mixture over U), ensembles,
// MC dropout and hmc are refused, as are networks the log joint does not cover (it is the
// hand-written float64 MLP of posterior hmc: Linear, ReLU, Tanh, Sigmoid, Flatten, Identity) and
// runs of more than MaxPSISWork multiply-adds.
func (t *Trainer) PSIS(ctx context.Context, opt PSISOptions) (*PSISReport, error) {
	c := &t.Config
	if opt.Draws == 0 {
		opt.Draws = DefaultPSISDraws
	}
	if opt.Draws < MinPSISDraws || opt.Draws > MaxPSISDraws {
		return nil, fmt.Errorf("psis: %d draws outside [%d, %d]", opt.Draws, MinPSISDraws, MaxPSISDraws)
	}
	if err := CheckPSIS(c.Posterior); err != nil {
		return nil, fmt.Errorf("psis: %w", err)
	}
	switch {
	case len(t.Nets) != 1:
		return nil, fmt.Errorf("psis: %d networks: PSIS needs one posterior", len(t.Nets))
	}
	if t.Train == nil || t.Train.N == 0 {
		return nil, errors.New("psis: no training data")
	}
	// The log joint's network: the architecture with every posterior taken off.
	spec := *t.spec
	spec.Layers = slices.Clone(spec.Layers)
	for i := range spec.Layers {
		spec.Layers[i].Posterior = nil
	}
	spec.FA = nil
	net, err := newHMCNet(&spec, nil, 1, math.MaxInt)
	if err != nil {
		return nil, fmt.Errorf("psis: the log joint (the float64 MLP posterior hmc samples): %w", err)
	}
	if work := float64(opt.Draws) * float64(t.Train.N) * float64(net.dim); work > MaxPSISWork {
		return nil, fmt.Errorf("psis: %d draws × %d training examples × %d parameters = %.3g multiply-adds, more than MaxPSISWork = %.3g: use fewer draws (--psis-draws) or a smaller model",
			opt.Draws, t.Train.N, net.dim, work, float64(MaxPSISWork))
	}
	if t.Train.Dim != net.in {
		return nil, fmt.Errorf("psis: the data has %d features, the network %d inputs", t.Train.Dim, net.in)
	}
	src, err := t.psisSource(net)
	if err != nil {
		return nil, err
	}
	d := hmcData{n: t.Train.N, x: t.Train.X, labels: t.Train.Labels, targets: t.Train.Targets, tau: c.NoisePrecision}
	rep := &PSISReport{Draws: opt.Draws, Params: src.params, Fixed: net.dim - src.params, Examples: d.n,
		Posterior: c.Posterior, Prior: src.prior, Likelihood: "categorical (softmax)"}
	if d.labels == nil {
		rep.Likelihood = fmt.Sprintf("Gaussian, noise precision %g", d.tau)
	}
	workers := opt.Workers
	if workers <= 0 {
		workers = goruntime.GOMAXPROCS(0)
	}
	workers = min(workers, opt.Draws)
	start := time.Now()
	ratios := make([]float64, opt.Draws)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	var next int64
	var mu sync.Mutex
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			ev := newLogLik(net, &d)
			theta := make([]float64, net.dim)
			for {
				mu.Lock()
				s := next
				next++
				mu.Unlock()
				if s >= int64(opt.Draws) || ctx.Err() != nil {
					return
				}
				rng := rand.New(rand.NewPCG(opt.Seed, uint64(s)))
				logQ, logPrior, err := src.draw(rng, theta)
				if err != nil {
					errs[w] = fmt.Errorf("psis: draw %d: %w", s, err)
					return
				}
				ll := ev.logLik(theta)
				r := logPrior + ll - logQ
				if math.IsNaN(r) || math.IsInf(r, 1) {
					errs[w] = fmt.Errorf("psis: draw %d: log ratio %g (log prior %g, log likelihood %g, log q %g)", s, r, logPrior, ll, logQ)
					return
				}
				ratios[s] = r
			}
		}(w)
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.ELBO, rep.LogEvidence, rep.ESS = isSummary(ratios)
	k, err := bfvi.ParetoK(ratios)
	if err != nil {
		return nil, fmt.Errorf("psis: %w", err)
	}
	if math.IsInf(k, -1) {
		rep.Verdict = "every ratio is equal: q is the posterior"
	} else {
		rep.KHat, rep.Verdict = &k, psisVerdict(k)
	}
	return rep, nil
}

// CheckPSIS reports whether PSIS supports posterior (a Config.Posterior value): nil for the
// posteriors with a closed-form density over the weights, else an error wrapping
// bnn.ErrNoDensity that says why.
func CheckPSIS(posterior string) error {
	switch posterior {
	case "ffg_w", "fcg_w", "bernstein_last", "vifa", "fa_em", "fa_sga", "swag":
		return nil
	case "inducing":
		return fmt.Errorf("posterior inducing: q(W) is a mixture over the inducing weights U: %w", bnn.ErrNoDensity)
	}
	return fmt.Errorf("posterior %s has no density over the weights to weigh draws by (%w); PSIS supports ffg_w, fcg_w, bernstein_last, vifa, fa_em, fa_sga and swag", posterior, bnn.ErrNoDensity)
}

// isSummary returns the mean of the log ratios, their log-mean-exp and the importance-sampling
// effective sample size (Σ r)² / Σ r² (ratios with −Inf count as zero weights).
func isSummary(lr []float64) (mean, lme, ess float64) {
	mx := slices.Max(lr)
	var s1, s2 float64
	for _, v := range lr {
		mean += v
		w := math.Exp(v - mx)
		s1 += w
		s2 += w * w
	}
	n := float64(len(lr))
	return mean / n, mx + math.Log(s1/n), s1 * s1 / s2
}

// psisSource draws θ (in the log joint's layout) from the posterior with log q and log prior.
type psisSource struct {
	params int
	prior  string
	draw   func(rng *rand.Rand, theta []float64) (logQ, logPrior float64, err error)
}

// psisSource returns the trainer's posterior as a sampler over net's θ.
func (t *Trainer) psisSource(net *hmcNet) (*psisSource, error) {
	c := &t.Config
	if t.fa != nil {
		m := t.fa.model()
		if m.D != net.dim {
			return nil, fmt.Errorf("psis: the FA posterior covers %d parameters, the network has %d", m.D, net.dim)
		}
		dens, err := m.NewDensity()
		if err != nil {
			return nil, fmt.Errorf("psis: posterior %s: %w (a posterior without variance in some direction has no density)", c.Posterior, err)
		}
		prec := c.PriorPrecision
		desc := fmt.Sprintf("N(0, 1/%g) on every parameter (prior_precision)", prec)
		if c.Posterior != "vifa" && c.WeightDecay > 0 {
			prec = float64(t.Train.N) * c.WeightDecay
			desc = fmt.Sprintf("N(0, 1/%g) on every parameter (N · weight_decay)", prec)
		}
		return &psisSource{params: m.D, prior: desc, draw: func(rng *rand.Rand, theta []float64) (float64, float64, error) {
			m.Sample(rng, theta)
			lp := 0.0
			for _, v := range theta {
				lp += -0.5*prec*v*v + 0.5*math.Log(prec/(2*math.Pi))
			}
			return dens.LogPDF(theta), lp, nil
		}}, nil
	}
	n := t.Nets[0]
	// Check the layout once: every Linear layer of net has a draw of the same shape.
	probe, err := n.Draw(rand.New(rand.NewPCG(0, 0)))
	if err != nil {
		return nil, fmt.Errorf("psis: %w", err)
	}
	offs, err := drawOffsets(net, probe)
	if err != nil {
		return nil, err
	}
	params := 0
	for _, d := range probe {
		params += d.Params
	}
	if params == 0 {
		return nil, errors.New("psis: the network has no stochastic layer")
	}
	desc := fmt.Sprintf("each layer's own (posterior %s)", c.Posterior)
	var mu sync.Mutex // Net.Draw is not safe for concurrent use (Bernstein layers load their flows)
	return &psisSource{params: params, prior: desc, draw: func(rng *rand.Rand, theta []float64) (float64, float64, error) {
		mu.Lock()
		ds, err := n.Draw(rng)
		mu.Unlock()
		if err != nil {
			return 0, 0, err
		}
		var lq, lp float64
		for i, d := range ds {
			copy(theta[offs[i]:], d.Weight)
			copy(theta[offs[i]+len(d.Weight):], d.Bias)
			lq += d.LogQ
			lp += d.LogPrior
		}
		return lq, lp, nil
	}}, nil
}

// drawOffsets returns each draw's offset in net's θ, checking that the draws are net's Linear
// layers in order with the same sizes.
func drawOffsets(net *hmcNet, ds []bnn.LayerDraw) ([]int, error) {
	var lin []hmcLayer
	for _, l := range net.layers {
		if l.op == runtime.OpLinear {
			lin = append(lin, l)
		}
	}
	if len(lin) != len(ds) {
		return nil, fmt.Errorf("psis: the posterior has %d weight layers, the log joint's network %d Linear layers", len(ds), len(lin))
	}
	offs := make([]int, len(ds))
	for i, d := range ds {
		l := lin[i]
		nb := 0
		if l.bias {
			nb = l.out
		}
		if d.Layer != l.name || len(d.Weight) != l.in*l.out || len(d.Bias) != nb {
			return nil, fmt.Errorf("psis: layer %q: a draw of %d weights and %d biases, the log joint's layer %q has %d and %d",
				d.Layer, len(d.Weight), len(d.Bias), l.name, l.in*l.out, nb)
		}
		offs[i] = l.off
	}
	return offs, nil
}

// psisChunk is the number of training rows one log-likelihood pass holds at a time.
const psisChunk = 512

// logLikEval evaluates log p(D | θ) with its constants, a chunk of rows at a time.
type logLikEval struct {
	net  *hmcNet
	d    *hmcData
	s    *hmcScratch
	dout []float64
}

func newLogLik(net *hmcNet, d *hmcData) *logLikEval {
	rows := min(d.n, psisChunk)
	return &logLikEval{net: net, d: d, s: net.newScratch(rows), dout: make([]float64, rows*net.out)}
}

func (e *logLikEval) logLik(theta []float64) float64 {
	d, in, out := e.d, e.net.in, e.net.out
	ll := 0.0
	for r0 := 0; r0 < d.n; r0 += psisChunk {
		rows := min(psisChunk, d.n-r0)
		part := hmcData{n: rows, x: d.x[r0*in : (r0+rows)*in], tau: d.tau}
		if d.labels != nil {
			part.labels = d.labels[r0 : r0+rows]
		} else {
			part.targets = d.targets[r0*out : (r0+rows)*out]
		}
		f := e.net.forward(theta, part.x, rows, e.s)
		ll += part.logLik(f, e.dout[:len(f)], out)
	}
	if d.labels == nil {
		ll += float64(d.n*out) * 0.5 * (math.Log(d.tau) - math.Log(2*math.Pi))
	}
	return ll
}
