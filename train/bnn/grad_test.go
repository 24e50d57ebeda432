package bnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

func fptr(v float64) *float64 { return &v }

// tinySpec is a two-layer network small enough for finite differences: a conv layer (when conv)
// or a linear layer, then a linear output layer, both with posterior p.
func tinySpec(p *runtime.PosteriorSpec, conv bool) *runtime.Spec {
	var ls []runtime.LayerSpec
	in := []int{5}
	if conv {
		in = []int{2, 4, 4}
		ls = append(ls,
			runtime.LayerSpec{Name: "0", Op: runtime.OpConv2d, In: 2, Out: 3, Bias: true, Kernel: [2]int{3, 3}, Padding: [2]int{1, 1}, Posterior: p},
			runtime.LayerSpec{Name: "1", Op: runtime.OpTanh},
			runtime.LayerSpec{Name: "2", Op: runtime.OpMaxPool2d, Kernel: [2]int{2, 2}},
			runtime.LayerSpec{Name: "3", Op: runtime.OpFlatten},
			runtime.LayerSpec{Name: "4", Op: runtime.OpLinear, In: 12, Out: 3, Bias: true, Posterior: p})
	} else {
		ls = append(ls,
			runtime.LayerSpec{Name: "0", Op: runtime.OpLinear, In: 5, Out: 4, Bias: true, Posterior: p},
			runtime.LayerSpec{Name: "1", Op: runtime.OpTanh},
			runtime.LayerSpec{Name: "2", Op: runtime.OpLinear, In: 4, Out: 3, Bias: false, Posterior: p})
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: in, Layers: ls}
}

func inducingPost(q string, whitened bool) *runtime.PosteriorSpec {
	p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 3, PriorSD: 0.7,
		QInducing: q, WhitenedU: whitened}
	if q == runtime.QEnsemble {
		p.EnsembleSize = 3
	}
	return p
}

type postCase struct {
	name string
	post *runtime.PosteriorSpec
}

func posteriorCases() []postCase {
	cs := []postCase{
		{"deterministic", nil},
		{"ffg", &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.5}},
		{"fcg", &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.5, PriorBiasSD: 0.8}},
	}
	for _, q := range []string{runtime.QDiagonal, runtime.QFull, runtime.QMatrix, runtime.QEnsemble} {
		cs = append(cs, postCase{"inducing_" + q + "_whitened", inducingPost(q, true)},
			postCase{"inducing_" + q + "_prior", inducingPost(q, false)})
	}
	return cs
}

// perturb moves every parameter away from bayesianize's initial values (where many entries are
// equal), so that tests see generic values; λ and the scales stay moderate.
func perturb[T Float](n *Net[T], rng *rand.Rand) {
	for _, p := range n.Trainable() {
		for i := range p.Value {
			p.Value[i] += T(0.3 * rng.NormFloat64())
		}
	}
	for _, p := range n.Params() {
		switch {
		case hasSuffix(p.Name, "._lamda"):
			p.Value[0] = T(f64.SoftplusInv(0.4))
		case hasSuffix(p.Name, "._inducing_sd"), hasSuffix(p.Name, "._d_row"), hasSuffix(p.Name, "._d_col"):
			for i := range p.Value {
				p.Value[i] = T(f64.SoftplusInv(0.2 + 0.3*rng.Float64()))
			}
		case hasSuffix(p.Name, "._weight_sd"), hasSuffix(p.Name, "._bias_sd"), hasSuffix(p.Name, "._scale_diag"):
			for i := range p.Value {
				p.Value[i] = T(f64.SoftplusInv(0.05 + 0.2*rng.Float64()))
			}
		}
	}
}

func hasSuffix(s, suf string) bool { return len(s) >= len(suf) && s[len(s)-len(suf):] == suf }

// objective evaluates Σ c·f(x) + KL with the noise fixed by (seed, step 0) and ensemble member 1.
func objective(n *Net[float64], tp *autodiff.Tape[float64], x []float64, shape []int, c []float64, train bool) *autodiff.Var[float64] {
	n.Begin()
	n.Seed(42, 0)
	n.passes = 1
	out := n.Forward(tp, tp.Const(x, shape...), train)
	f := tp.Sum(tp.Mul(out, tp.Const(c, out.Shape()...)))
	return tp.Add(f, tp.Scale(n.KL(tp), 0.01))
}

// TestGradients checks the gradient of sampled outputs and KL with respect to every parameter
// against central finite differences in float64.
func TestGradients(t *testing.T) {
	for _, pc := range posteriorCases() {
		for _, conv := range []bool{false, true} {
			for _, train := range []bool{true, false} {
				if pc.post != nil && pc.post.Kind == runtime.KindInducing && !train {
					continue // inducing layers sample the same way in both modes
				}
				name := pc.name
				if conv {
					name += "/conv"
				}
				if !train {
					name += "/eval"
				}
				t.Run(name, func(t *testing.T) {
					rng := rand.New(rand.NewPCG(7, 8))
					spec := tinySpec(pc.post, conv)
					n := perturbedNet(t, spec, rng)
					for _, l := range n.layers {
						if il, ok := l.(*inducing[float64]); ok {
							il.jit = 0
						}
					}
					eval := backpropObjective(t, n, spec, rng, 2, train)
					checked := checkGradients(t, n.Trainable(), eval, func(n int) int { return max(1, n/6) })
					if checked == 0 && pc.post != nil {
						t.Fatal("no parameters checked")
					}
				})
			}
		}
	}
}

func prod(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// TestKLMatchesRuntime compares the trainer's KL for every q(U) family, whitened or not, and
// FFG with the runtime's independent float64 implementation.
func TestKLMatchesRuntime(t *testing.T) {
	for _, pc := range posteriorCases() {
		if pc.post == nil {
			continue
		}
		t.Run(pc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			spec := tinySpec(pc.post, true)
			n := perturbedNet(t, spec, rng)
			compareKLs(t, n)
		})
	}
}

// compareKLs checks every layer's trainer KL against the runtime's (relative error below 1e-4)
// and returns the trainer's.
func compareKLs(t *testing.T, n *Net[float64]) []LayerKL {
	t.Helper()
	kls := layerKLs(t, n)
	m := netModel(t, n)
	defer m.Close()
	rt := m.Layers()
	if len(rt) != len(kls) {
		t.Fatalf("%d trainer KLs, %d runtime layers", len(kls), len(rt))
	}
	for i := range kls {
		want := rt[i].KL
		if rel := math.Abs(kls[i].KL-want) / math.Max(1e-12, math.Abs(want)); !(rel < 1e-4) {
			t.Errorf("layer %s: trainer KL %.8g, runtime %.8g", kls[i].Name, kls[i].KL, want)
		}
	}
	return kls
}

// checkGradients compares every stride(len)-th entry of each parameter's accumulated gradient with
// a central finite difference (h = 10⁻⁶) of eval, which must recompute the objective from the
// current parameter values; the relative error must stay below 10⁻⁴. It returns the number of
// entries checked.
func checkGradients(t *testing.T, params []*autodiff.Param[float64], eval func() float64, stride func(n int) int) int {
	t.Helper()
	const h = 1e-6
	checked := 0
	for _, p := range params {
		for i := 0; i < len(p.Value); i += stride(len(p.Value)) {
			old := p.Value[i]
			p.Value[i] = old + h
			fp := eval()
			p.Value[i] = old - h
			fm := eval()
			p.Value[i] = old
			num := (fp - fm) / (2 * h)
			if err := math.Abs(p.Grad[i]-num) / math.Max(1, math.Abs(num)); !(err < 1e-4) {
				t.Errorf("%s[%d]: gradient %.8g, finite difference %.8g", p.Name, i, p.Grad[i], num)
			}
			checked++
		}
	}
	return checked
}
