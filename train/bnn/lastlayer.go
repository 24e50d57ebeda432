package bnn

import (
	"fmt"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

// LastLayer is the network's last layer when it is a Linear mean-field Gaussian (ffg) layer: the
// layer the last-layer function-space KL (train/fsvi.LastLayerKL) treats as random, every earlier
// layer supplying the features it reads.
type LastLayer[T Float] struct {
	l *ffg[T]
	// Name is the layer's name, In its number of inputs (features) and Out of outputs.
	Name    string
	In, Out int
	// Bias says whether the layer has a bias.
	Bias bool
}

// LastFFGLinear returns the network's last layer when it is a Linear ffg layer with nothing after
// it (no activation, pooling or residual block), and an error naming what the network ends with
// otherwise.
func (n *Net[T]) LastFFGLinear() (*LastLayer[T], error) {
	if len(n.layers) == 0 {
		return nil, fmt.Errorf("bnn: the network has no layers")
	}
	switch l := n.layers[len(n.layers)-1].(type) {
	case *ffg[T]:
		if l.conv {
			return nil, fmt.Errorf("bnn: the network ends with the Conv2d layer %q, not a Linear layer", l.affine.name)
		}
		return &LastLayer[T]{l: l, Name: l.affine.name, In: l.k, Out: l.dOut, Bias: l.bias}, nil
	case interface{ name() string }:
		return nil, fmt.Errorf("bnn: the network ends with layer %q, not a Linear mean-field Gaussian (ffg) layer", l.name())
	}
	return nil, fmt.Errorf("bnn: the network does not end with a Linear mean-field Gaussian (ffg) layer")
}

// Vars records the layer's variational parameters on tp: the weight mean (Out × In) and standard
// deviation σ = softplus(ρ) (clamped at max_sd), the bias mean and σ (Out; nil without a bias).
func (ll *LastLayer[T]) Vars(tp *autodiff.Tape[T]) (wm, ws, bm, bs *autodiff.Var[T]) {
	l := ll.l
	wm, ws = tp.Param(l.wm.Param), l.sd(tp, l.ws, &l.spcw)
	if l.bias {
		bm, bs = tp.Param(l.bm.Param), l.sd(tp, l.bs, &l.spcb)
	}
	return wm, ws, bm, bs
}

// PriorSD returns the layer's prior standard deviations from its buffers: the weights' (Out × In,
// row-major) and the biases' (Out; nil without a bias).
func (ll *LastLayer[T]) PriorSD() (w, b []T) {
	if ll.l.bias {
		b = ll.l.pbs.Value
	}
	return ll.l.pws.Value, b
}

// FeaturesMean returns Features(tp, x, true) and ForwardMean(tp, x) from one pass: the last
// layer at its mean applied to the features, which are the input ForwardMean gives it (the same
// context and layers), so both are the same values as the two calls.
func (n *Net[T]) FeaturesMean(tp *autodiff.Tape[T], x *autodiff.Var[T]) (phi, out *autodiff.Var[T]) {
	c := &Context[T]{Mean: true, net: n}
	n.sampleGlobal(tp, c)
	last := len(n.layers) - 1
	x = forwardLayers(tp, n.layers[:last], x, c)
	return x, n.layers[last].forward(tp, x, c)
}

// Features runs every layer but the last on x (shape (N, input shape…)) and returns the last
// layer's input (N, In). With mean set the weights are the posterior means (no noise, as
// ForwardMean); otherwise one weight sample from the network's stream, shared by the whole
// batch (weight-space noise, not the local reparameterisation of training mode), so gradients
// reach the earlier layers' means and standard deviations. BatchNorm uses its running
// statistics either way. The last layer must be the one LastFFGLinear returns.
func (n *Net[T]) Features(tp *autodiff.Tape[T], x *autodiff.Var[T], mean bool) *autodiff.Var[T] {
	c := &Context[T]{Mean: mean, net: n}
	n.sampleGlobal(tp, c)
	return forwardLayers(tp, n.layers[:len(n.layers)-1], x, c)
}
