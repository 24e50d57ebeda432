package autodiff

import "fmt"

// Custom records an operation whose value and vector-Jacobian product are computed by the
// caller: the output has the given shape and a copy of value; during Backward, back receives
// the output's gradient gOut and, for each input, the buffer its gradient accumulates into (nil
// for inputs that need none) and must add ∂L/∂in = Jᵀ gOut to it. It is the hook for ops whose
// derivatives are derived by hand elsewhere (train/bfvi's Bernstein flows). The inputs must not
// change until Backward.
func (t *Tape[T]) Custom(op string, shape []int, value []T, back func(gOut []T, gIns [][]T), ins ...*Var[T]) *Var[T] {
	if !t.check("Custom "+op, ins...) {
		return t.placeholder()
	}
	n, err := numel(shape)
	if err != nil {
		return t.fail(fmt.Errorf("autodiff: Custom %s: %w", op, err))
	}
	if n != len(value) {
		return t.failf("Custom %s: shape %v needs %d values, got %d", op, shape, n, len(value))
	}
	out := t.newVar(shape, false)
	copy(out.value, value)
	t.record(out, func() {
		gs := make([][]T, len(ins))
		for i, in := range ins {
			gs[i] = in.gradBuf()
		}
		back(out.grad, gs)
	}, ins...)
	return out
}

// Fail records err as the tape's error (if it is the first; see Err) and returns a placeholder,
// for custom ops that find their inputs invalid.
func (t *Tape[T]) Fail(err error) *Var[T] { return t.fail(err) }
