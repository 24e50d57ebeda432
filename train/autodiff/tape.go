package autodiff

import (
	"errors"
	"fmt"

	"github.com/edgebnn/edgebnn/kernels"
)

// Float is the element-type constraint of the tape (kernels.Float): float32 for training,
// float64 for gradient checks.
type Float = kernels.Float

// Param is a trainable tensor that persists across training steps. Its Value is updated by an
// optimizer; its Grad accumulates gradients from every Backward call until it is zeroed (as a
// PyTorch leaf tensor's .grad does).
type Param[T Float] struct {
	// Name identifies the parameter in checkpoints and optimizer state.
	Name string
	// Shape is the row-major shape of Value.
	Shape []int
	// Value holds the parameter's current values (len = product of Shape).
	Value []T
	// Grad holds the accumulated gradient, same length as Value.
	Grad []T
}

// NewParam returns a parameter named name holding a copy of data with the given shape. A shape
// whose element count differs from len(data) is an error.
func NewParam[T Float](name string, data []T, shape ...int) (*Param[T], error) {
	n, err := numel(shape)
	if err != nil {
		return nil, fmt.Errorf("autodiff: param %q: %w", name, err)
	}
	if n != len(data) {
		return nil, fmt.Errorf("autodiff: param %q: shape %v needs %d values, got %d", name, shape, n, len(data))
	}
	return &Param[T]{
		Name:  name,
		Shape: append([]int(nil), shape...),
		Value: append([]T(nil), data...),
		Grad:  make([]T, n),
	}, nil
}

// ZeroGrad sets every element of p.Grad to zero.
func (p *Param[T]) ZeroGrad() { clear(p.Grad) }

// Var is a tensor recorded on a Tape: a row-major value, its shape and (after Backward) its
// gradient. A Var is only valid until the tape's next Reset.
type Var[T Float] struct {
	tape         *Tape[T]
	shape        []int
	value        []T
	grad         []T
	requiresGrad bool
	ownValue     bool
	ownGrad      bool
	back         func()
	ints         []int // pooled scratch saved for backward (indices), returned on Reset
	aux          []T   // pooled scratch saved for backward (masks, statistics), returned on Reset
}

// Shape returns the Var's shape. The slice belongs to the Var and must not be modified.
func (v *Var[T]) Shape() []int { return v.shape }

// Value returns the Var's row-major values. The slice belongs to the tape; it may be read, and
// modified only by code that knows no recorded op still needs it.
func (v *Var[T]) Value() []T { return v.value }

// Grad returns the gradient of the last Backward's output with respect to v, or nil when v does
// not require a gradient or received none.
func (v *Var[T]) Grad() []T { return v.grad }

// RequiresGrad reports whether gradients flow to v.
func (v *Var[T]) RequiresGrad() bool { return v.requiresGrad }

// Len returns the number of elements of v.
func (v *Var[T]) Len() int { return len(v.value) }

// Item returns the single value of a one-element Var (0 for any other Var).
func (v *Var[T]) Item() T {
	if len(v.value) != 1 {
		return 0
	}
	return v.value[0]
}

// Tape records operations on Vars and runs reverse-mode differentiation over them. A Tape is
// reused across training steps: Reset returns every intermediate buffer to an internal pool
// keyed by length, so a step of a fixed-shape model does not allocate tensor memory after the
// first one.
//
// Invalid input to an op (mismatched shapes, out-of-range indices, a non-positive-definite
// matrix, ...) never panics: the first such error is kept (see Err), the op returns a scalar zero
// placeholder, and every later op and Backward become no-ops until Reset.
//
// A Tape is not safe for concurrent use.
type Tape[T Float] struct {
	nodes   []*Var[T]
	slab    []*Var[T]
	used    int
	pool    map[int][][]T
	ipool   map[int][][]int
	noGrad  int
	err     error
	workers int // SetWorkers
}

// NewTape returns an empty tape.
func NewTape[T Float]() *Tape[T] {
	return &Tape[T]{pool: map[int][][]T{}, ipool: map[int][][]int{}}
}

// Err returns the first error recorded since the last Reset, or nil.
func (t *Tape[T]) Err() error { return t.err }

// Len returns the number of Vars recorded since the last Reset.
func (t *Tape[T]) Len() int { return len(t.nodes) }

// Reset forgets every recorded Var (they become invalid), returns their buffers to the pool and
// clears the recorded error. Parameter values and gradients are not touched.
func (t *Tape[T]) Reset() {
	for _, v := range t.nodes {
		if v.ownValue && v.value != nil {
			t.put(v.value)
		}
		if v.ownGrad && v.grad != nil {
			t.put(v.grad)
		}
		if v.ints != nil {
			t.putInts(v.ints)
		}
		if v.aux != nil {
			t.put(v.aux)
		}
		v.value, v.grad, v.back, v.ints, v.aux = nil, nil, nil, nil, nil
		v.shape = v.shape[:0]
		v.requiresGrad, v.ownValue, v.ownGrad = false, false, false
	}
	t.nodes = t.nodes[:0]
	t.used = 0
	t.err = nil
}

// NoGrad runs fn with gradient recording disabled: Vars created inside fn do not require
// gradients (as code under torch.no_grad()).
func (t *Tape[T]) NoGrad(fn func()) {
	t.noGrad++
	defer func() { t.noGrad-- }()
	fn()
}

// get returns a pooled buffer of length n, zeroed when zero is true.
func (t *Tape[T]) get(n int, zero bool) []T {
	if l := t.pool[n]; len(l) > 0 {
		b := l[len(l)-1]
		t.pool[n] = l[:len(l)-1]
		if zero {
			clear(b)
		}
		return b
	}
	return make([]T, n)
}

func (t *Tape[T]) put(b []T) {
	t.pool[len(b)] = append(t.pool[len(b)], b)
}

// getInts returns a pooled int buffer of length n; the caller stores it in a Var's ints field
// so that Reset gives it back.
func (t *Tape[T]) getInts(n int) []int {
	if l := t.ipool[n]; len(l) > 0 {
		b := l[len(l)-1]
		t.ipool[n] = l[:len(l)-1]
		return b
	}
	return make([]int, n)
}

func (t *Tape[T]) putInts(b []int) { t.ipool[len(b)] = append(t.ipool[len(b)], b) }

// newVar records a Var of the given shape whose value buffer comes from the pool.
func (t *Tape[T]) newVar(shape []int, zero bool) *Var[T] {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := t.alloc()
	v.shape = append(v.shape, shape...)
	v.value = t.get(n, zero)
	v.ownValue = true
	return v
}

func (t *Tape[T]) alloc() *Var[T] {
	var v *Var[T]
	if t.used < len(t.slab) {
		v = t.slab[t.used]
	} else {
		v = &Var[T]{tape: t}
		t.slab = append(t.slab, v)
	}
	t.used++
	t.nodes = append(t.nodes, v)
	return v
}

// fail records err (if it is the first) and returns a placeholder.
func (t *Tape[T]) fail(err error) *Var[T] {
	if t.err == nil {
		t.err = err
	}
	return t.placeholder()
}

func (t *Tape[T]) failf(format string, args ...any) *Var[T] {
	return t.fail(fmt.Errorf("autodiff: "+format, args...))
}

func (t *Tape[T]) placeholder() *Var[T] {
	v := t.alloc()
	v.value = t.get(1, true)
	v.ownValue = true
	return v
}

// check returns false (recording an error when needed) if the tape is already failed or any
// input is nil or belongs to another tape.
func (t *Tape[T]) check(op string, vs ...*Var[T]) bool {
	if t.err != nil {
		return false
	}
	for i, v := range vs {
		if v == nil {
			t.fail(fmt.Errorf("autodiff: %s: input %d is nil", op, i))
			return false
		}
		if v.tape != t {
			t.fail(fmt.Errorf("autodiff: %s: input %d belongs to another tape", op, i))
			return false
		}
	}
	return true
}

// record marks out as depending on ins: it requires a gradient when any input does (and
// recording is enabled), and back is then run during Backward.
func (t *Tape[T]) record(out *Var[T], back func(), ins ...*Var[T]) {
	if t.noGrad > 0 {
		return
	}
	for _, in := range ins {
		if in != nil && in.requiresGrad {
			out.requiresGrad = true
			out.back = back
			return
		}
	}
}

// gradBuf returns v's gradient buffer, allocating a zeroed one on first use. It returns nil for
// Vars that do not require gradients.
func (v *Var[T]) gradBuf() []T {
	if !v.requiresGrad {
		return nil
	}
	if v.grad == nil {
		v.grad = v.tape.get(len(v.value), true)
		v.ownGrad = true
	}
	return v.grad
}

// Const records a constant (no gradient) with the given shape. The Var aliases data: data must
// stay unchanged until the tape is Reset.
func (t *Tape[T]) Const(data []T, shape ...int) *Var[T] {
	return t.leaf("Const", data, false, shape)
}

// Leaf records a tensor that requires a gradient (an input of a gradient check, say). The Var
// aliases data; its gradient is allocated by Backward.
func (t *Tape[T]) Leaf(data []T, shape ...int) *Var[T] {
	return t.leaf("Leaf", data, true, shape)
}

func (t *Tape[T]) leaf(op string, data []T, grad bool, shape []int) *Var[T] {
	if t.err != nil {
		return t.placeholder()
	}
	n, err := numel(shape)
	if err != nil {
		return t.fail(fmt.Errorf("autodiff: %s: %w", op, err))
	}
	if n != len(data) {
		return t.failf("%s: shape %v needs %d values, got %d", op, shape, n, len(data))
	}
	v := t.alloc()
	v.shape = append(v.shape, shape...)
	v.value = data
	v.requiresGrad = grad && t.noGrad == 0
	return v
}

// Scalar records a constant scalar (shape []).
func (t *Tape[T]) Scalar(x T) *Var[T] {
	if t.err != nil {
		return t.placeholder()
	}
	v := t.newVar(nil, false)
	v.value[0] = x
	return v
}

// Full records a constant tensor of the given shape filled with x.
func (t *Tape[T]) Full(x T, shape ...int) *Var[T] {
	if t.err != nil {
		return t.placeholder()
	}
	if _, err := numel(shape); err != nil {
		return t.fail(fmt.Errorf("autodiff: Full: %w", err))
	}
	v := t.newVar(shape, false)
	for i := range v.value {
		v.value[i] = x
	}
	return v
}

// Param records parameter p as a leaf: the Var aliases p.Value, and Backward accumulates into
// p.Grad directly (inside NoGrad the Var is a constant).
func (t *Tape[T]) Param(p *Param[T]) *Var[T] {
	if t.err != nil {
		return t.placeholder()
	}
	if p == nil {
		return t.failf("Param: nil parameter")
	}
	n, err := numel(p.Shape)
	if err != nil {
		return t.fail(fmt.Errorf("autodiff: Param %q: %w", p.Name, err))
	}
	if n != len(p.Value) || len(p.Grad) != len(p.Value) {
		return t.failf("Param %q: shape %v needs %d values, have %d values and %d grads", p.Name, p.Shape, n, len(p.Value), len(p.Grad))
	}
	v := t.alloc()
	v.shape = append(v.shape, p.Shape...)
	v.value = p.Value
	if t.noGrad == 0 {
		v.requiresGrad = true
		v.grad = p.Grad
	}
	return v
}

// Detach returns a constant sharing a's value: no gradient flows through it (torch's
// x.detach()).
func (t *Tape[T]) Detach(a *Var[T]) *Var[T] {
	if !t.check("Detach", a) {
		return t.placeholder()
	}
	v := t.alloc()
	v.shape = append(v.shape, a.shape...)
	v.value = a.value
	return v
}

// ZeroGrads sets the gradient of every Var recorded since the last Reset to zero — parameters'
// Grad buffers included, since their Vars alias them — so that BackwardFrom can run again on the
// same graph with another seed: one vector-Jacobian product per call, the forward pass recorded
// once.
func (t *Tape[T]) ZeroGrads() {
	for _, v := range t.nodes {
		clear(v.grad)
	}
}

// ErrNotScalar is returned by Backward for an output with more than one element.
var ErrNotScalar = errors.New("autodiff: Backward needs a one-element output")

// Backward computes the gradient of the one-element Var out with respect to every Var recorded
// before it that requires a gradient, accumulating into their Grad buffers (parameters'
// gradients accumulate into Param.Grad). It returns the tape's recorded error, if any.
func (t *Tape[T]) Backward(out *Var[T]) error {
	if t.err != nil {
		return t.err
	}
	if out == nil || out.tape != t {
		return errors.New("autodiff: Backward: output is nil or from another tape")
	}
	if len(out.value) != 1 {
		return fmt.Errorf("%w (shape %v)", ErrNotScalar, out.shape)
	}
	return t.BackwardFrom(out, []T{1})
}

// BackwardFrom runs reverse-mode differentiation seeded with d(loss)/d(out) = seed, which must
// have out's length (a vector-Jacobian product). Gradients accumulate: running Backward twice
// without Reset (or without zeroing parameter gradients) adds both contributions. If out does
// not depend on anything that requires a gradient, nothing happens.
func (t *Tape[T]) BackwardFrom(out *Var[T], seed []T) error {
	if t.err != nil {
		return t.err
	}
	if out == nil || out.tape != t {
		return errors.New("autodiff: BackwardFrom: output is nil or from another tape")
	}
	if len(seed) != len(out.value) {
		return fmt.Errorf("autodiff: BackwardFrom: seed has %d values, output %v has %d", len(seed), out.shape, len(out.value))
	}
	if !out.requiresGrad {
		return nil
	}
	g := out.gradBuf()
	for i, s := range seed {
		g[i] += s
	}
	idx := -1
	for i := len(t.nodes) - 1; i >= 0; i-- {
		if t.nodes[i] == out {
			idx = i
			break
		}
	}
	for i := idx; i >= 0; i-- {
		v := t.nodes[i]
		if v.back != nil && v.grad != nil {
			v.back()
		}
	}
	return t.err
}

func numel(shape []int) (int, error) {
	n := 1
	for _, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in shape %v", shape)
		}
		if d != 0 && n > (1<<31-1)/d {
			return 0, fmt.Errorf("shape %v is too large", shape)
		}
		n *= d
	}
	return n, nil
}
