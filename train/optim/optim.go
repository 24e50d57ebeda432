// Package optim holds the trainer's first-order optimizers over autodiff parameters: Adam (and
// AdamW) and SGD with momentum with PyTorch's update rules, per-parameter-group learning rates
// and weight decay, a MultiStepLR schedule, global gradient-norm clipping
// (torch.nn.utils.clip_grad_norm_) and state export/import for checkpoints.
//
// A typical step: zero the gradients, run the model on an autodiff.Tape, call Backward, clip,
// then Step:
//
//	opt.ZeroGrad()
//	tape.Reset()
//	loss := model(tape)
//	tape.Backward(loss)
//	optim.ClipGradNorm(params, 5)
//	opt.Step()
package optim

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

// Group is a set of parameters sharing a learning rate and weight decay (a PyTorch parameter
// group).
type Group[T autodiff.Float] struct {
	// Params are the group's parameters; their names must be unique across all groups.
	Params []*autodiff.Param[T]
	// LR is the group's base learning rate; the effective rate is LR times the optimizer's
	// factor (see Optimizer.SetLRFactor).
	LR float64
	// WeightDecay is the L2 penalty coefficient (0 disables it).
	WeightDecay float64
}

// State is an optimizer's checkpointable state: the number of steps taken and named per-parameter
// buffers ("exp_avg/<param>", "exp_avg_sq/<param>" for Adam, "momentum_buffer/<param>" for SGD,
// as in PyTorch's state_dict).
type State[T autodiff.Float] struct {
	Step    int64
	Buffers map[string][]T
}

// Optimizer is implemented by Adam and SGD.
type Optimizer[T autodiff.Float] interface {
	// Step updates every parameter from its gradient.
	Step()
	// ZeroGrad zeroes every parameter's gradient.
	ZeroGrad()
	// SetLRFactor scales every group's base learning rate by f (for schedules).
	SetLRFactor(f float64)
	// Steps returns the number of steps taken (including restored ones).
	Steps() int64
	// State returns a copy of the optimizer state.
	State() State[T]
	// SharedState is State without the copies: its buffers are the optimizer's own, to be read
	// and not modified, and only until the next Step or LoadState.
	SharedState() State[T]
	// LoadState restores a state returned by State for the same parameters.
	LoadState(s State[T]) error
}

// base holds what Adam and SGD share.
type base[T autodiff.Float] struct {
	groups   []Group[T]
	factor   float64
	step     int64
	bufNames []string // buffer kinds, e.g. "exp_avg"
	bufs     []map[*autodiff.Param[T]][]T
}

func newBase[T autodiff.Float](groups []Group[T], kinds ...string) (base[T], error) {
	b := base[T]{groups: groups, factor: 1, bufNames: kinds}
	seen := map[string]bool{}
	for gi, g := range groups {
		if !(g.LR >= 0) || math.IsInf(g.LR, 0) {
			return b, fmt.Errorf("optim: group %d: invalid learning rate %v", gi, g.LR)
		}
		if !(g.WeightDecay >= 0) || math.IsInf(g.WeightDecay, 0) {
			return b, fmt.Errorf("optim: group %d: invalid weight decay %v", gi, g.WeightDecay)
		}
		for pi, p := range g.Params {
			if p == nil {
				return b, fmt.Errorf("optim: group %d: parameter %d is nil", gi, pi)
			}
			if seen[p.Name] {
				return b, fmt.Errorf("optim: group %d: duplicate parameter name %q", gi, p.Name)
			}
			if len(p.Grad) != len(p.Value) {
				return b, fmt.Errorf("optim: parameter %q has %d values and %d gradients", p.Name, len(p.Value), len(p.Grad))
			}
			seen[p.Name] = true
		}
	}
	for range kinds {
		m := map[*autodiff.Param[T]][]T{}
		for _, g := range groups {
			for _, p := range g.Params {
				m[p] = make([]T, len(p.Value))
			}
		}
		b.bufs = append(b.bufs, m)
	}
	return b, nil
}

// ZeroGrad zeroes every parameter's gradient.
func (b *base[T]) ZeroGrad() {
	for _, g := range b.groups {
		for _, p := range g.Params {
			p.ZeroGrad()
		}
	}
}

// SetLRFactor sets the factor multiplying every group's base learning rate.
func (b *base[T]) SetLRFactor(f float64) { b.factor = f }

// Steps returns the number of steps taken.
func (b *base[T]) Steps() int64 { return b.step }

// State returns a deep copy of the step count and buffers.
func (b *base[T]) State() State[T] {
	s := b.SharedState()
	for name, buf := range s.Buffers {
		s.Buffers[name] = append([]T(nil), buf...)
	}
	return s
}

// SharedState returns the step count and the buffers themselves, not copies (a checkpoint
// encoding them does not need them twice).
func (b *base[T]) SharedState() State[T] {
	s := State[T]{Step: b.step, Buffers: map[string][]T{}}
	for k, kind := range b.bufNames {
		for p, buf := range b.bufs[k] {
			s.Buffers[kind+"/"+p.Name] = buf
		}
	}
	return s
}

// MaxStep bounds the step count a restored State may hold: float64 holds every count up to it
// exactly (Adam's bias correction raises β to it), and counting on from it cannot overflow.
const MaxStep = 1 << 53

// LoadState restores the step count and every buffer; it fails without changing anything if the
// step count is outside [0, MaxStep], or a buffer is missing, unexpected, of the wrong length or
// holds a NaN or an infinity.
func (b *base[T]) LoadState(s State[T]) error {
	if s.Step < 0 || s.Step > MaxStep {
		return fmt.Errorf("optim: state has step %d, outside [0, 2^53]", s.Step)
	}
	want := 0
	for k, kind := range b.bufNames {
		for p := range b.bufs[k] {
			key := kind + "/" + p.Name
			v, ok := s.Buffers[key]
			if !ok {
				return fmt.Errorf("optim: state has no buffer %q", key)
			}
			if len(v) != len(p.Value) {
				return fmt.Errorf("optim: state buffer %q has %d values, parameter has %d", key, len(v), len(p.Value))
			}
			for i, x := range v {
				if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
					return fmt.Errorf("optim: state buffer %q: value %d is %v", key, i, x)
				}
			}
			want++
		}
	}
	if len(s.Buffers) != want {
		return fmt.Errorf("optim: state has %d buffers, optimizer expects %d", len(s.Buffers), want)
	}
	for k, kind := range b.bufNames {
		for p, buf := range b.bufs[k] {
			copy(buf, s.Buffers[kind+"/"+p.Name])
		}
	}
	b.step = s.Step
	return nil
}

// AdamConfig holds Adam's hyper-parameters; DefaultAdamConfig gives PyTorch's defaults.
type AdamConfig struct {
	Beta1, Beta2 float64
	Eps          float64
	// Decoupled selects AdamW: weight decay multiplies the parameter by (1 − lr·wd) instead of
	// adding wd·θ to the gradient.
	Decoupled bool
}

// DefaultAdamConfig returns β₁ = 0.9, β₂ = 0.999, ε = 1e-8 (torch.optim.Adam defaults).
func DefaultAdamConfig() AdamConfig { return AdamConfig{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8} }

// Adam is torch.optim.Adam (amsgrad=False) with bias correction:
// g ← ∇ + wd·θ; m ← β₁m + (1−β₁)g; v ← β₂v + (1−β₂)g²;
// θ ← θ − lr/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + ε). With Decoupled it is torch.optim.AdamW.
type Adam[T autodiff.Float] struct {
	base[T]
	cfg AdamConfig
}

// NewAdam returns an Adam optimizer over groups.
func NewAdam[T autodiff.Float](groups []Group[T], cfg AdamConfig) (*Adam[T], error) {
	if !(cfg.Beta1 >= 0 && cfg.Beta1 < 1) || !(cfg.Beta2 >= 0 && cfg.Beta2 < 1) || !(cfg.Eps >= 0) {
		return nil, fmt.Errorf("optim: invalid Adam config %+v", cfg)
	}
	b, err := newBase(groups, "exp_avg", "exp_avg_sq")
	if err != nil {
		return nil, err
	}
	return &Adam[T]{base: b, cfg: cfg}, nil
}

// LoadState restores a state as base's LoadState does, and also refuses a negative second moment
// (an "exp_avg_sq/" buffer): the update divides by its square root; and a first moment m that no
// stream of gradients makes beside its second moment v (momentRatio): m = 1e30 beside v = 0 made
// the first update m/(√v + ε) overflow the parameter, a +Inf loss blamed on the learning rate.
func (o *Adam[T]) LoadState(s State[T]) error {
	rho, bounded := o.momentRatio()
	for p := range o.bufs[1] {
		key := "exp_avg_sq/" + p.Name
		v := s.Buffers[key]
		for i, x := range v {
			if x < 0 {
				return fmt.Errorf("optim: state buffer %q: value %d is %v; a second moment must be ≥ 0", key, i, x)
			}
		}
		m := s.Buffers["exp_avg/"+p.Name]
		if !bounded || len(m) != len(v) {
			continue // base refuses a missing buffer or one of the wrong length
		}
		for i := range m {
			mi, vi := math.Abs(float64(m[i])), float64(v[i])
			if math.IsInf(mi, 0) || math.IsNaN(mi) || math.IsNaN(vi) {
				continue // base refuses non-finite values
			}
			if !AdamMomentsPossible(mi, vi, rho) {
				return fmt.Errorf("optim: state buffers %q and %q: value %d is %v beside %v; a first moment m of Adam (β₁ %g, β₂ %g) has m² ≤ %.4g·v",
					"exp_avg/"+p.Name, key, i, m[i], v[i], o.cfg.Beta1, o.cfg.Beta2, rho)
			}
		}
	}
	return o.base.LoadState(s)
}

// Slack of the moment bound (momentRatio): relative, for the rounding of m and v to T at every
// step, and absolute, for a second moment that underflowed to 0 beside a tiny first moment
// (gradients below 1e-21); a first moment of 1e-20 moves a parameter by lr·1e-20/ε at most.
const (
	momentSlack = 1.01
	momentFloor = 1e-20
)

// momentRatio returns ρ such that Adam's moments from any gradients g_1 … g_t satisfy m² ≤ ρ·v:
// m = (1−β₁) Σ β₁ᵏ g_{t−k} and v = (1−β₂) Σ β₂ᵏ g²_{t−k}, so by Cauchy–Schwarz
// m² ≤ (1−β₁)² Σ (β₁²/β₂)ᵏ · v/(1−β₂) ≤ (1−β₁)² / ((1−β₂)(1−β₁²/β₂)) · v (52.9 for PyTorch's
// β₁ 0.9, β₂ 0.999). There is no bound (false) when β₁² ≥ β₂.
func (o *Adam[T]) momentRatio() (float64, bool) { return AdamMomentRatio(o.cfg.Beta1, o.cfg.Beta2) }

// AdamMomentRatio returns ρ such that Adam's moments with β₁ and β₂ satisfy m² ≤ ρ·v for any
// gradients (Adam.LoadState), and false when there is no such bound (β₁² ≥ β₂).
func AdamMomentRatio(beta1, beta2 float64) (float64, bool) {
	if !(beta1*beta1 < beta2) {
		return 0, false
	}
	return (1 - beta1) * (1 - beta1) / ((1 - beta2) * (1 - beta1*beta1/beta2)), true
}

// AdamMomentsPossible reports whether a first moment m and second moment v of Adam with ratio ρ
// (AdamMomentRatio) can come from gradients: |m| ≤ √(ρ·v), with the slack of momentSlack and
// momentFloor. NaN and ±Inf are for the caller to refuse.
func AdamMomentsPossible(m, v, rho float64) bool {
	return !(math.Abs(m) > momentSlack*math.Sqrt(rho*v)+momentFloor)
}

// Step applies one Adam update to every parameter.
func (o *Adam[T]) Step() {
	o.step++
	t := float64(o.step)
	b1, b2, eps := o.cfg.Beta1, o.cfg.Beta2, o.cfg.Eps
	bc1 := 1 - math.Pow(b1, t)
	sqrtBC2 := math.Sqrt(1 - math.Pow(b2, t))
	for _, g := range o.groups {
		lr := g.LR * o.factor
		wd := g.WeightDecay
		stepSize := lr / bc1
		for _, p := range g.Params {
			m, v := o.bufs[0][p], o.bufs[1][p]
			for i, gr := range p.Grad {
				x := float64(p.Value[i])
				gi := float64(gr)
				if wd != 0 {
					if o.cfg.Decoupled {
						x *= 1 - lr*wd
					} else {
						gi += wd * x
					}
				}
				mi := b1*float64(m[i]) + (1-b1)*gi
				vi := b2*float64(v[i]) + (1-b2)*gi*gi
				m[i], v[i] = T(mi), T(vi)
				p.Value[i] = T(x - stepSize*mi/(math.Sqrt(vi)/sqrtBC2+eps))
			}
		}
	}
}

// SGDConfig holds SGD's hyper-parameters (all zero: plain SGD).
type SGDConfig struct {
	Momentum  float64
	Dampening float64
	Nesterov  bool
}

// SGD is torch.optim.SGD: g ← ∇ + wd·θ; with momentum μ, b ← g on the first step and
// b ← μb + (1−dampening)g afterwards, then g ← g + μb (Nesterov) or g ← b; θ ← θ − lr·g.
type SGD[T autodiff.Float] struct {
	base[T]
	cfg SGDConfig
}

// NewSGD returns an SGD optimizer over groups. Nesterov momentum needs a positive momentum and
// zero dampening, as in PyTorch.
func NewSGD[T autodiff.Float](groups []Group[T], cfg SGDConfig) (*SGD[T], error) {
	if !(cfg.Momentum >= 0) || !(cfg.Dampening >= 0) || (cfg.Nesterov && (cfg.Momentum <= 0 || cfg.Dampening != 0)) {
		return nil, fmt.Errorf("optim: invalid SGD config %+v", cfg)
	}
	var kinds []string
	if cfg.Momentum != 0 {
		kinds = []string{"momentum_buffer"}
	}
	b, err := newBase(groups, kinds...)
	if err != nil {
		return nil, err
	}
	return &SGD[T]{base: b, cfg: cfg}, nil
}

// MaxMomentum bounds the magnitude of a restored SGD momentum buffer (SGD.LoadState): as the
// parameters a checkpoint may hold (train.MaxInitFromValue), 1e15. A momentum buffer is a
// discounted sum of past gradients; one of 3e38 beside parameters of order 1 (a finite float32,
// so not refused as NaN or ±Inf are) moved a bias to −9.3e36 in the next updates, and training
// went on without an error, writing a checkpoint it then could not resume.
const MaxMomentum = 1e15

// LoadState restores a state as base's LoadState does (the step count, buffers present, of
// their parameters' lengths and finite), and also refuses a momentum buffer ("momentum_buffer/"
// + parameter name) with a value outside ±MaxMomentum.
func (o *SGD[T]) LoadState(s State[T]) error {
	for _, g := range o.groups {
		if len(o.bufs) == 0 {
			break // no momentum, no buffers
		}
		for _, p := range g.Params {
			key := "momentum_buffer/" + p.Name
			for i, x := range s.Buffers[key] {
				if a := math.Abs(float64(x)); a > MaxMomentum && !math.IsInf(a, 0) { // base refuses ±Inf
					return fmt.Errorf("optim: state buffer %q: value %d is %g, outside ±%.0e: a momentum buffer (a discounted sum of past gradients) this large makes the next update move parameter %q by lr × %.3g",
						key, i, x, MaxMomentum, p.Name, math.Abs(float64(x))*o.cfg.Momentum)
				}
			}
		}
	}
	return o.base.LoadState(s)
}

// Step applies one SGD update to every parameter.
func (o *SGD[T]) Step() {
	first := o.step == 0
	o.step++
	mu, damp := o.cfg.Momentum, o.cfg.Dampening
	for _, g := range o.groups {
		lr := g.LR * o.factor
		wd := g.WeightDecay
		for _, p := range g.Params {
			var buf []T
			if mu != 0 {
				buf = o.bufs[0][p]
			}
			for i, gr := range p.Grad {
				x := float64(p.Value[i])
				d := float64(gr) + wd*x
				if buf != nil {
					b := d
					if !first {
						b = mu*float64(buf[i]) + (1-damp)*d
					}
					buf[i] = T(b)
					if o.cfg.Nesterov {
						d += mu * b
					} else {
						d = b
					}
				}
				p.Value[i] = T(x - lr*d)
			}
		}
	}
}

// MultiStepLR is torch.optim.lr_scheduler.MultiStepLR: the learning rate is multiplied by Gamma
// at each milestone epoch.
type MultiStepLR struct {
	Milestones []int
	Gamma      float64
}

// Factor returns the learning-rate factor for (0-based) epoch: Gamma raised to the number of
// milestones ≤ epoch. Apply it at the start of each epoch with Optimizer.SetLRFactor.
func (s MultiStepLR) Factor(epoch int) float64 {
	f := 1.0
	for _, m := range s.Milestones {
		if m <= epoch {
			f *= s.Gamma
		}
	}
	return f
}

// CosineLR is optax's cosine_decay_schedule (PyTorch's CosineAnnealingLR over one half-period,
// with η_min = Alpha·lr): the learning-rate factor falls from 1 at step 0 to Alpha at step Total
// along half a cosine, and stays at Alpha after it.
type CosineLR struct {
	Total int
	Alpha float64
}

// Factor returns the learning-rate factor for (0-based) step: Alpha + (1 − Alpha)·½(1 +
// cos(π·min(step, Total)/Total)); 1 when Total ≤ 0.
func (s CosineLR) Factor(step int64) float64 {
	if s.Total <= 0 {
		return 1
	}
	t := math.Min(float64(max(step, 0)), float64(s.Total)) / float64(s.Total)
	return s.Alpha + (1-s.Alpha)*0.5*(1+math.Cos(math.Pi*t))
}

// ClipGradValue clamps every gradient of params to [−limit, limit], as
// torch.nn.utils.clip_grad_value_ and optax.clip. A non-finite gradient is an error (naming the
// parameter) and leaves the gradients unchanged.
func ClipGradValue[T autodiff.Float](params []*autodiff.Param[T], limit float64) error {
	if !(limit > 0) {
		return fmt.Errorf("optim: ClipGradValue: limit %v must be positive", limit)
	}
	for _, p := range params {
		for i, g := range p.Grad {
			if g-g != 0 { // NaN or ±Inf: one comparison where IsNaN and IsInf take three
				return fmt.Errorf("optim: ClipGradValue: parameter %q: gradient %d is %v", p.Name, i, g)
			}
		}
	}
	// Every gradient is finite and lo < 0 < hi: min(max(g, lo), hi) without min and max's
	// NaN and signed-zero cases, storing only the gradients it changes.
	lo, hi := T(-limit), T(limit)
	for _, p := range params {
		gs := p.Grad
		for i, g := range gs {
			if g < lo {
				gs[i] = lo
			} else if g > hi {
				gs[i] = hi
			}
		}
	}
	return nil
}

// ClipGradNorm rescales the gradients of params so that their global L2 norm (all gradients
// concatenated) is at most maxNorm, as torch.nn.utils.clip_grad_norm_: each gradient is
// multiplied by maxNorm/(norm + 1e-6) when that is below 1. It returns the norm before
// clipping. A non-finite norm is an error and leaves the gradients unchanged (PyTorch would
// scale them by NaN).
func ClipGradNorm[T autodiff.Float](params []*autodiff.Param[T], maxNorm float64) (float64, error) {
	if !(maxNorm > 0) {
		return 0, fmt.Errorf("optim: ClipGradNorm: max norm %v must be positive", maxNorm)
	}
	var ss float64
	for _, p := range params {
		for _, g := range p.Grad {
			ss += float64(g) * float64(g)
		}
	}
	norm := math.Sqrt(ss)
	if math.IsNaN(norm) || math.IsInf(norm, 0) {
		return norm, fmt.Errorf("optim: ClipGradNorm: gradient norm is %v", norm)
	}
	coef := maxNorm / (norm + 1e-6)
	if coef < 1 {
		for _, p := range params {
			for i := range p.Grad {
				p.Grad[i] = T(float64(p.Grad[i]) * coef)
			}
		}
	}
	return norm, nil
}

// Params returns the parameters of all groups, in order.
func Params[T autodiff.Float](groups []Group[T]) []*autodiff.Param[T] {
	var ps []*autodiff.Param[T]
	for _, g := range groups {
		ps = append(ps, g.Params...)
	}
	return ps
}
