package bnn

import "github.com/edgebnn/edgebnn/train/autodiff"

// FFGTensor is one tensor of a mean-field Gaussian (ffg) layer: the weight or the bias of a
// Linear or Conv2d layer, with q = N(Mean, σ²), σ = softplus(RawSD) clamped at MaxSD when HasMax,
// and the prior N(PriorMean, PriorSD²) held in the layer's buffers. The parameters are the Net's
// own (the optimizer's), so gradients added to Mean.Grad and RawSD.Grad take part in the next
// optimizer step.
type FFGTensor[T Float] struct {
	// Layer is the layer's name.
	Layer string
	// Mean and RawSD are the trainable weight_mean (bias_mean) and _weight_sd (_bias_sd).
	Mean, RawSD *autodiff.Param[T]
	// PriorMean and PriorSD are the prior buffers prior_weight_mean/sd (prior_bias_mean/sd).
	PriorMean, PriorSD *autodiff.Param[T]
	// MaxSD clamps σ from above when HasMax (bayesianize's max_sd).
	MaxSD  float64
	HasMax bool
	// Shape is the tensor's shape: (d_out, d_in) or (d_out, c_in, kh, kw) for a weight, (d_out)
	// for a bias; Conv is set for a Conv2d layer's tensors.
	Shape []int
	Conv  bool
}

// FFGTensors returns every tensor of the network's ffg layers (residual blocks included) in
// layer order, weight before bias, and the number of parametric layers that are not ffg
// (deterministic, fcg, inducing or bernstein layers).
func (n *Net[T]) FFGTensors() (ts []FFGTensor[T], other int) {
	for _, l := range leaves(n.layers) {
		switch f := l.(type) {
		case *ffg[T]:
			ts = append(ts, FFGTensor[T]{Layer: f.affine.name, Mean: f.wm.Param, RawSD: f.ws.Param,
				PriorMean: f.pwm.Param, PriorSD: f.pws.Param, MaxSD: f.maxSD, HasMax: f.hasMax,
				Shape: f.wshape, Conv: f.conv})
			if f.bias {
				ts = append(ts, FFGTensor[T]{Layer: f.affine.name, Mean: f.bm.Param, RawSD: f.bs.Param,
					PriorMean: f.pbm.Param, PriorSD: f.pbs.Param, MaxSD: f.maxSD, HasMax: f.hasMax,
					Shape: []int{f.dOut}, Conv: f.conv})
			}
		case *deterministic[T], *inducing[T], *bernsteinLayer[T], *fcg[T]:
			other++
		}
	}
	return ts, other
}
