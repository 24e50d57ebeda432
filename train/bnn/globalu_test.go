package bnn

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// globalCases are the q(G) families of the global inducing posterior (paper 003 appendix H).
var globalCases = []struct {
	name     string
	q        string
	whitened bool
}{
	{"diagonal_whitened", runtime.QDiagonal, true},
	{"diagonal_prior", runtime.QDiagonal, false},
	{"full_whitened", runtime.QFull, true},
	{"matrix_prior", runtime.QMatrix, false},
	{"ensemble_whitened", runtime.QEnsemble, true},
}

// globalNet is tinySpec with both parametric layers turned into global-U layers (U 2 × 3 each,
// stacked into a 4 × 3 U_{1:L}) of a 3 × 2 G whose q(G) has family q.
func globalNet(t *testing.T, q string, whitened, conv bool, seed uint64) (*runtime.Spec, *Net[float64]) {
	t.Helper()
	spec := tinySpec(inducingPost(q, true), conv)
	if err := UseGlobalInducing(spec, map[string]Init{}, 3, 2); err != nil {
		t.Fatal(err)
	}
	spec.GlobalU.WhitenedU = whitened
	rng := rand.New(rand.NewPCG(seed, 8))
	n := perturbedNet(t, spec, rng)
	n.global.jit = 0
	for _, l := range leaves(n.layers) {
		if il, ok := l.(*inducing[float64]); ok {
			il.jit = 0
		}
	}
	return spec, n
}

// TestGlobalGradients checks the gradient of the sampled outputs plus the KL (the global
// posterior's and the layers' conditional terms) with respect to every parameter — the layers'
// Z, D and λ and the global posterior's Z, D, λ and q(G) — against central finite differences.
func TestGlobalGradients(t *testing.T) {
	for _, c := range globalCases {
		for _, conv := range []bool{false, true} {
			name := c.name
			if conv {
				name += "/conv"
			}
			t.Run(name, func(t *testing.T) {
				spec, n := globalNet(t, c.q, c.whitened, conv, 7)
				rng := rand.New(rand.NewPCG(9, 10))
				eval := backpropObjective(t, n, spec, rng, 2, true)
				checked := checkGradients(t, n.Trainable(), eval, func(n int) int { return max(1, n/6) })
				var global int
				for _, p := range n.Trainable() {
					if strings.HasPrefix(p.Name, runtime.GlobalUName+".") {
						global++
					}
				}
				if checked == 0 || global < 5 {
					t.Fatalf("%d entries checked, %d global parameters", checked, global)
				}
			})
		}
	}
}

// TestGlobalKLMatchesRuntime: the trainer's KL (the global posterior's term and the layers'
// conditional terms) equals the runtime's independent float64 evaluation, Model.GlobalKL plus
// the layers' KL.
func TestGlobalKLMatchesRuntime(t *testing.T) {
	for _, c := range globalCases {
		t.Run(c.name, func(t *testing.T) {
			_, n := globalNet(t, c.q, c.whitened, true, 3)
			n.global.jit = jitter // the runtime's jittered factors
			for _, l := range leaves(n.layers) {
				if il, ok := l.(*inducing[float64]); ok {
					il.jit = jitter
				}
			}
			kls := layerKLs(t, n)
			m := netModel(t, n)
			want := map[string]float64{runtime.GlobalUName: m.GlobalKL()}
			for _, li := range m.Layers() {
				want[li.Name] = li.KL
			}
			if len(kls) != 3 {
				t.Fatalf("%d trainer KLs, want 3 (two layers and global_u)", len(kls))
			}
			total := 0.0
			for _, k := range kls {
				w, ok := want[k.Name]
				if !ok {
					t.Fatalf("trainer KL of %q has no runtime counterpart", k.Name)
				}
				if rel := math.Abs(k.KL-w) / math.Max(1e-12, math.Abs(w)); !(rel < 1e-6) {
					t.Errorf("%s: trainer KL %.10g, runtime %.10g", k.Name, k.KL, w)
				}
				total += k.KL
			}
			tp := autodiff.NewTape[float64]()
			if got := n.KL(tp).Item(); !(math.Abs(got-total) <= 1e-9*math.Abs(total)) {
				t.Errorf("Net.KL %.10g, sum of LayerKLs %.10g", got, total)
			}
		})
	}
}

// TestGlobalRuntimeParity trains a global-U network for a few steps, writes the trainer's
// checkpoint and checks that the runtime (from the checkpoint and from the converted model)
// predicts with Options{Mean: true} the logits of the trainer's ForwardMean: E[U_{1:L}] =
// R_g E[G] C_g, each layer's block whitened, then σ R u C.
func TestGlobalRuntimeParity(t *testing.T) {
	for _, c := range globalCases[:4] {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(21, 22))
			spec := tinySpec(inducingPost(c.q, true), true)
			if err := UseGlobalInducing(spec, map[string]Init{}, 3, 2); err != nil {
				t.Fatal(err)
			}
			spec.GlobalU.WhitenedU = c.whitened
			n, err := New[float32](spec, nil, rng)
			if err != nil {
				t.Fatal(err)
			}
			trainSteps(t, n, spec, 4, rng)
			checkRuntimeParity(t, n, spec, rng)
		})
	}
}

// TestUseGlobalInducingErrors: networks that appendix H's construction does not fit are refused
// with an error naming the layer.
func TestUseGlobalInducingErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*runtime.Spec)
		want []string
	}{
		{"not whitened", func(s *runtime.Spec) { s.Layers[2].Posterior.WhitenedU = false }, []string{`layer "2"`, "whitened_u"}},
		{"families differ", func(s *runtime.Spec) { s.Layers[2].Posterior.QInducing = runtime.QFull },
			[]string{`layer "2"`, `"full"`, `layer "0"`, `"diagonal"`}},
		{"cols differ", func(s *runtime.Spec) { s.Layers[2].Posterior.InducingCols = 2 }, []string{"global_u", `layer "2"`, "inducing_cols 2"}},
		{"no inducing layer", func(s *runtime.Spec) { s.Layers[0].Posterior, s.Layers[2].Posterior = nil, nil }, []string{"no inducing layer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tinySpec(nil, false)
			spec.Layers[0].Posterior = inducingPost(runtime.QDiagonal, true)
			spec.Layers[2].Posterior = inducingPost(runtime.QDiagonal, true)
			tc.edit(spec)
			err := UseGlobalInducing(spec, map[string]Init{}, 3, 3)
			testutil.ErrorContains(t, err, tc.want...)
		})
	}
}
