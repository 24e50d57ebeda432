package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestInducingFactoredMatchesFormed: a weight sample applied in factored form (σλ E1 x̃ +
// σ R (core (C x̃))) gives the outputs of the same sample formed as W and applied, for every
// q(U) family, with and without a bias, for batches on both sides of the cost crossover.
func TestInducingFactoredMatchesFormed(t *testing.T) {
	type tc struct {
		name string
		c    indCase
		bias bool
	}
	var cases []tc
	for _, c := range indCases {
		cases = append(cases, tc{c.name, c, true})
	}
	cases = append(cases, tc{"diagonal-whitened-nobias", indCases[2], false},
		tc{"ensemble3-whitened-nobias", indCases[8], false})
	const K = 16
	for ci, c := range cases {
		for _, n := range []int{1, 2, 7} {
			t.Run(fmt.Sprintf("%s/n=%d", c.name, n), func(t *testing.T) {
				spec, ts := indLayer(t, c.c, uint64(ci+1))
				if !c.bias {
					r := rand.New(rand.NewPCG(uint64(ci), 3))
					spec.Layers[0].Bias = false
					ts["fc.z_col"] = tensor(randn(r, indMi*indK, 1), indMi, indK)
				}
				r := rand.New(rand.NewPCG(uint64(ci), uint64(n)))
				xs := randn(r, n*indK, 1)
				opts := runtime.Options{Samples: K, Seed: uint64(300 + ci), Strategy: runtime.Weight, MaxBatch: n, KeepSamples: true}
				var got [2][]runtime.Prediction
				for i, mode := range []string{"on", "off"} {
					m := newModel(t, spec, ts)
					if !runtime.SetInducingFactored(m, "fc", mode) {
						t.Fatal("fc is not an inducing layer")
					}
					if f := runtime.InducingFactored(m, "fc", n); f != (mode == "on") {
						t.Fatalf("mode %s: factored = %v", mode, f)
					}
					got[i] = predictAll(t, m, opts, xs)
				}
				for i := range got[0] {
					a, b := got[0][i].Outputs, got[1][i].Outputs
					if len(a) != K*indOut || len(b) != len(a) {
						t.Fatalf("input %d: %d and %d outputs, want %d", i, len(a), len(b), K*indOut)
					}
					for j := range a {
						if d := math.Abs(float64(a[j] - b[j])); d > 1e-5*(1+math.Abs(float64(b[j]))) || math.IsNaN(d) {
							t.Fatalf("input %d, output %d: factored %v, formed %v", i, j, a[j], b[j])
						}
					}
				}
			})
		}
	}
}

// TestInducingFactoredCrossover: the cost model applies a weight sample of the mlp_ffgu first
// layer (d_out 128, d_in 785, M 16 × 24) in factored form to up to 89 inputs and forms it for
// 90: formed 16·24·785 + 128·16·785 + 128·785·n against factored
// n·(128·785 + 24·785 + 16·24 + 128·16), equal at n = 1 909 120 / 21 272 ≈ 89.75.
func TestInducingFactoredCrossover(t *testing.T) {
	m := fixtureMLP(t)
	const layer = "1"
	for _, c := range []struct {
		n    int
		want bool
	}{{1, true}, {89, true}, {90, false}, {256, false}} {
		if got := runtime.InducingFactored(m, layer, c.n); got != c.want {
			t.Errorf("n = %d: factored %v, want %v", c.n, got, c.want)
		}
	}
}
