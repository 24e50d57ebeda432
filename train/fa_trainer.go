package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/fa"
	"github.com/edgebnn/edgebnn/train/optim"
)

// Factor-analysis posteriors (MATH.md §2) over the flattened parameter vector θ of the whole
// network — every Linear and Conv2d layer in the runtime's order (residual bodies before their
// shortcuts), each layer's weight (PyTorch layout, row-major) followed by its bias:
//
//   - vifa: variational inference with train/fa's VIFA. The network is deterministic; it only
//     supplies the likelihood gradient at θ = c + F h + √ψ ⊙ z by backpropagation;
//   - fa_em, fa_sga, swag: the deterministic network is trained with the configured optimizer
//     and its parameter vector, every fa_every steps from epoch fa_start_epoch on, is fed to
//     train/fa's online EM, online SGA or SWAG (fa.SWAG: the running moments and the last
//     latent_dim deviations, whose Gaussian is an FA model); c is the running mean of the
//     iterates.
//
// Either way the model the trainer evaluates and writes is runtime kind "fa" (Spec.FA, tensors
// fa.mean, fa.factors, fa.psi).

// IsFA reports whether posterior is one of the factor-analysis kinds.
func IsFA(posterior string) bool {
	return posterior == "vifa" || posterior == "fa_em" || posterior == "fa_sga" || posterior == "swag"
}

// faNetPrefix prefixes, in a checkpoint of fa_em / fa_sga, the deterministic network's current
// parameters (the converter leaves every "optim/" tensor out of the model).
const faNetPrefix = OptimPrefix + "fa_net/"

// faStateBlob is the checkpoint blob with the FA learner's state (see faStateEncoder).
const faStateBlob = "train.fa"

// faRun is the factor-analysis part of a Trainer.
type faRun struct {
	kind      string
	params    []*autodiff.Param[float32] // the parameters θ covers, in θ's order
	dim, rank int
	spec      runtime.Spec // the deployed model's description (kind fa)
	theta     []float64    // fa_em, fa_sga, swag: the parameters observe feeds to the online fit

	vifa *fa.VIFA
	// avg is the running average of c, F and log ψ (in Psi) over the last fa_average_epochs.
	avg  *fa.Model
	nAvg int64

	online onlineLearner
	warmup int
}

// onlineLearner is the fit of fa_em, fa_sga (*fa.Online) or swag (*fa.SWAG) to the iterates.
type onlineLearner interface {
	Observe(theta []float64) error
	Count() int
	Model() *fa.Model
	SharedModel() *fa.Model
	SharedState() (fa.State, error)
	LoadState(fa.State) error
}

// newFARun sets up the FA posterior for t's network (t.Nets[0], deterministic).
func newFARun(t *Trainer) (*faRun, error) {
	c := &t.Config
	net := t.Nets[0]
	byName := map[string]*autodiff.Param[float32]{}
	for _, p := range net.Params() {
		byName[p.Name] = p.Param
	}
	r := &faRun{kind: c.Posterior, rank: c.LatentDim, spec: *t.spec, warmup: c.FAWarmup}
	used := map[string]bool{}
	var walk func(ls []runtime.LayerSpec) ([]runtime.LayerSpec, error)
	walk = func(ls []runtime.LayerSpec) ([]runtime.LayerSpec, error) {
		out := make([]runtime.LayerSpec, len(ls))
		for i, l := range ls {
			var err error
			if l.Body, err = walk(l.Body); err != nil {
				return nil, err
			}
			if l.Shortcut, err = walk(l.Shortcut); err != nil {
				return nil, err
			}
			if l.Op == runtime.OpLinear || l.Op == runtime.OpConv2d {
				prefix := ""
				if l.Name != "" {
					prefix = l.Name + "." // a bare module's tensors have no prefix
				}
				names := []string{prefix + "weight"}
				if l.Bias {
					names = append(names, prefix+"bias")
				}
				for _, n := range names {
					p, ok := byName[n]
					if !ok {
						return nil, fmt.Errorf("train: posterior %s: layer %q has no tensor %q", c.Posterior, l.Name, n)
					}
					r.params = append(r.params, p)
					used[n] = true
				}
				l.Posterior = &runtime.PosteriorSpec{Kind: runtime.KindFA}
			}
			out[i] = l
		}
		return out, nil
	}
	layers, err := walk(t.spec.Layers)
	if err != nil {
		return nil, err
	}
	for _, p := range net.Params() {
		if !used[p.Name] {
			return nil, fmt.Errorf("train: posterior %s: tensor %q is not a Linear or Conv2d weight or bias; "+
				"the factor-analysis posteriors cover only those layers", c.Posterior, p.Name)
		}
	}
	for _, p := range r.params {
		r.dim += len(p.Value)
	}
	if r.dim < 1 {
		return nil, fmt.Errorf("train: posterior %s: the network has no parameters", c.Posterior)
	}
	if r.rank > r.dim {
		return nil, fmt.Errorf("config: latent_dim %d exceeds the %d parameters", r.rank, r.dim)
	}
	if int64(r.dim)*int64(r.rank) > math.MaxInt32 {
		return nil, fmt.Errorf("config: latent_dim %d × %d parameters is too large", r.rank, r.dim)
	}
	r.spec.Layers = layers
	r.spec.FA = &runtime.FASpec{Dim: r.dim, Rank: r.rank}
	theta := make([]float64, r.dim)
	r.getTheta(theta)
	if r.kind == "vifa" {
		upe := t.StepsPerEpoch()
		lrF, lrG := c.LRFactors, c.LRLogVar
		if lrF == 0 {
			lrF = c.LR
		}
		if lrG == 0 {
			lrG = c.LR
		}
		initMean := theta // the network's initialisation (or init_from's weights)
		if c.FAInitMean == "zeros" {
			initMean = nil // Algorithm 1
		}
		r.vifa, err = fa.NewVIFA(r.dim, fa.VIFAConfig{Rank: r.rank, N: t.Train.N, PriorPrecision: c.PriorPrecision,
			MCSamples: c.MCSamples, LRMean: c.LR, LRFactors: lrF, LRLogVar: lrG, Optimizer: c.Optimizer, Clip: c.Clip,
			ClipPerParameter: c.FAClipPerParameter, InitMean: initMean, InitFactorScale: c.FAInitFactorScale, InitLogVar: c.FAInitLogVar,
			MeanOnlySteps: c.FAMeanOnlyEpochs * upe, RampSteps: c.FARampEpochs * upe, Seed: c.Seed})
	} else {
		r.theta = theta // observe's buffer (vifa keeps none: VIFA copies its initial mean)
		oc := fa.OnlineConfig{Rank: r.rank, Warmup: c.FAWarmup, LR: c.FALR, Weighting: c.FAWeighting, Seed: c.Seed}
		switch r.kind {
		case "fa_em":
			r.online, err = fa.NewOnlineEM(r.dim, oc)
		case "fa_sga":
			r.online, err = fa.NewOnlineSGA(r.dim, oc)
		default:
			r.online, err = fa.NewSWAG(r.dim, r.rank)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("train: posterior %s: %w", c.Posterior, err)
	}
	return r, nil
}

// getTheta copies the network's parameters into theta.
func (r *faRun) getTheta(theta []float64) {
	off := 0
	for _, p := range r.params {
		for i, v := range p.Value {
			theta[off+i] = float64(v)
		}
		off += len(p.Value)
	}
}

// setTheta copies theta into the network's parameters.
func (r *faRun) setTheta(theta []float64) {
	off := 0
	for _, p := range r.params {
		for i := range p.Value {
			p.Value[i] = float32(theta[off+i])
		}
		off += len(p.Value)
	}
}

// model returns the current posterior: vifa's (tail-averaged when averaging has begun), or the
// online fit's. Until the online fit's warm-up is over it is the running mean of the iterates (the
// current parameters before the first) with F = 0 and ψ = 0, i.e. a deterministic network.
func (r *faRun) model() *fa.Model {
	switch {
	case r.vifa != nil && r.avg != nil:
		m := r.avg.Clone()
		for i, g := range m.Psi {
			m.Psi[i] = math.Exp(g)
		}
		return m
	case r.vifa != nil:
		return r.vifa.Posterior()
	case r.online.Count() > r.warmup:
		return r.online.Model()
	}
	m := &fa.Model{D: r.dim, K: r.rank, Mean: make([]float64, r.dim), F: make([]float64, r.dim*r.rank),
		Psi: make([]float64, r.dim)}
	if r.online.Count() > 0 {
		copy(m.Mean, r.online.Model().Mean)
	} else {
		r.getTheta(m.Mean)
	}
	return m
}

// tensors returns the model's fa.mean, fa.factors and fa.psi: model()'s values in float32,
// converted from the learners' own buffers (SharedPosterior, SharedModel) rather than model()'s
// float64 copies of them (vifa: 4 + 2·latent_dim values per parameter, a checkpoint's garbage).
func (r *faRun) tensors() runtime.Tensors {
	var c, f, psi []float32
	switch {
	case r.vifa != nil && r.avg != nil:
		c, f = toFloat32(r.avg.Mean), toFloat32(r.avg.F)
		psi = make([]float32, r.dim)
		for i, g := range r.avg.Psi {
			psi[i] = float32(math.Exp(g))
		}
	case r.vifa != nil:
		c, f, psi = r.vifa.SharedPosterior().Float32()
	case r.online.Count() > r.warmup:
		c, f, psi = r.online.SharedModel().Float32()
	default:
		// The running mean of the iterates (the current parameters before the first), F = 0, ψ = 0.
		if r.online.Count() > 0 {
			c = toFloat32(r.online.SharedModel().Mean)
		} else {
			c = make([]float32, 0, r.dim)
			for _, p := range r.params {
				c = append(c, p.Value...)
			}
		}
		f, psi = make([]float32, r.dim*r.rank), make([]float32, r.dim)
	}
	return runtime.Tensors{
		"fa.mean":    {Shape: []int{r.dim}, Data: c},
		"fa.factors": {Shape: []int{r.dim, r.rank}, Data: f},
		"fa.psi":     {Shape: []int{r.dim}, Data: psi},
	}
}

// toFloat32 returns x rounded to float32.
func toFloat32(x []float64) []float32 {
	y := make([]float32, len(x))
	for i, v := range x {
		y[i] = float32(v)
	}
	return y
}

// runtimeModel builds the deployed model from the current posterior.
func (r *faRun) runtimeModel() (*runtime.Model, error) {
	spec := r.spec
	m, err := runtime.New(&spec, r.tensors())
	if err != nil {
		return nil, fmt.Errorf("train: posterior %s: the FA model does not build in the runtime: %w", r.kind, err)
	}
	return m, nil
}

// observe feeds the current parameters to the online fit (fa_em, fa_sga).
func (r *faRun) observe() error {
	r.getTheta(r.theta)
	if err := r.online.Observe(r.theta); err != nil {
		return fmt.Errorf("train: posterior %s: %w", r.kind, err)
	}
	return nil
}

// StepsPerEpoch is the number of optimizer steps (VIFA updates for vifa) per epoch: the number
// of minibatches, divided by mc_samples for vifa (at least one); for hmc, the sampler's
// iterations over all chains, warm-up included.
func (t *Trainer) StepsPerEpoch() int {
	if c := &t.Config; c.Posterior == "hmc" {
		return c.HMCChains * (c.HMCWarmup + c.HMCDraws)
	}
	if t.Config.Posterior == "vifa" {
		return max(1, t.Batches()/t.Config.MCSamples)
	}
	return t.Batches()
}

// vifaLRFactor is the learning-rate factor of global update g (0-based) in epoch e: the
// milestones' factor times the linear decay to 0 over the last fa_decay_epochs.
func (t *Trainer) vifaLRFactor(e int, g int64) float64 {
	c := &t.Config
	f := optim.MultiStepLR{Milestones: c.Milestones, Gamma: c.Gamma}.Factor(e)
	if c.FADecayEpochs > 0 {
		upe := int64(t.StepsPerEpoch())
		total := int64(c.Epochs) * upe
		from := int64(c.Epochs-c.FADecayEpochs) * upe
		if g >= from {
			f *= float64(total-g) / float64(total-from)
		}
	}
	return f
}

// runVIFAEpoch trains one epoch of vifa: ⌊batches/L⌋ updates, each drawing L parameter samples,
// sample s of update u on minibatch (u·L + s) mod batches of the epoch's shuffle.
func (t *Trainer) runVIFAEpoch(ctx context.Context, h Hooks) (EpochMetrics, error) {
	c := &t.Config
	r := t.fa
	e := t.Epoch
	upe := t.StepsPerEpoch()
	em := EpochMetrics{Epoch: e + 1, LR: c.LR * t.vifaLRFactor(e, int64(e)*int64(upe)), KLWeight: 1,
		Loss: t.partial.Loss, NLL: t.partial.NLL, KL: t.partial.KL}
	perm := rand.New(rand.NewPCG(c.Seed, uint64(e)+1)).Perm(t.Train.N)
	nb := t.Batches()
	next := 0
	lik := func(theta, grad []float64) (float64, error) {
		b := next % nb
		next++
		return t.vifaNLL(perm[b*c.BatchSize:min((b+1)*c.BatchSize, t.Train.N)], theta, grad)
	}
	avgFrom := int64(c.Epochs-c.FAAverageEpochs) * int64(upe)
	start := time.Now()
	n := float64(t.Train.N)
	steps := 0
	for u := t.batch; u < upe; u++ { // a resumed interrupted epoch goes on from its next update
		if err := ctx.Err(); err != nil {
			t.interrupted(u, em, start)
			return em, err
		}
		g := int64(e)*int64(upe) + int64(u)
		r.vifa.SetLRFactor(t.vifaLRFactor(e, g))
		next = u * c.MCSamples
		st, err := r.vifa.Step(lik)
		if err != nil {
			return em, fmt.Errorf("train: epoch %d update %d: %w", e+1, t.Step, err)
		}
		kl, err := r.vifa.KL()
		if err != nil {
			if errors.Is(err, kernels.ErrNotPositiveDefinite) {
				// After an update: it made the posterior's covariance degenerate (lr 1e6 sent ψ
				// to 0), which the error alone ("pivot 0 is +Inf") did not say.
				err = fmt.Errorf("%w (this update left q's covariance FFᵀ + diag ψ degenerate: lower the learning rates lr %g, lr_factors %g, lr_log_var %g?)",
					err, c.LR, c.LRFactors, c.LRLogVar)
			}
			return em, fmt.Errorf("train: epoch %d update %d: %w", e+1, t.Step, err)
		}
		if c.FAAverageEpochs > 0 && g >= avgFrom {
			r.accumulate()
		}
		t.Step++
		steps++
		loss := st.NLL + kl/n
		if math.IsNaN(loss) || math.IsInf(loss, 0) {
			return em, fmt.Errorf("train: epoch %d update %d: the loss is %v (lower the learning rate?)", e+1, t.Step, loss)
		}
		em.Loss += loss
		em.NLL += st.NLL
		em.KL += kl
		if h.Step != nil {
			h.Step(StepInfo{Epoch: e + 1, Batch: u + 1, Batches: upe, Step: t.Step, Loss: loss, NLL: st.NLL, KL: kl, KLWeight: 1})
		}
	}
	t.finishEpoch(&em, upe, steps, start)
	return em, nil
}

// accumulate adds vifa's current c, F and log ψ to the running average. The average restarts from
// the current posterior when it has none (or no count: resumeFA refuses a negative one, and a
// weight 1/0 would make it NaN).
func (r *faRun) accumulate() {
	p := r.vifa.SharedPosterior() // read, not copied: no 4 + 2K float32 values of garbage per update
	if r.avg == nil || r.nAvg < 1 {
		a := p.Clone()
		for i, v := range a.Psi {
			a.Psi[i] = math.Log(v)
		}
		r.avg, r.nAvg = a, 1
		return
	}
	r.nAvg++
	w := 1 / float64(r.nAvg)
	for i := range p.Mean {
		r.avg.Mean[i] += w * (p.Mean[i] - r.avg.Mean[i])
		r.avg.Psi[i] += w * (math.Log(p.Psi[i]) - r.avg.Psi[i])
	}
	for i := range p.F {
		r.avg.F[i] += w * (p.F[i] - r.avg.F[i])
	}
}

// vifaNLL is VIFA's likelihood callback: the mean per-example negative log-likelihood of the
// examples idx under the network with parameters theta, and its gradient (by backpropagation).
func (t *Trainer) vifaNLL(idx []int, theta, grad []float64) (float64, error) {
	c := &t.Config
	d := t.Train
	r := t.fa
	nb := len(idx)
	t.gatherBatch(idx)
	r.setTheta(theta)
	for _, p := range r.params {
		p.ZeroGrad()
	}
	tp := t.tape
	tp.Reset()
	n := t.Nets[0]
	n.Begin()
	x := tp.Const(t.xb, append([]int{nb}, d.Shape...)...)
	out := n.Forward(tp, x, true)
	var l *autodiff.Var[float32]
	if d.Labels != nil {
		l = tp.CrossEntropy(out, t.yb)
	} else {
		// GaussianNLL averages over examples and outputs; the per-example NLL sums the outputs.
		l = tp.Scale(tp.GaussianNLL(out, tp.Const(t.tb, nb, d.Outputs), tp.Scalar(float32(c.NoisePrecision))), float32(d.Outputs))
	}
	if err := tp.Backward(l); err != nil {
		return 0, err
	}
	off := 0
	for _, p := range r.params {
		for i, g := range p.Grad {
			grad[off+i] = float64(g)
		}
		off += len(p.Grad)
	}
	return float64(l.Item()), nil
}
