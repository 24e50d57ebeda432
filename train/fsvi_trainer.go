package train

import (
	"fmt"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/runtime"
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
}

// fsviMemoryFraction: the Jacobian (D×P float64) may use at most this fraction of the memory.
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
	p := int64(0)
	for _, x := range ts {
		p += int64(len(x.Mean.Value))
	}
	if limit := runtime.DefaultMaxMemory() / fsviMemoryFraction; d*p*8*2 > limit {
		return nil, fmt.Errorf("config: context_size %d: the Jacobian of %d outputs × %d parameters needs %.1f GiB (limit %.1f GiB); lower context_size",
			c.ContextSize, d, p, float64(d*p*16)/(1<<30), float64(limit)/(1<<30))
	}
	return &fsviRun{ts: ts, sampler: s, ktape: autodiff.NewTape[float64](),
		opts: fsvi.Options{Jitter: c.FSVIJitter, PerOutput: c.FSVICovariance == "per_output",
			Workspace: &fsvi.Workspace{}}}, nil
}

// linearize draws the step's context points (from a generator keyed by the seed and the step, so
// a resumed run draws the same ones) and computes the Jacobian at the current means.
func (f *fsviRun) linearize(t *Trainer) (*fsvi.Linearization, error) {
	c := &t.Config
	rng := rand.New(rand.NewPCG(c.Seed^0xf5c1, uint64(t.Step)))
	f.xc = f.sampler.Sample(rng, c.ContextSize, f.xc)
	lin, err := fsvi.Jacobian(t.tape, t.Nets[0], f.ts, f.xc, c.ContextSize, f.sampler.Shape())
	if err != nil {
		return nil, fmt.Errorf("fsvi: %w", err)
	}
	return lin, nil
}

// addKLGrad adds w·∂KL/∂(μ, ρ) to the gradients and returns the KL.
func (f *fsviRun) addKLGrad(lin *fsvi.Linearization, w float64) (float64, error) {
	return fsvi.AddKLGrad(f.ktape, f.ts, lin, w, f.opts)
}
