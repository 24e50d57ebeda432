package bnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// dropoutSpec is a small network with an MC dropout layer of rate p after its first activation:
// an MLP (5 → 6, tanh, dropout, → 3) or, with conv, a CNN whose dropout acts on feature maps.
func dropoutSpec(p float64, conv bool) *runtime.Spec {
	drop := runtime.LayerSpec{Name: "d", Op: runtime.OpDropout, P: p, MC: true}
	if conv {
		return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2, 4, 4},
			Layers: []runtime.LayerSpec{
				{Name: "0", Op: runtime.OpConv2d, In: 2, Out: 3, Bias: true, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}},
				{Name: "1", Op: runtime.OpTanh},
				drop,
				{Name: "2", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}},
				{Name: "3", Op: runtime.OpFlatten},
				{Name: "4", Op: runtime.OpLinear, In: 12, Out: 3, Bias: true},
			}}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{5},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 5, Out: 6, Bias: true},
			{Name: "1", Op: runtime.OpTanh},
			drop,
			{Name: "2", Op: runtime.OpLinear, In: 6, Out: 3, Bias: true},
		}}
}

// TestDropoutGradients: with the mask fixed (the same seed for every evaluation), the gradient of
// a network with a dropout layer matches central finite differences, in training mode and in
// eval mode (where an MC dropout layer still samples), for an MLP and a CNN; the mask does drop
// something.
func TestDropoutGradients(t *testing.T) {
	for _, conv := range []bool{false, true} {
		for _, train := range []bool{true, false} {
			t.Run(fmt.Sprintf("conv=%v/train=%v", conv, train), func(t *testing.T) {
				rng := rand.New(rand.NewPCG(5, 6))
				spec := dropoutSpec(0.4, conv)
				n := perturbedNet(t, spec, rng)
				batch := 3
				eval := backpropObjective(t, n, spec, rng, batch, train)
				// The mask the objective used: the same stream, drawn after nothing else.
				n.Begin()
				n.Seed(42, 0)
				hidden := batch * 6
				if conv {
					hidden = batch * 3 * 4 * 4
				}
				zeros := 0
				for _, v := range n.dropoutMask(hidden, 0.4) {
					if v == 0 {
						zeros++
					}
				}
				if zeros == 0 || zeros == hidden {
					t.Fatalf("the mask drops %d of %d values", zeros, hidden)
				}
				if checkGradients(t, n.Trainable(), eval, func(int) int { return 1 }) == 0 {
					t.Fatal("no parameters checked")
				}
			})
		}
	}
}

// TestDropoutForward: a training pass multiplies each input value by 0 or 1/(1−p), keeping
// about 1−p of them (within 5 standard errors); an eval pass samples too for an MC layer and is
// the identity without MC; ForwardMean is the identity.
func TestDropoutForward(t *testing.T) {
	const d, batch, p = 50, 40, 0.3
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{d},
		Layers: []runtime.LayerSpec{{Name: "d", Op: runtime.OpDropout, P: p, MC: true}}}
	rng := rand.New(rand.NewPCG(1, 2))
	x := randn(rng, batch*d, 1)
	run := func(n *Net[float64], mode string) []float64 {
		tp := autodiff.NewTape[float64]()
		n.Begin()
		n.Seed(3, 0)
		xv := tp.Const(x, batch, d)
		var out *autodiff.Var[float64]
		switch mode {
		case "train":
			out = n.Forward(tp, xv, true)
		case "eval":
			out = n.Forward(tp, xv, false)
		default:
			out = n.ForwardMean(tp, xv)
		}
		return append([]float64(nil), out.Value()...)
	}
	n, err := New[float64](spec, nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	off := *spec
	off.Layers = []runtime.LayerSpec{{Name: "d", Op: runtime.OpDropout, P: p}}
	nOff, err := New[float64](&off, nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		n        *Net[float64]
		mode     string
		identity bool
	}{
		{"train", n, "train", false}, {"eval mc", n, "eval", false}, {"mean", n, "mean", true},
		{"train no mc", nOff, "train", false}, {"eval no mc", nOff, "eval", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := run(c.n, c.mode)
			kept := 0
			for i, v := range out {
				switch {
				case v == x[i] && c.identity:
				case v == 0 && !c.identity:
				case math.Abs(v-x[i]/(1-p)) <= 1e-15*math.Abs(x[i]) && !c.identity:
					kept++
				default:
					t.Fatalf("value %d: %v from input %v", i, v, x[i])
				}
			}
			if c.identity {
				return
			}
			N := float64(len(out))
			if frac, se := float64(kept)/N, math.Sqrt(p*(1-p)/N); !(math.Abs(frac-(1-p)) <= 5*se) {
				t.Errorf("kept %v of the values, want %v ± %v", frac, 1-p, 5*se)
			}
		})
	}
}
