package bnn

import (
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// backpropObjective draws a batch of inputs x and objective coefficients c (batch×3) from rng,
// zeroes n's gradients and backpropagates objective(n, x, c, train) into them. It returns the
// objective at the same x and c, re-evaluated on the same tape, for finite differences.
func backpropObjective(t *testing.T, n *Net[float64], spec *runtime.Spec, rng *rand.Rand, batch int, train bool) func() float64 {
	t.Helper()
	shape := append([]int{batch}, spec.InputShape...)
	x := randn(rng, batch*prod(spec.InputShape), 1)
	c := randn(rng, batch*3, 1)
	tp := autodiff.NewTape[float64]()
	for _, p := range n.Params() {
		p.ZeroGrad()
	}
	if err := tp.Backward(objective(n, tp, x, shape, c, train)); err != nil {
		t.Fatal(err)
	}
	return func() float64 {
		tp.Reset()
		return objective(n, tp, x, shape, c, train).Item()
	}
}

// perturbedNet builds a float64 network for spec from rng and moves its parameters away from
// their initial values with perturb.
func perturbedNet(t *testing.T, spec *runtime.Spec, rng *rand.Rand) *Net[float64] {
	t.Helper()
	n, err := New[float64](spec, nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	perturb(n, rng)
	return n
}

// netModel returns n as a runtime model (Net.Model), failing the test on an error.
func netModel[T Float](t *testing.T, n *Net[T]) *runtime.Model {
	t.Helper()
	m, err := n.Model()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// layerKLs returns n's per-layer KLs (Net.LayerKLs), failing the test on an error.
func layerKLs[T Float](t *testing.T, n *Net[T]) []LayerKL {
	t.Helper()
	kls, err := n.LayerKLs()
	if err != nil {
		t.Fatal(err)
	}
	return kls
}
