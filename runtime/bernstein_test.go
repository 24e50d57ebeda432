package runtime_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// randomFlowParams returns raw parameters of a degree-m flow with a varied shape: random scales
// and shifts, and increments δ_j spread over several orders of magnitude (so some coefficient
// steps are tiny and the density is multimodal or skewed).
func randomFlowParams(r *rand.Rand, m int) []float32 {
	p := make([]float32, m+5)
	p[0] = float32(r.NormFloat64())     // a₁′
	p[1] = float32(r.NormFloat64())     // b₁
	p[2] = float32(r.NormFloat64() - 1) // ϑ₀
	for j := 0; j < m; j++ {
		p[3+j] = float32(2 * r.NormFloat64()) // δ_j
	}
	p[m+3] = float32(r.NormFloat64() * 0.5) // a₂′
	p[m+4] = float32(r.NormFloat64())       // b₂
	return p
}

// TestBernsteinModelBudget: the quantile tables and the work of tabulating them are bounded for
// the model as a whole — two layers that each fit are refused together, naming the second — and
// the budget is what the layers derive: 6 weights × 257 points × 4 bytes, × (M + 1) = 4 terms.
func TestBernsteinModelBudget(t *testing.T) {
	const m = 3
	r := rand.New(rand.NewPCG(3, 4))
	flows := func(n int) []float32 {
		var v []float32
		for range n {
			v = append(v, randomFlowParams(r, m)...)
		}
		return v
	}
	ts := runtime.Tensors{}
	var layers []runtime.LayerSpec
	for _, name := range []string{"a", "b"} {
		ts[name+".bf_weight"] = tensor(flows(4), 2, 2, m+5)
		ts[name+".bf_bias"] = tensor(flows(2), 2, m+5)
		layers = append(layers, runtime.LayerSpec{Name: name, Op: runtime.OpLinear, In: 2, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m}})
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{2}, Layers: layers}
	const one = 6 * 257 * 4 // each layer's table bytes, and its work (6·257 weights·points × 4)
	for _, tc := range []struct {
		name        string
		bytes, work int64
		want        string // a regular expression
	}{
		{"both fit", 2 * one, 2 * one, ""},
		{"tables", 2*one - 1, 2 * one, `\(bernstein\): the quantile table .*the model's tables, MaxBernsteinTableBytes or the machine's memory`},
		{"work", 2 * one, 2*one - 1, `flow-term evaluations; the model may take 12335 in all \(MaxBernsteinWork\)`},
	} {
		_, err := runtime.NewWithBernsteinBudget(spec, ts, tc.bytes, tc.work)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !regexp.MustCompile(tc.want).MatchString(err.Error()) || !strings.Contains(err.Error(), `layer "b"`) ||
			!strings.Contains(err.Error(), "earlier layers")):
			t.Errorf("%s: %v, want an error naming layer b, %q and the earlier layers' share", tc.name, err, tc.want)
		}
	}
}

// bernsteinModel builds a Linear(in → out, bias) model of kind bernstein with random flows.
func bernsteinModel(t testing.TB, seed uint64, in, out, m, g int) (*runtime.Model, runtime.Tensors) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	np := m + 5
	w := make([]float32, 0, out*in*np)
	for i := 0; i < out*in; i++ {
		w = append(w, randomFlowParams(r, m)...)
	}
	b := make([]float32, 0, out*np)
	for i := 0; i < out; i++ {
		b = append(b, randomFlowParams(r, m)...)
	}
	ts := runtime.Tensors{"fc.bf_weight": tensor(w, out, in, np), "fc.bf_bias": tensor(b, out, np)}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{in},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: in, Out: out, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, TableSize: g}}}}
	mod := newModel(t, spec, ts)
	return mod, ts
}

// flowOf returns the exact flow (train/bfvi) of weight i of the matrix (bias last column).
func flowOf(t testing.TB, ts runtime.Tensors, in, m, i int) *bfvi.Flow {
	t.Helper()
	np := m + 5
	dIn := in + 1
	o, j := i/dIn, i%dIn
	var raw []float32
	if j < in {
		raw = ts["fc.bf_weight"].Data[(o*in+j)*np : (o*in+j+1)*np]
	} else {
		raw = ts["fc.bf_bias"].Data[o*np : (o+1)*np]
	}
	p := make([]float64, np)
	for k, v := range raw {
		p[k] = float64(v)
	}
	f, err := bfvi.NewFlow(m, p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func normalCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// exactCDF is the flow's CDF F(θ) = Φ(z(θ)) via bfvi's Inverse (0 and 1 outside the support).
func exactCDF(f *bfvi.Flow, x float64) float64 {
	lo, hi := f.Support()
	if x <= lo {
		return 0
	}
	if x >= hi {
		return 1
	}
	z, err := f.Inverse(x)
	if err != nil {
		if x-lo < hi-x {
			return 0
		}
		return 1
	}
	return normalCDF(z)
}

// ksUpper returns an upper bound on sup_x |F_n(x) − F(x)| for the empirical CDF F_n of xs (sorted
// in place) and the flow's exact CDF F. F is bracketed rigorously with bfvi's Forward on a grid
// of k equally spaced probabilities: for θ(z_j) ≤ x < θ(z_{j+1}), z_j = Φ⁻¹(j/k), monotonicity
// gives j/k ≤ F(x) ≤ (j+1)/k, so the bound exceeds the true distance by at most 1/k.
// (Cheaper than calling Inverse for every sample; TestBernsteinKolmogorov spot-checks the two.)
func ksUpper(xs []float64, f *bfvi.Flow, k int) (float64, error) {
	slices.Sort(xs)
	lo, hi := f.Support()
	theta := func(j int) float64 { // θ(Φ⁻¹(j/k))
		switch j {
		case 0:
			return lo
		case k:
			return hi
		}
		return f.Forward(-math.Sqrt2 * math.Erfcinv(2*float64(j)/float64(k)))
	}
	n := float64(len(xs))
	d := 0.0
	j, tj1 := 0, theta(1) // invariant: x < θ(z_{j+1}) once advanced
	for i, x := range xs {
		for j < k-1 && x >= tj1 {
			j++
			tj1 = theta(j + 1)
		}
		fLo, fHi := float64(j)/float64(k), float64(j+1)/float64(k)
		if x <= lo {
			fLo, fHi = 0, 0
		} else if x >= hi {
			fLo, fHi = 1, 1
		}
		if i%2000 == 0 { // spot check: Φ(Inverse(x)) lies in the bracket
			if fx := exactCDF(f, x); !(fx >= fLo-1e-9) || !(fx <= fHi+1e-9) {
				return 0, fmt.Errorf("Φ(Inverse(%g)) = %g is outside the bracket [%g, %g]", x, fx, fLo, fHi)
			}
		}
		d = math.Max(d, math.Max(float64(i+1)/n-fLo, fHi-float64(i)/n))
	}
	return d, nil
}

// TestBernsteinTableMatchesFlow: the runtime's device-side map (float64 at load, stored in
// float32) agrees with train/bfvi's Forward at every grid point z_i = Φ⁻¹(i/(G−1)), and the ends
// of the table are the ends of the support.
func TestBernsteinTableMatchesFlow(t *testing.T) {
	for _, m := range []int{1, 10, 50} {
		const in, out, g = 3, 2, 65
		mod, ts := bernsteinModel(t, uint64(m), in, out, m, g)
		tab, gg := runtime.BernsteinTable(mod, "fc")
		if gg != g {
			t.Fatalf("M=%d: table size %d, want %d", m, gg, g)
		}
		for w := 0; w < out*(in+1); w++ {
			f := flowOf(t, ts, in, m, w)
			lo, hi := f.Support()
			for i := 0; i < g; i++ {
				var want float64
				switch i {
				case 0:
					want = lo
				case g - 1:
					want = hi
				default:
					p := float64(i) / float64(g-1)
					want = f.Forward(-math.Sqrt2 * math.Erfcinv(2*p))
				}
				got := float64(tab[w*g+i])
				if !(math.Abs(got-want) <= 1e-6*math.Max(1, math.Abs(want))+1e-6*(hi-lo)) {
					t.Fatalf("M=%d weight %d point %d: table %g, bfvi Forward %g", m, w, i, got, want)
				}
			}
		}
	}
}

// TestBernsteinKolmogorov checks the stated bound: the Kolmogorov distance between the runtime's
// samples of a weight and its exact flow is at most 1/(G−1). With n samples the empirical
// distance exceeds the true one by more than √(ln(2/α)/(2n)) with probability at most α
// (Dvoretzky–Kiefer–Wolfowitz, Massart's constant), so each check
// D_n ≤ 1/(G−1) + √(ln(2/α)/(2n)) fails by chance with probability ≤ α = 10⁻⁴.
// The exact CDF comes from bfvi's Forward bracketed on a grid of n probabilities (ksUpper, which
// overestimates the distance by at most 1/n), spot-checked against Φ(bfvi Inverse(θ)).
// A coarse table (G = 5) must show a distance well above the DKW noise, so the check has power.
func TestBernsteinKolmogorov(t *testing.T) {
	skipUnderRace(t)
	n := 100000
	if testing.Short() {
		n = 40000 // the emulated ARM targets: DKW noise 0.011, still a third of the G = 5 distance
	}
	const alpha = 1e-4
	dkw := math.Sqrt(math.Log(2/alpha) / (2 * float64(n)))
	for _, tc := range []struct{ m, g int }{{10, 0}, {50, 0}, {10, 5}, {50, 33}} {
		const in, out = 1, 2 // 4 weights per model (2 weights, 2 biases)
		mod, ts := bernsteinModel(t, uint64(100+tc.m+tc.g), in, out, tc.m, tc.g)
		sample := runtime.BernsteinSampler(mod, "fc")
		nw := out * (in + 1)
		xs := make([][]float64, nw)
		w := make([]float32, nw)
		for s := 0; s < n; s++ {
			sample(uint64(42+tc.m+tc.g), s, w)
			for i, v := range w {
				xs[i] = append(xs[i], float64(v))
			}
		}
		bound := runtime.BernsteinKSBound(tc.g)
		for i := 0; i < nw; i++ {
			f := flowOf(t, ts, in, tc.m, i)
			d, err := ksUpper(xs[i], f, n)
			if err != nil {
				t.Fatalf("M=%d G=%d weight %d: %v", tc.m, tc.g, i, err)
			}
			t.Logf("M=%d G=%d weight %d: KS distance %.5f (bound %.5f + DKW %.5f)", tc.m, tc.g, i, d, bound, dkw)
			if !(d <= bound+dkw) {
				t.Errorf("M=%d G=%d weight %d: KS distance %.5f exceeds the bound %.5f + %.5f", tc.m, tc.g, i, d, bound, dkw)
			}
			if tc.g == 5 && i == 0 && !(d >= 3*dkw) {
				t.Errorf("M=%d G=%d: KS distance %.5f of a 5-point table is within the noise %.5f: the test has no power", tc.m, tc.g, d, dkw)
			}
		}
	}
}

// TestBernsteinPredict: the predictor's Monte-Carlo mean converges to its mean prediction (the
// table's exact mean), which is close to the exact flows' means E θ = ∫ θ(z) φ(z) dz.
func TestBernsteinPredict(t *testing.T) {
	const in, out, m = 3, 2, 10
	mod, ts := bernsteinModel(t, 5, in, out, m, 0)
	x := []float32{0.5, -1, 2}
	// Exact predictive mean from the flows (Gauss–Hermite-free: a fine midpoint rule in p).
	want := make([]float64, out)
	wmean := make([]float64, out*(in+1))
	for i := range wmean {
		f := flowOf(t, ts, in, m, i)
		const k = 20000
		s := 0.0
		for j := 0; j < k; j++ {
			s += f.Forward(-math.Sqrt2 * math.Erfcinv(2*(float64(j)+0.5)/k))
		}
		wmean[i] = s / k
	}
	for o := 0; o < out; o++ {
		s := wmean[o*(in+1)+in]
		for j := 0; j < in; j++ {
			s += wmean[o*(in+1)+j] * float64(x[j])
		}
		want[o] = s
	}
	pm, err := mod.NewPredictor(runtime.Options{Mean: true})
	if err != nil {
		t.Fatal(err)
	}
	var mean, mc runtime.Prediction
	if err := pm.Predict(x, &mean); err != nil {
		t.Fatal(err)
	}
	const K = 4000
	p, err := mod.NewPredictor(runtime.Options{Samples: K, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Predict(x, &mc); err != nil {
		t.Fatal(err)
	}
	for o := 0; o < out; o++ {
		// table mean vs exact mean: the piecewise-linear quantile function's mean differs by
		// O(1/G²) in the body plus the tail cells.
		if d := math.Abs(float64(mean.Mean[o]) - want[o]); !(d <= 0.01*math.Max(1, math.Abs(want[o]))) {
			t.Errorf("output %d: mean prediction %g, exact %g", o, mean.Mean[o], want[o])
		}
		se := math.Sqrt(float64(mc.EpistemicVar[o]) / K)
		if d := math.Abs(float64(mc.Mean[o]) - want[o]); !(d <= 5*se+1e-3) {
			t.Errorf("output %d: Monte-Carlo mean %g, exact %g (5 s.e. = %g)", o, mc.Mean[o], want[o], 5*se)
		}
	}
	li := mod.Layers()
	if li[0].Kind != runtime.KindBernstein {
		t.Errorf("Layers: kind %q", li[0].Kind)
	}
	post, err := mod.Posterior(100)
	if err != nil {
		t.Fatal(err)
	}
	if post.Layers[0].Kind != runtime.KindBernstein || post.Dim != out*(in+1) {
		t.Errorf("Posterior: %+v", post.Layers)
	}
}

// TestBernsteinLocalStrategy: a Bernstein layer cannot sample locally; every strategy samples
// weights, so Local and Weight give identical predictions.
func TestBernsteinLocalStrategy(t *testing.T) {
	mod, _ := bernsteinModel(t, 9, 3, 2, 4, 0)
	x := []float32{1, 2, 3}
	var res [2][]float32
	for i, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
		p, err := mod.NewPredictor(runtime.Options{Samples: 16, Seed: 1, Strategy: st})
		if err != nil {
			t.Fatal(err)
		}
		var r runtime.Prediction
		if err := p.Predict(x, &r); err != nil {
			t.Fatal(err)
		}
		res[i] = r.Mean
	}
	if !slices.Equal(res[0], res[1]) {
		t.Errorf("weight %v vs local %v", res[0], res[1])
	}
}

// TestBernsteinHostile: non-finite and overflowing raw parameters, bad degrees and table sizes
// and oversized tables are refused with errors naming the layer and the tensor.
func TestBernsteinHostile(t *testing.T) {
	const in, out, m = 2, 2, 3
	np := m + 5
	mk := func(mut func(w, b []float32)) (runtime.Tensors, *runtime.Spec) {
		r := rand.New(rand.NewPCG(1, 2))
		w, b := make([]float32, 0, out*in*np), make([]float32, 0, out*np)
		for i := 0; i < out*in; i++ {
			w = append(w, randomFlowParams(r, m)...)
		}
		for i := 0; i < out; i++ {
			b = append(b, randomFlowParams(r, m)...)
		}
		if mut != nil {
			mut(w, b)
		}
		return runtime.Tensors{"fc.bf_weight": tensor(w, out, in, np), "fc.bf_bias": tensor(b, out, np)},
			&runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{in},
				Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: in, Out: out, Bias: true,
					Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m}}}}
	}
	cases := []struct {
		name string
		mut  func(w, b []float32)
		want string
	}{
		{"nan", func(w, b []float32) { w[np+4] = float32(math.NaN()) }, `tensor "fc.bf_weight": element 12`},
		{"inf bias", func(w, b []float32) { b[2] = float32(math.Inf(1)) }, `tensor "fc.bf_bias": element 2`},
		{"scale underflow", func(w, b []float32) { w[0] = -1e30 }, "underflow"},
		{"overflow", func(w, b []float32) { w[3], w[m+3] = 3e38, 3e38 }, "not a finite float32"},
		{"huge shift", func(w, b []float32) { b[np+2], b[np+m+3], b[np+m+4] = 3e38, 10, -3e38 }, `tensor "fc.bf_bias" entry 1`},
	}
	for _, c := range cases {
		ts, spec := mk(c.mut)
		_, err := runtime.New(spec, ts)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), `layer "fc"`) {
			t.Errorf("%s: error %v, want one naming layer \"fc\" and %q", c.name, err, c.want)
		}
	}
	// Spec-level refusals.
	for _, p := range []runtime.PosteriorSpec{{Kind: runtime.KindBernstein}, {Kind: runtime.KindBernstein, Degree: 2000},
		{Kind: runtime.KindBernstein, Degree: 3, TableSize: 1}, {Kind: runtime.KindBernstein, Degree: 3, TableSize: 1 << 20}} {
		ts, spec := mk(nil)
		spec.Layers[0].Posterior = &p
		if _, err := runtime.New(spec, ts); err == nil {
			t.Errorf("%+v: accepted", p)
		}
	}
	// A wrong tensor shape (degree mismatch).
	ts, spec := mk(nil)
	spec.Layers[0].Posterior.Degree = 4
	if _, err := runtime.New(spec, ts); err == nil || !strings.Contains(err.Error(), "fc.bf_weight") {
		t.Errorf("degree mismatch: %v", err)
	}
	// An oversized table is refused before any tensor is read.
	big := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{1 << 14},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 1 << 14, Out: 1 << 12, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: 10, TableSize: 1 << 16}}}}
	_, err := runtime.New(big, runtime.Tensors{})
	if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), `layer "fc"`) {
		t.Errorf("oversized table: %v", err)
	}
}
