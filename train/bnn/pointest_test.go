package bnn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// TestPointEstimates: paper 003's ablation (appendix J) sets λ_max = 0 for a point estimate of W
// given U and σ_max = 0 for a MAP estimate of U. Before this was handled, both made the loss NaN
// at the first step (log λ = −∞ in R(λ), log σ_U = −∞ in KL[q(U) ‖ p(U)], times a zero gradient).
// Now the KL is finite, the conditional term is absent with λ_max = 0 and the U term of a
// whitened diagonal q(U) with σ_max = 0 is −log N(μ; 0, I) = ½ Σ(μ² + log 2π), computed here from
// the raw tensors; every layer's KL agrees with the runtime's independent float64 one; the
// gradients match finite differences; and with both point estimates (or an ensemble member and
// λ_max = 0) a forward pass no longer depends on the noise seed and equals the runtime's
// posterior-mean prediction, while with λ_max > 0 it does depend on it.
func TestPointEstimates(t *testing.T) {
	for _, c := range []struct {
		name           string
		q              string
		whitened       bool
		maxLamda       *float64
		maxSDU         *float64
		deterministic  bool
		closedFormKLOK bool // whitened diagonal: the closed form below applies
	}{
		{"diagonal-whitened-both", runtime.QDiagonal, true, fptr(0), fptr(0), true, true},
		{"diagonal-prior-both", runtime.QDiagonal, false, fptr(0), fptr(0), true, false},
		{"diagonal-whitened-U", runtime.QDiagonal, true, fptr(0.3), fptr(0), false, true},
		{"diagonal-prior-W", runtime.QDiagonal, false, fptr(0), fptr(0.3), false, false},
		{"ensemble-whitened-W", runtime.QEnsemble, true, fptr(0), nil, true, false},
		{"ensemble-prior-W", runtime.QEnsemble, false, fptr(0), nil, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			post := inducingPost(c.q, c.whitened)
			post.MaxLamda, post.MaxSDU = c.maxLamda, c.maxSDU
			rng := rand.New(rand.NewPCG(11, 12))
			spec := tinySpec(post, false)
			n := perturbedNet(t, spec, rng)
			pointW := c.maxLamda != nil && *c.maxLamda == 0
			pointU := c.maxSDU != nil && *c.maxSDU == 0

			kls := compareKLs(t, n)
			vals := paramValues(n)
			dims := map[string][2]int{"0": {6, 4}, "2": {4, 3}} // tinySpec: d_in (with bias), d_out
			for _, k := range kls {
				if math.IsNaN(k.KL) || math.IsInf(k.KL, 0) {
					t.Fatalf("layer %s: KL %g", k.Name, k.KL)
				}
				want := 0.0
				if !pointW {
					lam := math.Min(math.Log1p(math.Exp(vals[k.Name+"._lamda"][0])), *c.maxLamda)
					want += condR(dims[k.Name][0]*dims[k.Name][1], lam)
				}
				switch {
				case c.q == runtime.QEnsemble:
					// no U term
				case c.closedFormKLOK && pointU:
					for _, mu := range vals[k.Name+".inducing_mean"] {
						want += 0.5 * (mu*mu + math.Log(2*math.Pi))
					}
				default:
					continue
				}
				if !(math.Abs(k.KL-want) <= 1e-9*math.Max(1, math.Abs(want))) {
					t.Errorf("layer %s: KL %.12g, closed form %.12g", k.Name, k.KL, want)
				}
			}

			// Gradients of the sampled outputs and the KL (no jitter, as TestGradients).
			for _, l := range n.layers {
				if il, ok := l.(*inducing[float64]); ok {
					il.jit = 0
				}
			}
			x := randn(rng, 2*5, 1)
			cw := randn(rng, 2*3, 1)
			tp := autodiff.NewTape[float64]()
			for _, p := range n.Params() {
				p.ZeroGrad()
			}
			obj := objective(n, tp, x, []int{2, 5}, cw, true)
			if v := obj.Item(); math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("objective %g", v)
			}
			if err := tp.Backward(obj); err != nil {
				t.Fatal(err)
			}
			for _, p := range n.Params() {
				for i, g := range p.Grad {
					if math.IsNaN(g) || math.IsInf(g, 0) {
						t.Fatalf("%s gradient [%d] = %g", p.Name, i, g)
					}
				}
				if pointW && strings.HasSuffix(p.Name, "._lamda") && p.Grad[0] != 0 {
					t.Errorf("%s gradient %g with λ_max = 0, want 0", p.Name, p.Grad[0])
				}
			}
			checkGradients(t, n.Trainable(), func() float64 {
				tp.Reset()
				return objective(n, tp, x, []int{2, 5}, cw, true).Item()
			}, func(n int) int { return max(1, n/6) })

			// Forward passes with two noise seeds (both ensemble member 0), with bayesianize's jitter
			// again, as the runtime uses it.
			for _, l := range n.layers {
				if il, ok := l.(*inducing[float64]); ok {
					il.jit = jitter
				}
			}
			forward := func(seed uint64) []float64 {
				tp := autodiff.NewTape[float64]()
				n.Begin()
				n.Seed(seed, 3)
				n.passes = 0
				return append([]float64(nil), n.Forward(tp, tp.Const(x, 2, 5), false).Value()...)
			}
			a, b := forward(1), forward(2)
			if len(a) == 0 || len(a) != len(b) {
				t.Fatalf("outputs with seeds 1 and 2: %d and %d values", len(a), len(b))
			}
			same := true
			for i := range a {
				if math.IsNaN(a[i]) || math.IsNaN(b[i]) {
					t.Fatalf("outputs with seeds 1 and 2: %v and %v: NaN", a, b)
				}
				if math.Abs(a[i]-b[i]) > 1e-12*(1+math.Abs(a[i])) {
					same = false
				}
			}
			if same != c.deterministic {
				t.Fatalf("outputs with seeds 1 and 2: %v and %v; want them equal: %v", a, b, c.deterministic)
			}
			if !c.deterministic || c.q == runtime.QEnsemble {
				return // the runtime's samples cycle through the members
			}
			m := netModel(t, n)
			defer m.Close()
			// The runtime's samples, by either strategy, are all that one network.
			xs := make([]float32, len(x))
			for i, v := range x {
				xs[i] = float32(v)
			}
			for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
				p, err := m.NewPredictor(runtime.Options{Samples: 4, Seed: 9, Strategy: st, MaxBatch: 2, KeepSamples: true})
				if err != nil {
					t.Fatal(err)
				}
				out := make([]runtime.Prediction, 2)
				if err := p.PredictBatch(xs, out); err != nil {
					t.Fatal(err)
				}
				for i := range out {
					if len(out[i].Outputs) != 4*3 {
						t.Fatalf("%v: %d outputs kept, want 4 samples × 3", st, len(out[i].Outputs))
					}
					for k, v := range out[i].Outputs {
						if want := a[i*3+k%3]; !(math.Abs(float64(v)-want) <= 1e-4*(1+math.Abs(want))) {
							t.Errorf("%v: input %d sample %d output %d = %.7g, trainer %.7g", st, i, k/3, k%3, v, want)
						}
					}
				}
			}
		})
	}
}
