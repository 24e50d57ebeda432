package bnn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// condR is R(λ) = KL[N(m, λ²Σ) ‖ N(m, Σ)] for a D-dimensional Gaussian: ½(Dλ² − D − D log λ²),
// whatever Σ (paper 003 appendix G: q(W|U) and p(W|U) differ only by the scale λ).
func condR(d int, lam float64) float64 {
	D := float64(d)
	return 0.5 * (D*lam*lam - D - D*math.Log(lam*lam))
}

// TestFunctionSpaceKLFixtures: with UseFunctionSpaceKL(N) each layer's KL is bayesianize's
// (kl_divergence() in the fixtures, KL[q(U) ‖ p(U)] + R(λ)) minus (1 − β)R(λ), with
// β = min(1, N/d_in), d_in read off the printed architecture (in_features + 1; a conv layer's
// C_in·k_h·k_w + 1) and λ = min(softplus(_lamda), max_lamda) from the state_dict; with N at least
// every d_in it is bayesianize's KL unchanged.
func TestFunctionSpaceKLFixtures(t *testing.T) {
	for _, fx := range []struct {
		name     string
		din      map[string]int // from model.txt
		dout     map[string]int
		maxLamda float64 // from inference_config.json
	}{
		{"mlp_ffgu", map[string]int{"1": 785, "3": 129}, map[string]int{"1": 128, "3": 10}, 0.03},
		{"cnn_noisy_ffgu", map[string]int{"0": 1*3*3 + 1, "3": 8*3*3 + 1, "7": 577}, map[string]int{"0": 8, "3": 16, "7": 10}, 1},
		{"cnn_ensembleu", map[string]int{"0": 1*3*3 + 1, "3": 8*3*3 + 1, "7": 577}, map[string]int{"0": 8, "3": 16, "7": 10}, 0.1},
	} {
		sd, err := safetensors.ReadFile(filepath.Join(fixtureDir, fx.name, "state_dict.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{50, 100, 577, 1000} {
			t.Run(fx.name+"/N="+strconv.Itoa(n), func(t *testing.T) {
				net, ref := fixtureNet[float64](t, fx.name)
				ws, err := net.UseFunctionSpaceKL(n)
				if err != nil {
					t.Fatal(err)
				}
				if len(ws) != len(fx.din) {
					t.Fatalf("%d weighted layers, want %d", len(ws), len(fx.din))
				}
				for _, w := range ws {
					beta := math.Min(1, float64(n)/float64(fx.din[w.Layer]))
					if w.DIn != fx.din[w.Layer] || !(math.Abs(w.Beta-beta) <= 1e-15) {
						t.Errorf("layer %s: d_in %d, β %g; want %d, %g", w.Layer, w.DIn, w.Beta, fx.din[w.Layer], beta)
					}
				}
				kls := layerKLs(t, net)
				for _, k := range kls {
					din, ok := fx.din[k.Name]
					if !ok {
						t.Fatalf("unexpected layer %q", k.Name)
					}
					tn, _ := ref.Tensor(k.Name + ".kl")
					bay, err := tn.Float64s()
					if err != nil {
						t.Fatal(err)
					}
					raw, _ := sd.Tensor(k.Name + "._lamda")
					rv, err := raw.Float64s()
					if err != nil {
						t.Fatal(err)
					}
					lam := math.Min(math.Log1p(math.Exp(rv[0])), fx.maxLamda)
					r := condR(din*fx.dout[k.Name], lam)
					beta := math.Min(1, float64(n)/float64(din))
					want := bay[0] - (1-beta)*r // KL[q(U) ‖ p(U)] + β R
					if rel := math.Abs(k.KL-want) / math.Abs(want); !(rel < 1e-4) {
						t.Errorf("layer %s (β %.4f): KL %.8g, want %.8g = bayesianize %.8g − (1 − β)·R %.8g", k.Name, beta, k.KL, want, bay[0], r)
					}
				}
			})
		}
	}
}

// TestFunctionSpaceKLTiny: for every q(U) family (whitened or not), linear and conv, the weighted
// KL of each layer equals the runtime's independent float64 KL (β = 1) minus (1 − β)R(λ); its
// gradient with respect to _lamda is β·D·(λ − 1/λ)·sigmoid(_lamda) (KL[q(U) ‖ p(U)] does not
// depend on λ) and matches central finite differences, as do the gradients of every other
// parameter; with N ≥ every d_in the KL is unchanged.
func TestFunctionSpaceKLTiny(t *testing.T) {
	for _, pc := range posteriorCases() {
		if pc.post == nil || pc.post.Kind != runtime.KindInducing {
			continue
		}
		for _, conv := range []bool{false, true} {
			name := pc.name
			if conv {
				name += "/conv"
			}
			t.Run(name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(3, 4))
				spec := tinySpec(pc.post, conv)
				n := perturbedNet(t, spec, rng)
				m := netModel(t, n)
				ref := map[string]float64{}
				for _, li := range m.Layers() {
					ref[li.Name] = li.KL
				}
				m.Close()
				// tinySpec: linear 5→4 with bias (d_in 6), 4→3 without (d_in 4); conv 2→3 3×3
				// with bias (d_in 19), linear 12→3 with bias (d_in 13).
				din := map[string]int{"0": 6, "2": 4}
				dout := map[string]int{"0": 4, "2": 3}
				if conv {
					din = map[string]int{"0": 19, "4": 13}
					dout = map[string]int{"0": 3, "4": 3}
				}
				lamda := map[string]*autodiff.Param[float64]{}
				for _, p := range n.Params() {
					if name, ok := strings.CutSuffix(p.Name, "._lamda"); ok {
						lamda[name] = p.Param
					}
				}
				same := layerKLs(t, n)
				if _, err := n.UseFunctionSpaceKL(19); err != nil { // N ≥ every d_in: β = 1
					t.Fatal(err)
				}
				if again, err := n.LayerKLs(); err != nil || len(again) != len(same) || again[0] != same[0] || again[1] != same[1] {
					t.Fatalf("N = 19: KLs %v (%v), before %v", again, err, same)
				}
				const N = 3
				if _, err := n.UseFunctionSpaceKL(N); err != nil {
					t.Fatal(err)
				}
				kls := layerKLs(t, n)
				if len(kls) != 2 {
					t.Fatalf("%d layer KLs, want 2", len(kls))
				}
				for _, k := range kls {
					raw := lamda[k.Name].Value[0]
					lam := math.Log1p(math.Exp(raw))
					beta := float64(N) / float64(din[k.Name])
					want := ref[k.Name] - (1-beta)*condR(din[k.Name]*dout[k.Name], lam)
					if rel := math.Abs(k.KL-want) / math.Max(1e-12, math.Abs(want)); !(rel < 1e-6) {
						t.Errorf("layer %s: KL %.10g, want %.10g (runtime %.10g, β %.4f)", k.Name, k.KL, want, ref[k.Name], beta)
					}
				}
				// Gradients of the KL alone.
				for _, l := range n.layers {
					if il, ok := l.(*inducing[float64]); ok {
						il.jit = 0
					}
				}
				tp := autodiff.NewTape[float64]()
				for _, p := range n.Params() {
					p.ZeroGrad()
				}
				if err := tp.Backward(n.KL(tp)); err != nil {
					t.Fatal(err)
				}
				for name, p := range lamda {
					raw := p.Value[0]
					lam := math.Log1p(math.Exp(raw))
					D := float64(din[name] * dout[name])
					want := float64(N) / float64(din[name]) * D * (lam - 1/lam) / (1 + math.Exp(-raw))
					if !(math.Abs(p.Grad[0]-want) <= 1e-8*math.Max(1, math.Abs(want))) {
						t.Errorf("layer %s: ∂KL/∂_lamda %.10g, closed form β·D·(λ − 1/λ)·σ(_lamda) %.10g", name, p.Grad[0], want)
					}
				}
				if checkGradients(t, n.Trainable(), func() float64 {
					tp.Reset()
					return n.KL(tp).Item()
				}, func(n int) int { return max(1, n/6) }) == 0 {
					t.Fatal("no parameters checked")
				}
			})
		}
	}
}

// TestFunctionSpaceKLGlobal: with a global inducing posterior the layers' conditional terms are
// weighted and the global posterior's own KL is not.
func TestFunctionSpaceKLGlobal(t *testing.T) {
	_, n := globalNet(t, runtime.QDiagonal, true, false, 3)
	before := layerKLs(t, n)
	lam := map[string]float64{}
	for _, p := range n.Params() {
		if name, ok := strings.CutSuffix(p.Name, "._lamda"); ok {
			lam[name] = math.Log1p(math.Exp(p.Value[0]))
		}
	}
	ws, err := n.UseFunctionSpaceKL(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(ws) != 2 || ws[0].Layer != "0" || ws[0].Beta != 2.0/6 || ws[1].Layer != "2" || ws[1].Beta != 2.0/4 {
		t.Fatalf("weights %+v, want layer 0 β 1/3 and layer 2 β 1/2", ws)
	}
	after := layerKLs(t, n)
	d := map[string]int{"0": 6 * 4, "2": 4 * 3}
	beta := map[string]float64{"0": 2.0 / 6, "2": 2.0 / 4}
	for i, k := range after {
		want := before[i].KL
		if k.Name != runtime.GlobalUName {
			// A global-U layer's KL is its conditional term alone.
			want = beta[k.Name] * condR(d[k.Name], lam[k.Name])
		}
		if !(math.Abs(k.KL-want) <= 1e-9*math.Max(1, math.Abs(want))) {
			t.Errorf("%s: KL %.10g, want %.10g (before %.10g)", k.Name, k.KL, want, before[i].KL)
		}
	}
}

// TestFunctionSpaceKLErrors: no inducing layer, or no training points.
func TestFunctionSpaceKLErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		post *runtime.PosteriorSpec
		n    int
		err  string
	}{
		{"ffg", &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.5}, 10, "no inducing layer"},
		{"fcg", &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.5, PriorBiasSD: 0.8}, 10, "no inducing layer"},
		{"deterministic", nil, 10, "no inducing layer"},
		{"inducing, N = 0", inducingPost(runtime.QDiagonal, true), 0, "0 training points"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := New[float64](tinySpec(tc.post, false), nil, rand.New(rand.NewPCG(1, 2)))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := n.UseFunctionSpaceKL(tc.n); err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
