package bnn

import (
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// dropout is a Dropout layer of rate p (runtime.LayerSpec.P): in a training pass, and in every
// pass that is not Mean for an MC dropout layer (runtime.LayerSpec.MC), each element of the
// batch is kept with probability 1−p and scaled by 1/(1−p) (PyTorch's inverted dropout); the
// mask is drawn from the net's stream (Seed) and enters the tape as a constant factor, so the
// backward pass multiplies the gradient by the same mask. Otherwise it is the identity
// (PyTorch's eval mode; the weight-scaling rule for Mean).
type dropout[T Float] struct {
	paramless[T]
	p  float64
	mc bool
}

func (d *dropout[T]) forward(tp *autodiff.Tape[T], x *autodiff.Var[T], c *Context[T]) *autodiff.Var[T] {
	if c.Mean || d.p == 0 || !(c.Train || d.mc) {
		return x
	}
	return tp.Mul(x, tp.Const(c.net.dropoutMask(x.Len(), d.p), x.Shape()...))
}

// dropoutMask returns count mask values, each 1/(1−p) with probability 1−p and 0 otherwise,
// from the net's stream (uniform u, kept when u ≥ p, as the runtime decides), valid until Begin.
func (n *Net[T]) dropoutMask(count int, p float64) []T {
	b := n.arena.get(count)
	var u []float32
	switch v := any(b).(type) {
	case []float32:
		u = v
	default:
		u = make([]float32, count)
	}
	n.stream.Uniform(u)
	keep := T(1 / (1 - p))
	for i, x := range u {
		if float64(x) >= p {
			b[i] = keep
		} else {
			b[i] = 0
		}
	}
	return b
}

// newDropout builds a dropout layer from its spec (nil: p = 0 and not MC, the identity).
func newDropout[T Float](ls *runtime.LayerSpec) layer[T] {
	if ls.P == 0 {
		return nil
	}
	return &dropout[T]{paramless: paramless[T]{ls.Name}, p: ls.P, mc: ls.MC}
}
