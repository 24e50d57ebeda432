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
				sameOutputs(t, got[0], got[1], K*indOut, 1e-5)
			})
		}
	}
}

// TestInducingFactoredCrossover: the cost model (forming W costs mo·mi·d_in + d_out·mo·d_in
// more, the factored form mi·d_in + mo·mi + d_out·mo more per input column) applies a weight sample of the mlp_ffgu first
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
	// A convolution meets P = 16 columns per input (64 → 128 channels, 3×3, padding 1, 4×4 input;
	// d_in 577, M 8 × 8): formed 8·8·577 + 128·8·577 + 16n·128·577 against factored
	// 16n·(128·577 + 8·577 + 8·8 + 128·8): 7 717 952 > 7 637 760 at n = 6, 8 899 648 < 8 910 720 at 7.
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{64, 4, 4},
		Layers: []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 64, Out: 128, Bias: true, Kernel: [2]int{3, 3},
			Padding: [2]int{1, 1}, Posterior: inducingPost(8, 8, runtime.QDiagonal, true, 0)}, {Name: "flat", Op: runtime.OpFlatten}}}
	conv := newModel(t, spec, randomTensors(spec, 3))
	for _, c := range []struct {
		n    int
		want bool
	}{{1, true}, {6, true}, {7, false}} {
		if got := runtime.InducingFactored(conv, "c", c.n); got != c.want {
			t.Errorf("convolution, n = %d: factored %v, want %v", c.n, got, c.want)
		}
	}
}

// TestInducingFactoredNetworks: the same check on whole networks — convolutions (im2col and
// pointwise), residual blocks, BatchNorm, a Linear layer without bias, global U — every inducing
// layer factored against every one formed, for batches of 1 and 3, for weight samples and for
// the posterior mean (Options.Mean).
func TestInducingFactoredNetworks(t *testing.T) {
	cnn := cnnSpec()
	cnn.Layers[5].Shortcut[0].Posterior = inducingPost(2, 2, runtime.QDiagonal, false, 0) // r2s: 1×1, pointwise
	specs := map[string]*runtime.Spec{"mlp": mlpSpec(), "cnn": cnn, "global-mlp": globalMLPSpec(), "global-cnn": globalCNNSpec()}
	for name, spec := range specs {
		var layers []string
		var walk func([]runtime.LayerSpec)
		walk = func(ls []runtime.LayerSpec) {
			for _, l := range ls {
				walk(l.Body)
				walk(l.Shortcut)
				if l.Posterior != nil && l.Posterior.Kind == runtime.KindInducing {
					layers = append(layers, l.Name)
				}
			}
		}
		walk(spec.Layers)
		ts := randomTensors(spec, 11)
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/n=%d", name, n), func(t *testing.T) {
				if len(layers) < 2 {
					t.Fatalf("%d inducing layers", len(layers))
				}
				m0 := newModel(t, spec, ts)
				xs := randomInputs(m0, n, 5)
				// Samples, and the posterior mean (σ R (ū (C x̃)) against W̄ = σ R ū C formed).
				for _, opts := range []runtime.Options{
					{Samples: 8, Seed: 9, Strategy: runtime.Weight, MaxBatch: n, KeepSamples: true},
					{Mean: true, Strategy: runtime.Weight, MaxBatch: n, KeepSamples: true},
				} {
					var got [2][]runtime.Prediction
					for i, mode := range []string{"on", "off"} {
						m := newModel(t, spec, ts)
						for _, l := range layers {
							if !runtime.SetInducingFactored(m, l, mode) {
								t.Fatalf("%s is not an inducing layer", l)
							}
						}
						got[i] = predictAll(t, m, opts, xs)
					}
					sameOutputs(t, got[0], got[1], 0, 1e-4)
				}
			})
		}
	}
}

// sameOutputs fails t unless every input's kept outputs agree between the factored (a) and the
// formed (b) predictions within tol relative (plus tol absolute); size, if not 0, is the number
// of outputs each input must have.
func sameOutputs(t *testing.T, a, b []runtime.Prediction, size int, tol float64) {
	t.Helper()
	for i := range a {
		x, y := a[i].Outputs, b[i].Outputs
		if len(x) == 0 || len(y) != len(x) || (size != 0 && len(x) != size) {
			t.Fatalf("input %d: %d and %d outputs, want %d", i, len(x), len(y), size)
		}
		for j := range x {
			if d := math.Abs(float64(x[j] - y[j])); d > tol*(1+math.Abs(float64(y[j]))) || math.IsNaN(d) {
				t.Fatalf("input %d, output %d: factored %v, formed %v", i, j, x[j], y[j])
			}
		}
	}
}

// TestInducingMeanPath: the posterior-mean weight W̄ = σ R ū C meets cols input columns formed
// (mo·mi·d_in + d_out·mo·d_in, then d_out·d_in per column) or factored (mi·d_in + mo·mi + d_out·mo
// per column), whichever costs less. 64 → 128 channels, 3×3 on 4×4 (16 columns per input, d_in
// 577, M 8 × 8): formed 36 928 + 590 848 + 1 181 696 n against factored 91 264 n — factored for
// every batch. 3 → 8 channels, 3×3 on 8×8 (64 columns, d_in 28): formed 3 584 + 14 336 n against
// factored 22 528 n — formed for every batch.
func TestInducingMeanPath(t *testing.T) {
	small := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{3, 8, 8},
		Layers: []runtime.LayerSpec{{Name: "c", Op: runtime.OpConv2d, In: 3, Out: 8, Bias: true, Kernel: [2]int{3, 3},
			Padding: [2]int{1, 1}, Posterior: inducingPost(8, 8, runtime.QDiagonal, true, 0)}, {Name: "flat", Op: runtime.OpFlatten}}}
	for _, c := range []struct {
		name string
		spec *runtime.Spec
		want string
	}{{"64 → 128 on 4×4", indConvSpec(128, 4), "factored"}, {"3 → 8 on 8×8", small, "formed"}} {
		m := newModel(t, c.spec, randomTensors(c.spec, 3))
		for _, n := range []int{1, 2, 64} {
			if got := runtime.InducingMeanPath(m, "c", n); got != c.want {
				t.Errorf("%s, %d inputs: the mean weight is %s, want %s", c.name, n, got, c.want)
			}
		}
	}
}

// TestInducingFactoredSmallerBatch: a Predictor sized for a batch the factored path does not take
// (MaxBatch 8: W formed) still has the scratch the factored path needs when a smaller batch
// takes it (one input of a 64 → 128 3×3 convolution on 4×4, factored up to 6 inputs:
// TestInducingFactoredCrossover). At 17c8c00 this panicked (slice bounds out of range). The
// batch is the smallest above the crossover: at 4096, as this test first had it, the scratch
// alone is 150 MB and the test took 90 s under QEMU.
func TestInducingFactoredSmallerBatch(t *testing.T) {
	for _, st := range []runtime.Strategy{runtime.Weight, runtime.Auto, runtime.Local} {
		m := newModel(t, indConvSpec(128, 4), randomTensors(indConvSpec(128, 4), 3))
		if runtime.InducingFactored(m, "c", 8) || !runtime.InducingFactored(m, "c", 1) {
			t.Fatal("the crossover moved; pick another layer")
		}
		p, err := m.NewPredictor(runtime.Options{Samples: 2, Seed: 1, Strategy: st, MaxBatch: 8})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 6, 7} {
			out := make([]runtime.Prediction, n)
			if err := p.PredictBatch(randomInputs(m, n, 3), out); err != nil {
				t.Fatalf("%v, %d inputs: %v", st, n, err)
			}
		}
	}
}
