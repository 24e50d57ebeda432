package bnn

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestGlobalBayesianizeParity checks the global inducing posterior against bayesianize's own
// register_global_inducing_weights_ on the mlp_globalu fixture (testdata/bayesianize/README.md;
// made by scripts/bayesianize_globalu_fixture.py): the state_dict loads under the same tensor
// names, every KL (the three layers' conditional terms and the global module's) matches
// bayesianize's kl_divergence(), the conditional-mean weights match (also after edgebnn convert
// of the state_dict with bayesianize's printed network and config), and the runtime's
// predictive mean and variance of every output (weight and local strategies) match
// bayesianize's Monte Carlo moments within their combined Monte Carlo error.
func TestGlobalBayesianizeParity(t *testing.T) {
	dir := filepath.Join(fixtureDir, "mlp_globalu")
	post := func(dIn int) *runtime.PosteriorSpec {
		return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 4, InducingCols: 6,
			PriorSD: 1 / math.Sqrt(float64(dIn)), MaxLamda: fptr(0.5), MaxSDU: fptr(0.5), QInducing: runtime.QDiagonal, WhitenedU: true}
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{12},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 12, Out: 16, Bias: true, Posterior: post(13)},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 16, Out: 8, Bias: true, Posterior: post(17)},
			{Name: "3", Op: runtime.OpTanh},
			{Name: "4", Op: runtime.OpLinear, In: 8, Out: 5, Bias: true, Posterior: post(9)},
		}}
	if err := UseGlobalInducing(spec, map[string]Init{}, 3, 5); err != nil {
		t.Fatal(err)
	}
	// register_global_inducing_weights_(…, q_inducing="diagonal", whitened_u=True,
	// max_lamda=1.0, max_sd_u=0.8) (the fixture's config.json).
	spec.GlobalU.MaxLamda, spec.GlobalU.MaxSDU = fptr(1), fptr(0.8)
	n, err := New[float64](spec, nil, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	ref := loadFixtureState(t, n, dir)
	get := func(name string) []float64 {
		tn, ok := ref.Tensor(name)
		if !ok {
			t.Fatalf("reference has no %s", name)
		}
		v, err := tn.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	kls := layerKLs(t, n)
	if len(kls) != 4 {
		t.Fatalf("%d KL terms, want 4", len(kls))
	}
	for _, k := range kls {
		want := get(k.Name + ".kl")[0]
		if rel := math.Abs(k.KL-want) / math.Abs(want); !(rel < 1e-6) {
			t.Errorf("%s: KL %.10g, bayesianize %.10g", k.Name, k.KL, want)
		}
	}
	m := netModel(t, n)
	for _, name := range []string{"0", "2", "4"} {
		w, _, _, err := m.MeanWeight(name)
		if err != nil {
			t.Fatal(err)
		}
		want := get(name + ".weight_mean")
		for i := range want {
			if d := math.Abs(float64(w[i]) - want[i]); !(d <= 1e-5*(1+math.Abs(want[i]))) {
				t.Fatalf("layer %s: mean weight[%d] %.7g, bayesianize %.7g", name, i, w[i], want[i])
			}
		}
	}
	// edgebnn convert reads the same state_dict with bayesianize's printed network (its
	// _global_inducing_module line skipped) and config, the global module's size and family from
	// its tensors and its max_lamda / max_sd_u from GlobalInducing.
	cfgPath := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"inference": "inducing", "inducing_rows": 4, "inducing_cols": 6, "prior_sd": 1,
		"sqrt_width_scaling": true, "max_lamda": 0.5, "q_inducing": "diagonal", "whitened_u": true, "max_sd_u": 0.5}`), 0o644); err != nil {
		t.Fatal(err)
	}
	args, err := convert.ParseGlobalInducingArgs([]byte(`{"max_lamda": 1, "max_sd_u": 0.8}`))
	if err != nil {
		t.Fatal(err)
	}
	conv := filepath.Join(t.TempDir(), "m.ebnn")
	if _, err := convert.Convert(convert.Options{Checkpoint: filepath.Join(dir, "state_dict.safetensors"), Config: cfgPath,
		Arch: filepath.Join(dir, "model.txt"), InputShape: []int{12}, GlobalInducing: args, Out: conv}); err != nil {
		t.Fatal(err)
	}
	cm, err := runtime.Load(conv)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	klSum := cm.GlobalKL()
	for _, li := range cm.Layers() {
		klSum += li.KL
		w, _, _, err := cm.MeanWeight(li.Name)
		if err != nil {
			t.Fatal(err)
		}
		want := get(li.Name + ".weight_mean")
		for i := range want {
			if d := math.Abs(float64(w[i]) - want[i]); !(d <= 1e-5*(1+math.Abs(want[i]))) {
				t.Fatalf("converted: layer %s: mean weight[%d] %.7g, bayesianize %.7g", li.Name, i, w[i], want[i])
			}
		}
	}
	wantKL := 0.0
	for _, name := range []string{"0", "2", "4", runtime.GlobalUName} {
		wantKL += get(name + ".kl")[0]
	}
	if !(math.Abs(klSum-wantKL) <= 1e-6*wantKL) {
		t.Errorf("converted: KL %.10g, bayesianize %.10g", klSum, wantKL)
	}
	xs64 := get("inputs")
	xs := make([]float32, len(xs64))
	for i, v := range xs64 {
		xs[i] = float32(v)
	}
	bMean, bVar := get("outputs_mean"), get("outputs_var")
	bS, err := strconv.Atoi(ref.Metadata["samples"])
	if err != nil {
		t.Fatal(err)
	}
	const S = 16384
	for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
		t.Run(fmt.Sprint(st), func(t *testing.T) {
			out := predictN(t, m, runtime.Options{Samples: S, Seed: 77, Strategy: st, MaxBatch: 32}, xs)
			worst := 0.0
			for i := range out {
				for o := 0; o < 5; o++ {
					k := i*5 + o
					v := bVar[k]
					gm, gv := float64(out[i].Mean[o]), float64(out[i].EpistemicVar[o])
					// Mean: SE from both sample sizes. Variance: the Gaussian SE v·√(2/S) from both,
					// times 2 for the outputs' heavier-than-Gaussian tails (tanh of Gaussians).
					zm := math.Abs(gm-bMean[k]) / math.Sqrt(v/S+v/float64(bS))
					zv := math.Abs(gv-v) / (2 * v * math.Sqrt(2.0/S+2.0/float64(bS)))
					worst = math.Max(worst, math.Max(zm, zv))
					if !(zm <= 5) || !(zv <= 5) {
						t.Errorf("input %d output %d: mean %.6g var %.6g, bayesianize %.6g %.6g (%.1f, %.1f SE)", i, o, gm, gv, bMean[k], v, zm, zv)
					}
				}
			}
			t.Logf("largest deviation %.2f SE over %d means and variances", worst, 2*len(bMean))
		})
	}
}

func predictN(t *testing.T, m *runtime.Model, opts runtime.Options, xs []float32) []runtime.Prediction {
	t.Helper()
	p, err := m.NewPredictor(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	out := make([]runtime.Prediction, len(xs)/m.InputSize())
	if err := p.PredictBatch(xs, out); err != nil {
		t.Fatal(err)
	}
	return out
}
