package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/fsvi"
)

// fsviRun is the state of objective fsvi: the network's mean-field Gaussian tensors, the
// context sampler and the float64 tape of the KL. The posterior is the network's own ffg
// layers, so checkpoints, --resume and the deployed model are those of posterior ffg_w.
type fsviRun struct {
	ts      []bnn.FFGTensor[float32]
	sampler *fsvi.Sampler
	ktape   *autodiff.Tape[float64]
	opts    fsvi.Options
	xc      []float32
	// With fsvi_jacobian_grad: ∂KL/∂J per tensor, and ∂KL/∂μ, ∂KL/∂ρ computed before the step's
	// own gradients (the Hessian-vector products use the parameters' gradients) and added after.
	dJ, gmu, grho [][]float64
	rows          fsvi.FactoredRows // ∂KL/∂J of a factored linearisation (dJ is then not used)
	kl            float64
	// fsvi_kl last_layer: the network's last layer, the prior network (the initialisation with
	// the run's seed) and its tape, and the prior side of the step's KL.
	last  *bnn.LastLayer[float32]
	prior *bnn.Net[float32]
	ptape *autodiff.Tape[float32]
	pside fsvi.LastLayerPrior
}

// lastLayer reports whether the run uses the last-layer KL (fsvi_kl last_layer), which the
// step records on its own tape, instead of the linearisation's.
func (f *fsviRun) lastLayer() bool { return f.last != nil }

// fsviMemoryFraction: the Jacobian (D×P float64) and the KL's D×P temporaries may use at most
// this fraction of the memory.
const fsviMemoryFraction = 4

func newFSVIRun(t *Trainer) (*fsviRun, error) {
	c := &t.Config
	if len(t.Nets) != 1 {
		return nil, fmt.Errorf("train: objective fsvi trains one network, not %d", len(t.Nets))
	}
	ts, other := t.Nets[0].FFGTensors()
	if other > 0 || len(ts) == 0 {
		return nil, fmt.Errorf("train: objective fsvi needs every Linear and Conv2d layer mean-field Gaussian (ffg); %d are not (inference config)", other)
	}
	s, err := fsvi.NewSampler(c.Context, t.Train, c.ContextMargin)
	if err != nil {
		return nil, fmt.Errorf("config: context: %w", err)
	}
	m, err := t.Nets[0].Model()
	if err != nil {
		return nil, err
	}
	d := int64(c.ContextSize) * int64(m.OutputSize())
	if d > MaxFSVIDim {
		return nil, fmt.Errorf("config: context_size %d × %d outputs = %d output dimensions (at most %d)", c.ContextSize, m.OutputSize(), d, MaxFSVIDim)
	}
	if c.FSVIKL == "last_layer" {
		return newLastLayerRun(t, ts, s)
	}
	tp := autodiff.NewTape[float32]()
	factored, err := fsvi.Factorable(tp, t.Nets[0], ts, s.Shape())
	if err != nil {
		return nil, err
	}
	limit := memoryLimit() / fsviMemoryFraction
	if factored {
		// Linear layers only: J in factored form, no D×P matrix (fsvi.Linearize).
		var layers [][2]int
		for _, x := range ts {
			if len(x.Shape) == 2 {
				layers = append(layers, [2]int{x.Shape[0], x.Shape[1]})
			}
		}
		if need := fsvi.FactoredBytes(c.ContextSize, m.OutputSize(), layers, c.FSVIJacobianGrad == "both"); need > limit {
			return nil, fmt.Errorf("config: context_size %d: the function-space KL's buffers for %d outputs need %.1f GiB (limit %.1f GiB); lower context_size",
				c.ContextSize, d, float64(need)/(1<<30), float64(limit)/(1<<30))
		}
	} else {
		p := int64(0)
		for _, x := range ts {
			p += int64(len(x.Mean.Value))
		}
		// J and the direct KL path's three D×P copies (J, J·diag(σ), J·diag(σ₀) of one group), with
		// fsvi_jacobian_grad also ∂KL/∂J and two D×P products.
		copies := int64(4)
		if c.FSVIJacobianGrad != "none" {
			copies = 7
		}
		if d*p*8*copies > limit {
			return nil, fmt.Errorf("config: context_size %d: the Jacobian of %d outputs × %d parameters and the KL's temporaries need %.1f GiB (limit %.1f GiB); lower context_size",
				c.ContextSize, d, p, float64(d*p*8*copies)/(1<<30), float64(limit)/(1<<30))
		}
	}
	return &fsviRun{ts: ts, sampler: s, ktape: autodiff.NewTape[float64](),
		opts: fsvi.Options{Jitter: c.FSVIJitter, PerOutput: c.FSVICovariance == "per_output",
			Workspace: &fsvi.Workspace{}}}, nil
}

// newLastLayerRun prepares fsvi_kl last_layer: the network must end with a Linear ffg layer, and
// the prior network is the network as buildNets initialises it with the run's seed (whatever
// init_from or a resumed checkpoint loaded since), as timrudner/FSVI's prior mean parameters are
// its model's initialisation.
func newLastLayerRun(t *Trainer, ts []bnn.FFGTensor[float32], s *fsvi.Sampler) (*fsviRun, error) {
	last, err := t.Nets[0].LastFFGLinear()
	if err != nil {
		return nil, fmt.Errorf("config: fsvi_kl last_layer: %w", err)
	}
	prior, err := bnn.New[float32](t.spec, t.inits, initRNG(t.Config.Seed))
	if err != nil {
		return nil, err
	}
	return &fsviRun{ts: ts, sampler: s, last: last, prior: prior, ptape: newTape(),
		pside: fsvi.LastLayerPrior{N: t.Config.ContextSize, H: last.In, Q: last.Out},
		opts:  fsvi.Options{Jitter: t.Config.FSVIJitter, Workspace: &fsvi.Workspace{}}}, nil
}

// sample draws the step's context points into f.xc, from a generator keyed by the seed and the
// step, so a resumed run draws the same ones.
func (f *fsviRun) sample(t *Trainer) {
	c := &t.Config
	rng := rand.New(rand.NewPCG(c.Seed^0xf5c1, uint64(t.Step)))
	f.xc = f.sampler.Sample(rng, c.ContextSize, f.xc)
}

// lastLayerKL records the step's last-layer KL (fsvi.LastLayerKL) on tp: the features of the
// context points at one weight sample of the network's earlier layers (drawn from its stream
// after the likelihood's), against the prior network's features and outputs at the same points.
func (f *fsviRun) lastLayerKL(t *Trainer, tp *autodiff.Tape[float32]) (*autodiff.Var[float32], error) {
	c := &t.Config
	f.sample(t)
	shape := append([]int{c.ContextSize}, f.sampler.Shape()...)
	pt := f.ptape
	pt.Reset()
	x0 := pt.Const(f.xc, shape...)
	phi0, out0 := f.prior.FeaturesMean(pt, x0)
	if err := pt.Err(); err != nil {
		return nil, fmt.Errorf("fsvi: prior network: %w", err)
	}
	// The prior side, converted into the same buffers every step (the sds are read each step, as
	// a resumed checkpoint may have replaced the prior buffers).
	p := &f.pside
	p.Phi0, p.F0 = f64.Into(p.Phi0, phi0.Value()), f64.Into(p.F0, out0.Value())
	sw, sb := f.last.PriorSD()
	p.SW = f64.Into(p.SW, sw)
	if sb != nil { // nil for a last layer without bias, every step
		p.SB = f64.Into(p.SB, sb)
	}
	phi := t.Nets[0].Features(tp, tp.Const(f.xc, shape...), false)
	wm, ws, bm, bs := f.last.Vars(tp)
	kl := fsvi.LastLayerKL(tp, phi, wm, ws, bm, bs, &f.pside, f.opts.Jitter, f.opts.Workspace)
	if err := tp.Err(); err != nil {
		return nil, err
	}
	return kl, nil
}

// linearize draws the step's context points and computes the Jacobian at the current means.
func (f *fsviRun) linearize(t *Trainer) (*fsvi.Linearization, error) {
	c := &t.Config
	f.sample(t)
	lin, err := fsvi.Linearize(t.tape, t.Nets[0], f.ts, f.xc, c.ContextSize, f.sampler.Shape())
	if err != nil {
		return nil, fmt.Errorf("fsvi: %w", err)
	}
	return lin, nil
}

// prepare, with fsvi_jacobian_grad q or both, computes the KL and its full gradient (through J too) into
// f.gmu and f.grho before the step's own gradients; otherwise it does nothing.
func (f *fsviRun) prepare(t *Trainer, lin *fsvi.Linearization) error {
	if t.Config.FSVIJacobianGrad == "none" {
		return nil
	}
	if f.gmu == nil {
		for _, x := range f.ts {
			f.gmu = append(f.gmu, make([]float64, len(x.Mean.Value)))
			f.grho = append(f.grho, make([]float64, len(x.Mean.Value)))
		}
	}
	o := f.opts
	o.JacobianGradPriorSide = t.Config.FSVIJacobianGrad == "both"
	var rows fsvi.RowSource
	if lin.Factored() {
		o.JacobianRows, rows = &f.rows, &f.rows
	} else {
		if f.dJ == nil {
			for _, x := range f.ts {
				f.dJ = append(f.dJ, make([]float64, lin.D()*len(x.Mean.Value)))
			}
		}
		o.JacobianGrad, rows = f.dJ, fsvi.BlockRows(f.dJ)
	}
	for _, x := range f.ts {
		clear(x.Mean.Grad)
		clear(x.RawSD.Grad)
	}
	kl, err := fsvi.AddKLGrad(f.ktape, f.ts, lin, 1, o)
	if err != nil {
		return err
	}
	for i, x := range f.ts {
		for k, g := range x.Mean.Grad {
			f.gmu[i][k] = float64(g)
		}
		for k, g := range x.RawSD.Grad {
			f.grho[i][k] = float64(g)
		}
	}
	f.kl = kl
	if err := fsvi.JacobianVJP(t.tape, t.Nets[0], f.ts, f.xc, t.Config.ContextSize, f.sampler.Shape(), rows, f.gmu, 0); err != nil {
		return fmt.Errorf("fsvi: %w", err)
	}
	return nil
}

// addKLGrad adds w·∂KL/∂(μ, ρ) to the gradients and returns the KL.
func (f *fsviRun) addKLGrad(t *Trainer, lin *fsvi.Linearization, w float64) (float64, error) {
	if t.Config.FSVIJacobianGrad == "none" {
		return fsvi.AddKLGrad(f.ktape, f.ts, lin, w, f.opts)
	}
	for i, x := range f.ts {
		for k, g := range f.gmu[i] {
			x.Mean.Grad[k] += float32(w * g)
		}
		for k, g := range f.grho[i] {
			x.RawSD.Grad[k] += float32(w * g)
		}
	}
	return f.kl, nil
}

// explain adds to err, when a Cholesky factorisation of the output covariances at the context
// points failed (kernels.ErrNotPositiveDefinite), what makes them singular and what to change:
// fsvi_jitter is added to their diagonals, so inputs far from unit scale (context points of 1e6
// failed at the first step, with only "pivot 4 is 0: matrix is not positive definite") leave it
// negligible beside their other entries.
// updates is the number of updates this run has made: after some, they (a learning rate too
// large) may have made the covariances degenerate.
func (f *fsviRun) explain(err error, c *Config, updates int64) error {
	if !errors.Is(err, kernels.ErrNotPositiveDefinite) {
		return err
	}
	m := 0.0
	for _, x := range f.xc {
		m = max(m, math.Abs(float64(x)))
	}
	lr := ""
	if updates > 0 {
		lr = fmt.Sprintf(", or, after %d update(s), lower the learning rate lr %g", updates, c.LR)
	}
	return fmt.Errorf("%w (the output covariances at the %d context points are singular in floating point: context %s, inputs up to |x| = %.3g, fsvi_jitter %g; rescale the inputs to about unit scale or raise fsvi_jitter%s)",
		err, c.ContextSize, clip.Q(c.Context), m, c.FSVIJitter, lr)
}
