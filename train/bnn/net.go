// Package bnn holds the trainer's Bayesian layers as autodiff graphs: deterministic layers,
// bayesianize's mean-field Gaussian ("ffg", FFG-W), full-covariance Gaussian ("fcg", FCG-W) and inducing-weight layers with every q(U)
// family (diagonal, full, matrix, ensemble; whitened or not), with the same parameter names,
// parameterisation and initial values as bayesianize (MATH.md §1), and their KL divergences.
//
// A Net is built from a runtime.Spec whose Linear and Conv2d layers carry their posterior, plus
// the training-only settings of each layer (Init). Besides Linear/Conv2d it trains activations,
// pooling (max, average, adaptive average), BatchNorm1d/2d (batch statistics and PyTorch's
// running-statistics update in training, running statistics in eval and in ForwardMean) and
// residual blocks (runtime.OpResidual: body(x) + shortcut(x), as convert/resnet builds
// torchvision's BasicBlock and Bottleneck). Its parameters are named exactly as in a
// bayesianize state_dict ("1.z_row", "3._inducing_sd"), so Net.Tensors and runtime.New give the
// deployed model, and Net.Load reads a bayesianize state_dict back.
//
// Nets are generic over the element type: float32 for training, float64 for gradient checks.
package bnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// Float is the element type of a Net (float32 or float64).
type Float = autodiff.Float

// Init holds the per-layer settings that only training needs (bayesianize keeps them in its
// inference config; they are not part of runtime.PosteriorSpec).
type Init struct {
	// InitLamda is λ's initial value for inducing layers (bayesianize default 1e-4).
	InitLamda float64
	// LearnLamda makes _lamda trainable (default true in bayesianize).
	LearnLamda bool
	// InitSDU, when positive, is the initial standard deviation of every entry of a Gaussian
	// q(U) (diagonal, full or matrix q_inducing) instead of bayesianize's hard-coded 1e-3: the
	// diagonal of the full Cholesky factor, or √InitSDU on the diagonals of the matrix form's row
	// and column factors. Paper 003 (appendix J.2) states initial variances of 1e-3, i.e.
	// InitSDU = √1e-3. It is an error for ensemble q(U), which has no variance.
	InitSDU float64
	// InitSD is the initial posterior standard deviation of FFG layers (default 1e-4).
	InitSD float64
	// PriorMean is the FFG prior mean (default 0).
	PriorMean float64
	// PriorBiasSD is the FFG bias prior sd after width scaling (the weight prior sd is
	// PosteriorSpec.PriorSD).
	PriorBiasSD float64
	// WholeWeights makes an FFG layer draw whole weights in training too — one W and b per
	// forward pass, shared by the batch — instead of sampling its outputs with the local
	// reparameterisation (bayesianize's local_reparameterization=False; the reference code of
	// paper 004 samples this way).
	WholeWeights bool
	// Momentum is a BatchNorm layer's running-statistics momentum; nil means PyTorch's default
	// 0.1.
	Momentum *float64
	// CumulativeStats makes a BatchNorm layer keep a cumulative moving average of the batch
	// statistics (PyTorch's momentum=None): momentum 1/num_batches_tracked.
	CumulativeStats bool
}

// DefaultInit returns bayesianize's defaults for a layer with the given posterior spec.
func DefaultInit(p *runtime.PosteriorSpec) Init {
	in := Init{InitLamda: 1e-4, LearnLamda: true, InitSD: 1e-4}
	if p != nil {
		in.PriorBiasSD = p.PriorSD
	}
	return in
}

// Param is a named tensor of a Net. Trainable ones are updated by the optimizer; the others are
// buffers (bayesianize's prior_* buffers, a non-learned _lamda) that are saved and loaded too.
type Param[T Float] struct {
	*autodiff.Param[T]
	Trainable bool
	// optional marks a buffer that a checkpoint may lack (runtime.TensorOptional or
	// TensorDropped): Load keeps its value then.
	optional bool
}

// Context carries the per-forward-pass state.
type Context[T Float] struct {
	// Train selects training behaviour: FFG layers use local reparameterisation (unless
	// Init.WholeWeights) and BatchNorm
	// layers normalise with the batch statistics and update their running statistics.
	Train bool
	// Mean replaces every noise draw by zero: the posterior mean weights (the conditional mean
	// for inducing layers, U at its mean, ensemble member 0), as runtime.Options.Mean.
	Mean bool
	// Member is the ensemble member used by every Ensemble-U layer in this pass.
	Member int
	net    *Net[T]
	// globalU is this pass's sample of the stacked whitened inducing weights U_{1:L}
	// (ΣM_out × M_in) when the net has a global inducing posterior.
	globalU *autodiff.Var[T]
	// taps, when not nil (ForwardMeanTapped), receives every ffg layer's input and output.
	taps *[]LayerTap[T]
}

// LayerTap is one mean-field Gaussian (ffg) layer's input and output Vars in a pass of
// ForwardMeanTapped: after a reverse pass Out.Grad() is the gradient with respect to the layer's
// pre-activation output, and In.Value() its input. Conv is set for Conv2d layers.
type LayerTap[T Float] struct {
	Layer   string
	In, Out *autodiff.Var[T]
	Conv    bool
}

// layer is one executable layer of a Net.
type layer[T Float] interface {
	forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T]
	params() []Param[T]
	// kl returns the layer's KL divergence as a scalar Var, or nil for layers without one.
	kl(tp *autodiff.Tape[T]) *autodiff.Var[T]
	name() string
}

// Net is a trainable network.
type Net[T Float] struct {
	spec    runtime.Spec
	layers  []layer[T]
	params  []Param[T]
	members int // ensemble size of Ensemble-U layers (0 if none)
	// global is the global inducing posterior of paper 003 appendix H (runtime.Spec.GlobalU):
	// an inducing "layer" with σ = 1 whose weight is U_{1:L}; nil without one.
	global *inducing[T]
	stream kernels.Stream
	arena  arena[T]
	passes int
	prefix string
}

// New builds a Net for spec (which must validate and whose posteriors must be deterministic,
// ffg, fcg, bernstein or inducing), initialising every parameter as bayesianize does with random numbers from
// rng. inits gives each parametric layer's training settings by layer name; absent layers get
// DefaultInit.
func New[T Float](spec *runtime.Spec, inits map[string]Init, rng *rand.Rand) (*Net[T], error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	if spec.FA != nil {
		return nil, errors.New("bnn: factor-analysis posteriors are not supported by this trainer")
	}
	if rng == nil {
		return nil, errors.New("bnn: nil random source")
	}
	n := &Net[T]{spec: *spec}
	shape := append([]int(nil), spec.InputShape...)
	for i := range spec.Layers {
		ls := &spec.Layers[i]
		l, out, err := n.build(ls, shape, inits, rng)
		if err != nil {
			return nil, err
		}
		if l != nil {
			n.layers = append(n.layers, l)
			n.params = append(n.params, l.params()...)
		}
		shape = out
	}
	if len(shape) != 1 {
		return nil, fmt.Errorf("bnn: the network's output has shape %v; add a flatten layer", shape)
	}
	if spec.GlobalU != nil {
		if err := n.buildGlobal(inits, rng); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	for _, p := range n.params {
		if seen[p.Name] {
			return nil, fmt.Errorf("bnn: two tensors named %q (layer names must be unique)", p.Name)
		}
		seen[p.Name] = true
	}
	return n, nil
}

func (n *Net[T]) build(ls *runtime.LayerSpec, in []int, inits map[string]Init, rng *rand.Rand) (layer[T], []int, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("bnn: layer %q (%s): %s", ls.Name, ls.Op, fmt.Sprintf(format, args...))
	}
	switch ls.Op {
	case runtime.OpLinear:
		if len(in) != 1 || in[0] != ls.In || ls.Out < 1 {
			return nil, nil, errf("in_features %d, out_features %d do not fit the input %v", ls.In, ls.Out, in)
		}
		l, err := n.parametric(ls, ls.Out, ls.In, []int{ls.Out, ls.In}, inits, rng)
		return l, []int{ls.Out}, err
	case runtime.OpConv2d:
		if len(in) != 3 || in[0] != ls.In || ls.Out < 1 {
			return nil, nil, errf("in_channels %d does not fit the input %v", ls.In, in)
		}
		g := convGeom(ls, in)
		if err := g.Validate(); err != nil {
			return nil, nil, errf("%v", err)
		}
		k := ls.In * ls.Kernel[0] * ls.Kernel[1]
		l, err := n.parametric(ls, ls.Out, k, []int{ls.Out, ls.In, ls.Kernel[0], ls.Kernel[1]}, inits, rng)
		if err != nil {
			return nil, nil, err
		}
		return l, []int{ls.Out, g.OutH(), g.OutW()}, nil
	case runtime.OpReLU, runtime.OpTanh, runtime.OpSigmoid, runtime.OpGELU:
		return &activation[T]{paramless: paramless[T]{ls.Name}, op: ls.Op}, in, nil
	case runtime.OpDropout:
		return newDropout[T](ls), in, nil
	case runtime.OpIdentity:
		return nil, in, nil
	case runtime.OpFlatten:
		s := 1
		for _, d := range in {
			s *= d
		}
		return &flatten[T]{paramless: paramless[T]{ls.Name}, size: s}, []int{s}, nil
	case runtime.OpBatchNorm:
		return n.batchNorm(ls, in, inits)
	case runtime.OpAdaptiveAvgPool2d:
		if len(in) != 3 {
			return nil, nil, errf("input has shape %v; pooling needs [channels, height, width]", in)
		}
		oh, ow := ls.OutputSize[0], ls.OutputSize[1]
		if oh < 1 || ow < 1 || oh > in[1] || ow > in[2] {
			return nil, nil, errf("output size %v does not fit the input %v", ls.OutputSize, in)
		}
		return &adaptivePool[T]{paramless: paramless[T]{ls.Name}, oh: oh, ow: ow}, []int{in[0], oh, ow}, nil
	case runtime.OpResidual:
		return n.residual(ls, in, inits, rng)
	case runtime.OpMaxPool2d, runtime.OpAvgPool2d:
		if len(in) != 3 {
			return nil, nil, errf("input has shape %v; pooling needs [channels, height, width]", in)
		}
		if ls.CeilMode || ls.Dilation[0] > 1 || ls.Dilation[1] > 1 {
			return nil, nil, errf("ceil_mode and dilation are not supported by the trainer")
		}
		p := &pool[T]{paramless: paramless[T]{ls.Name}, max: ls.Op == runtime.OpMaxPool2d,
			opt: autodiff.Pool2DOptions{KH: ls.Kernel[0], KW: ls.Kernel[1], StrideH: ls.Stride[0], StrideW: ls.Stride[1],
				PadH: ls.Padding[0], PadW: ls.Padding[1]}}
		if !p.max && ls.Padding != [2]int{} && !ls.CountIncludePad {
			return nil, nil, errf("avgpool2d with count_include_pad=false and padding is not supported by the trainer")
		}
		sh, sw := ls.Stride[0], ls.Stride[1]
		if sh == 0 {
			sh = ls.Kernel[0]
		}
		if sw == 0 {
			sw = ls.Kernel[1]
		}
		oh := (in[1]+2*ls.Padding[0]-ls.Kernel[0])/sh + 1
		ow := (in[2]+2*ls.Padding[1]-ls.Kernel[1])/sw + 1
		if ls.Kernel[0] < 1 || ls.Kernel[1] < 1 || oh < 1 || ow < 1 {
			return nil, nil, errf("kernel %v does not fit the input %v", ls.Kernel, in)
		}
		return p, []int{in[0], oh, ow}, nil
	}
	return nil, nil, errf("not supported by the trainer")
}

func convGeom(ls *runtime.LayerSpec, in []int) kernels.ConvGeom {
	stride, dil := ls.Stride, ls.Dilation
	if stride == [2]int{} {
		stride = [2]int{1, 1}
	}
	if dil == [2]int{} {
		dil = [2]int{1, 1}
	}
	return kernels.ConvGeom{InC: in[0], InH: in[1], InW: in[2], KH: ls.Kernel[0], KW: ls.Kernel[1],
		StrideH: stride[0], StrideW: stride[1], PadH: ls.Padding[0], PadW: ls.Padding[1], DilH: dil[0], DilW: dil[1]}
}

// parametric builds a Linear or Conv2d layer with its posterior; dOut×k is the weight without
// the bias column.
func (n *Net[T]) parametric(ls *runtime.LayerSpec, dOut, k int, wshape []int, inits map[string]Init, rng *rand.Rand) (layer[T], error) {
	base := affine{name: ls.Name, dOut: dOut, k: k, dIn: k, bias: ls.Bias, wshape: wshape, conv: ls.Op == runtime.OpConv2d,
		tensors: runtime.LayerTensors(ls)}
	if ls.Bias {
		base.dIn++
	}
	if base.conv {
		base.opt = autodiff.Conv2DOptions{StrideH: ls.Stride[0], StrideW: ls.Stride[1], PadH: ls.Padding[0], PadW: ls.Padding[1],
			DilH: ls.Dilation[0], DilW: ls.Dilation[1]}
	}
	in, ok := inits[ls.Name]
	if !ok {
		in = DefaultInit(ls.Posterior)
	}
	p := ls.Posterior
	if p == nil || p.Kind == runtime.KindDeterministic {
		return newDeterministic[T](base, rng)
	}
	switch p.Kind {
	case runtime.KindFFG:
		return newFFG[T](base, p, in, rng)
	case runtime.KindBernstein:
		return newBernstein[T](base, p, in, rng)
	case runtime.KindFCG:
		return newFCG[T](base, p, in, rng)
	case runtime.KindInducing:
		l, err := newInducing[T](base, p, in, rng)
		if err != nil {
			return nil, err
		}
		if p.QInducing == runtime.QEnsemble {
			if n.members != 0 && n.members != p.EnsembleSize {
				return nil, fmt.Errorf("bnn: layer %q: ensemble_size %d differs from another layer's %d", ls.Name, p.EnsembleSize, n.members)
			}
			n.members = p.EnsembleSize
		}
		return l, nil
	}
	return nil, fmt.Errorf("bnn: layer %q: posterior kind %q is not supported by the trainer", ls.Name, p.Kind)
}

// buildGlobal makes the global inducing posterior (after the layers, so that the layers'
// initial values do not depend on it) and tells each global-U layer where its block starts.
func (n *Net[T]) buildGlobal(inits map[string]Init, rng *rand.Rand) error {
	layers, offsets, rows := n.spec.GlobalULayers()
	mi := layers[0].Posterior.InducingCols
	in, ok := inits[runtime.GlobalUName]
	if !ok {
		in = DefaultInit(n.spec.GlobalU)
	}
	g, err := newInducing[T](affine{name: runtime.GlobalUName, dOut: rows, k: mi, dIn: mi, wshape: []int{rows, mi},
		tensors: runtime.GlobalUTensors(&n.spec)}, n.spec.GlobalU, in, rng)
	if err != nil {
		return err
	}
	n.global = g.(*inducing[T])
	if n.spec.GlobalU.QInducing == runtime.QEnsemble {
		if n.members != 0 && n.members != n.spec.GlobalU.EnsembleSize {
			return fmt.Errorf("bnn: global_u: ensemble_size %d differs from a layer's %d", n.spec.GlobalU.EnsembleSize, n.members)
		}
		n.members = n.spec.GlobalU.EnsembleSize
	}
	row := map[string]int{}
	for i, l := range layers {
		row[l.Name] = offsets[i]
	}
	for _, l := range leaves(n.layers) {
		if il, ok := l.(*inducing[T]); ok && il.q == runtime.QGlobal {
			il.guRow = row[il.name()]
		}
	}
	n.params = append(n.params, n.global.params()...)
	return nil
}

// sampleGlobal draws this pass's U_{1:L} into c (the mean in Mean mode) when the net has a
// global inducing posterior.
func (n *Net[T]) sampleGlobal(tp *autodiff.Tape[T], c *Context[T]) {
	if n.global != nil {
		c.globalU = n.global.weight(tp, c)
	}
}

// SetPrefix prepends prefix to the names of the net's parameters (so that the members of an
// ensemble of nets have distinct names in an optimizer and a checkpoint). Tensors and Load
// keep using the state_dict names without it.
func (n *Net[T]) SetPrefix(prefix string) {
	for _, p := range n.params {
		p.Name = prefix + p.Name[len(n.prefix):]
	}
	n.prefix = prefix
}

// Spec returns a copy of the network's description (for runtime.New).
func (n *Net[T]) Spec() runtime.Spec { return n.spec }

// Params returns every tensor of the network (trainable parameters and buffers), in layer order.
func (n *Net[T]) Params() []Param[T] { return n.params }

// Trainable returns the parameters the optimizer updates.
func (n *Net[T]) Trainable() []*autodiff.Param[T] {
	var out []*autodiff.Param[T]
	for _, p := range n.params {
		if p.Trainable {
			out = append(out, p.Param)
		}
	}
	return out
}

// NumParams returns the number of trainable scalars.
func (n *Net[T]) NumParams() int {
	s := 0
	for _, p := range n.Trainable() {
		s += len(p.Value)
	}
	return s
}

// EnsembleSize returns the number of members of the Ensemble-U layers (0 if there are none).
func (n *Net[T]) EnsembleSize() int { return n.members }

// Seed sets the random stream used for the noise of the next forward passes. The trainer calls it
// once per step with (seed, step), so that a resumed run draws the same noise.
func (n *Net[T]) Seed(seed uint64, step int64) {
	n.stream = kernels.NewStream(seed, uint32(step), uint32(uint64(step)>>32)|0x80000000)
}

// Begin starts a training step: the noise buffers of the previous step are recycled. Call it
// after resetting the tape (the tape's constants alias these buffers).
func (n *Net[T]) Begin() {
	n.arena.reset()
	for _, l := range leaves(n.layers) {
		if b, ok := l.(interface{ begin() }); ok {
			b.begin()
		}
	}
}

// ForwardMean runs the network in evaluation mode (BatchNorm with its running statistics) at the
// posterior mean weights, without noise: the function runtime.Options{Mean: true} predicts with.
// It records gradients like Forward and does not change the ensemble member cycle.
func (n *Net[T]) ForwardMean(tp *autodiff.Tape[T], x *autodiff.Var[T]) *autodiff.Var[T] {
	return n.ForwardMeanTapped(tp, x, nil)
}

// ForwardMeanTapped is ForwardMean that also appends to *taps, when taps is not nil, the input
// and output of every ffg layer in the order the pass runs them (FFGTensors' order for a network
// without residual blocks): what a Jacobian with respect to the layers' weights needs in factored
// form (∂f/∂W = (∂f/∂out) ⊗ in for a Linear layer).
func (n *Net[T]) ForwardMeanTapped(tp *autodiff.Tape[T], x *autodiff.Var[T], taps *[]LayerTap[T]) *autodiff.Var[T] {
	c := &Context[T]{Mean: true, net: n, taps: taps}
	n.sampleGlobal(tp, c)
	return forwardLayers(tp, n.layers, x, c)
}

// forwardLayers runs the layers ls on x in order, a ReLU followed by a max-pool as one op
// (autodiff's ReLUMaxPool2D: the same values and gradients; the ReLU's output feeds only the
// pool).
func forwardLayers[T Float](tp *autodiff.Tape[T], ls []layer[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	for i := 0; i < len(ls); i++ {
		if a, ok := ls[i].(*activation[T]); ok && a.op == runtime.OpReLU && i+1 < len(ls) {
			if p, ok := ls[i+1].(*pool[T]); ok && p.max {
				x = tp.ReLUMaxPool2D(x, p.opt)
				i++
				continue
			}
		}
		x = ls[i].forward(tp, x, c)
	}
	return x
}

// Forward runs the network on the batch x (shape (N, input shape...)) and returns the outputs
// (N, outputs). In training mode BatchNorm layers use the batch statistics and update their
// running statistics (PyTorch's train()); otherwise they use the running statistics (eval()).
// Every call samples fresh weights (one sample shared by the batch for inducing
// layers, as bayesianize; per-input noise for FFG layers in training mode unless their
// Init.WholeWeights is set). Ensemble-U layers use
// member (number of earlier Forward calls) mod K, as bayesianize cycles its members.
func (n *Net[T]) Forward(tp *autodiff.Tape[T], x *autodiff.Var[T], train bool) *autodiff.Var[T] {
	c := &Context[T]{Train: train, net: n}
	if n.members > 0 {
		c.Member = n.passes % n.members
	}
	n.passes++
	n.sampleGlobal(tp, c)
	return forwardLayers(tp, n.layers, x, c)
}

// KL returns Σ_l KL_l as a scalar Var (zero for a deterministic network).
func (n *Net[T]) KL(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	var sum *autodiff.Var[T]
	ls := n.layers
	if n.global != nil {
		ls = append([]layer[T]{n.global}, ls...)
	}
	for _, l := range ls {
		if k := l.kl(tp); k != nil {
			if sum == nil {
				sum = k
			} else {
				sum = tp.Add(sum, k)
			}
		}
	}
	if sum == nil {
		return tp.Scalar(0)
	}
	return sum
}

// LayerKL is one layer's KL divergence.
type LayerKL struct {
	Name string
	KL   float64
}

// LayerKLs evaluates every stochastic layer's KL divergence (no gradients are recorded).
func (n *Net[T]) LayerKLs() ([]LayerKL, error) {
	tp := autodiff.NewTape[T]()
	var out []LayerKL
	var err error
	tp.NoGrad(func() {
		ls := leaves(n.layers)
		if n.global != nil {
			ls = append(ls, n.global)
		}
		for _, l := range ls {
			if k := l.kl(tp); k != nil {
				out = append(out, LayerKL{Name: l.name(), KL: float64(k.Item())})
			}
		}
		err = tp.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("bnn: KL: %w", err)
	}
	return out, nil
}

// Tensors returns float32 copies of every tensor under its state_dict name, for runtime.New.
func (n *Net[T]) Tensors() runtime.Tensors {
	out := runtime.Tensors{}
	for _, p := range n.params {
		d := make([]float32, len(p.Value))
		for i, v := range p.Value {
			d[i] = float32(v)
		}
		out[p.Name[len(n.prefix):]] = runtime.Tensor{Shape: append([]int{}, p.Shape...), Data: d}
	}
	return out
}

// Model builds the deployed runtime.Model from the current parameters.
func (n *Net[T]) Model() (*runtime.Model, error) {
	spec := n.spec
	return runtime.New(&spec, n.Tensors())
}

// Load sets every tensor from src (a bayesianize state_dict, a checkpoint). Buffers that src
// lacks (optional prior buffers) keep their values; any other missing tensor, a shape mismatch or
// a non-finite value is an error.
func (n *Net[T]) Load(src runtime.TensorSource) error {
	for _, p := range n.params {
		name := p.Name[len(n.prefix):]
		data, shape, err := src.Tensor(name)
		if err != nil {
			if p.optional && errors.Is(err, runtime.ErrNoTensor) {
				continue
			}
			return fmt.Errorf("bnn: load %q: %w", p.Name, err)
		}
		if !runtime.SameShape(shape, p.Shape) || len(data) != len(p.Value) {
			return fmt.Errorf("bnn: load %q: shape %v (%d values), want %v", p.Name, shape, len(data), p.Shape)
		}
		for i, v := range data {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("bnn: load %q: value %d is %v", p.Name, i, v)
			}
			p.Value[i] = T(v)
		}
	}
	return nil
}

// normal returns a buffer of count standard normal draws (zeros in Mean mode) that stays valid
// until Begin.
func (c *Context[T]) normal(count int) []T {
	if c.Mean {
		b := c.net.arena.get(count)
		clear(b)
		return b
	}
	return c.net.normal(count)
}

// normal returns a buffer of count standard normal draws that stays valid until Begin.
func (n *Net[T]) normal(count int) []T {
	b := n.arena.get(count)
	switch v := any(b).(type) {
	case []float32:
		n.stream.Normal(v)
	case []float64:
		n.stream.Normal64(v)
	}
	return b
}

// arena hands out reusable buffers; reset makes them available again.
type arena[T Float] struct {
	bufs [][]T
	next int
}

func (a *arena[T]) reset() { a.next = 0 }

func (a *arena[T]) get(n int) []T {
	for a.next < len(a.bufs) {
		b := a.bufs[a.next]
		a.next++
		if len(b) == n {
			return b
		}
		// Shapes changed (a smaller last batch): drop the mismatched buffer.
		a.next--
		a.bufs = append(a.bufs[:a.next], a.bufs[a.next+1:]...)
	}
	b := make([]T, n)
	a.bufs = append(a.bufs, b)
	a.next++
	return b
}

// newParam makes a named parameter (layer.tensor).
func newParam[T Float](layer, tensor string, trainable bool, data []float64, shape ...int) Param[T] {
	v := make([]T, len(data))
	for i, x := range data {
		v[i] = T(x)
	}
	name := tensor
	if layer != "" {
		name = layer + "." + tensor
	}
	return Param[T]{Param: &autodiff.Param[T]{Name: name, Shape: append([]int{}, shape...), Value: v, Grad: make([]T, len(v))},
		Trainable: trainable}
}

func randn(rng *rand.Rand, n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = rng.NormFloat64() * scale
	}
	return out
}

func full(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}
