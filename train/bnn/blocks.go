package bnn

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// batchNorm is BatchNorm1d/BatchNorm2d with PyTorch's tensors: <name>.weight and .bias (when
// affine; trainable, initialised to 1 and 0) and the buffers .running_mean (0), .running_var (1)
// and .num_batches_tracked (0). In training mode it normalises with the batch statistics and
// updates the running statistics in place (running = (1−m)·running + m·batch, the running
// variance from the unbiased batch variance); otherwise it uses the running statistics.
type batchNorm[T Float] struct {
	n          string
	affine     bool
	cumulative bool
	w, b       Param[T]
	rm, rv     Param[T]
	nbt        Param[T]
	st         autodiff.BatchNormState[T]
}

func (n *Net[T]) batchNorm(ls *runtime.LayerSpec, in []int, inits map[string]Init) (layer[T], []int, error) {
	errf := func(format string, args ...any) error {
		return fmt.Errorf("bnn: layer %q (%s): "+format, append([]any{ls.Name, ls.Op}, args...)...)
	}
	if len(in) != 1 && len(in) != 3 {
		return nil, nil, errf("input has shape %v; batch norm needs [features] or [channels, height, width]", in)
	}
	c := in[0]
	if ls.In != 0 && ls.In != c {
		return nil, nil, errf("num_features %d does not match the input %v", ls.In, in)
	}
	eps := ls.Eps
	if eps == 0 {
		eps = 1e-5
	}
	if !(eps > 0) {
		return nil, nil, errf("eps %g must be positive", eps)
	}
	mom := 0.1
	set := inits[ls.Name]
	if set.Momentum != nil {
		mom = *set.Momentum
	}
	if !(mom >= 0 && mom <= 1) {
		return nil, nil, errf("momentum %g is not in [0, 1]", mom)
	}
	l := &batchNorm[T]{n: ls.Name, affine: ls.Affine, cumulative: set.CumulativeStats}
	lc := *ls
	lc.In = c // num_features may be left out (0)
	d := declare[T](ls.Name, runtime.LayerTensors(&lc))
	if l.affine {
		l.w = d.param("weight", full(c, 1))
		l.b = d.param("bias", full(c, 0))
	}
	l.rm = d.param("running_mean", full(c, 0))
	l.rv = d.param("running_var", full(c, 1))
	l.nbt = d.param("num_batches_tracked", []float64{0})
	if err := d.done(); err != nil {
		return nil, nil, err
	}
	// The state aliases the buffers, so the autodiff op updates the tensors that are saved.
	l.st = autodiff.BatchNormState[T]{RunningMean: l.rm.Value, RunningVar: l.rv.Value, Momentum: mom, Eps: eps}
	return l, in, nil
}

func (l *batchNorm[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	var gamma, beta *autodiff.Var[T]
	if l.affine {
		gamma, beta = tp.Param(l.w.Param), tp.Param(l.b.Param)
	}
	train := c.Train && !c.Mean
	l.st.NumBatchesTracked = int64(l.nbt.Value[0])
	if train && l.cumulative {
		l.st.Momentum = 1 / float64(l.st.NumBatchesTracked+1)
	}
	y := tp.BatchNorm(x, gamma, beta, &l.st, train)
	l.nbt.Value[0] = T(l.st.NumBatchesTracked)
	return y
}

func (l *batchNorm[T]) params() []Param[T] {
	if l.affine {
		return []Param[T]{l.w, l.b, l.rm, l.rv, l.nbt}
	}
	return []Param[T]{l.rm, l.rv, l.nbt}
}
func (l *batchNorm[T]) kl(*autodiff.Tape[T]) *autodiff.Var[T] { return nil }
func (l *batchNorm[T]) name() string                          { return l.n }

// adaptivePool is AdaptiveAvgPool2d.
type adaptivePool[T Float] struct {
	paramless[T]
	oh, ow int
}

func (p *adaptivePool[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], _ *Context[T]) *autodiff.Var[T] {
	return tp.AdaptiveAvgPool2D(x, p.oh, p.ow)
}

// residual computes body(x) + shortcut(x) (an empty shortcut is the identity), as the runtime's
// OpResidual: torchvision's BasicBlock and Bottleneck before their final ReLU, with the
// downsampling conv+BN as the shortcut.
type residual[T Float] struct {
	n              string
	body, shortcut []layer[T]
}

func (n *Net[T]) residual(ls *runtime.LayerSpec, in []int, inits map[string]Init, rng *rand.Rand) (layer[T], []int, error) {
	if len(ls.Body) == 0 {
		return nil, nil, fmt.Errorf("bnn: layer %q (residual): the body is empty", ls.Name)
	}
	r := &residual[T]{n: ls.Name}
	chain := func(specs []runtime.LayerSpec) ([]layer[T], []int, error) {
		var out []layer[T]
		shape := in
		for i := range specs {
			l, next, err := n.build(&specs[i], shape, inits, rng)
			if err != nil {
				return nil, nil, err
			}
			if l != nil {
				out = append(out, l)
			}
			shape = next
		}
		return out, shape, nil
	}
	var bodyOut, scOut []int
	var err error
	if r.body, bodyOut, err = chain(ls.Body); err != nil {
		return nil, nil, err
	}
	if r.shortcut, scOut, err = chain(ls.Shortcut); err != nil {
		return nil, nil, err
	}
	if !slices.Equal(bodyOut, scOut) {
		return nil, nil, fmt.Errorf("bnn: layer %q (residual): body output %v and shortcut output %v differ", ls.Name, bodyOut, scOut)
	}
	return r, bodyOut, nil
}

func (r *residual[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	y, s := x, x
	for _, l := range r.body {
		y = l.forward(tp, y, c)
	}
	for _, l := range r.shortcut {
		s = l.forward(tp, s, c)
	}
	return tp.Add(y, s)
}

func (r *residual[T]) params() []Param[T] {
	var ps []Param[T]
	for _, l := range r.body {
		ps = append(ps, l.params()...)
	}
	for _, l := range r.shortcut {
		ps = append(ps, l.params()...)
	}
	return ps
}

func (r *residual[T]) kl(tp *autodiff.Tape[T]) *autodiff.Var[T] {
	var sum *autodiff.Var[T]
	for _, l := range append(append([]layer[T](nil), r.body...), r.shortcut...) {
		if k := l.kl(tp); k != nil {
			if sum == nil {
				sum = k
			} else {
				sum = tp.Add(sum, k)
			}
		}
	}
	return sum
}

func (r *residual[T]) name() string { return r.n }

// sublayers lists the layers inside a residual block, body first.
func (r *residual[T]) sublayers() []layer[T] {
	return append(append([]layer[T](nil), r.body...), r.shortcut...)
}

// leaves flattens residual blocks into their layers, in execution order (body before shortcut).
func leaves[T Float](ls []layer[T]) []layer[T] {
	var out []layer[T]
	for _, l := range ls {
		if r, ok := l.(*residual[T]); ok {
			out = append(out, leaves(r.sublayers())...)
			continue
		}
		out = append(out, l)
	}
	return out
}
