package runtime_test

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// posteriorMat turns Posterior.Cov into the test helpers' mat.
func posteriorMat(p *runtime.Posterior) mat {
	m := newMat(p.Dim, p.Dim)
	copy(m.v, p.Cov)
	return m
}

// thetaSamples recovers θ (weight row-major, then bias) per sample of a single k → dOut linear
// layer with bias, predicted on unitInputs(k) with the Weight strategy.
func thetaSamples(t *testing.T, m *runtime.Model, n, k, dOut int, seed uint64) []float64 {
	t.Helper()
	out := predictAll(t, m, runtime.Options{Samples: n, Seed: seed, Strategy: runtime.Weight,
		MaxBatch: k + 1, KeepSamples: true}, unitInputs(k))
	w := weightSamples(out, dOut, k)
	n = len(w) / (dOut * (k + 1)) // a deterministic model returns one sample
	dim := dOut*k + dOut
	theta := make([]float64, n*dim)
	for s := 0; s < n; s++ {
		for o := 0; o < dOut; o++ {
			for j := 0; j < k; j++ {
				theta[s*dim+o*k+j] = w[(s*dOut+o)*(k+1)+j]
			}
			theta[s*dim+dOut*k+o] = w[(s*dOut+o)*(k+1)+k]
		}
	}
	return theta
}

var posteriorKinds = []struct {
	name string
	post func() *runtime.PosteriorSpec
}{
	{"deterministic", func() *runtime.PosteriorSpec { return nil }},
	{"ffg", ffgPost},
	{"fcg", fcgPost},
	{"fa", faPosterior},
	{"inducing-diagonal-whitened", func() *runtime.PosteriorSpec { return inducingPost(2, 3, runtime.QDiagonal, true, 0) }},
	{"inducing-diagonal", func() *runtime.PosteriorSpec { return inducingPost(3, 2, runtime.QDiagonal, false, 0) }},
	{"inducing-full", func() *runtime.PosteriorSpec { return inducingPost(2, 2, runtime.QFull, false, 0) }},
	{"inducing-full-whitened", func() *runtime.PosteriorSpec { return inducingPost(2, 3, runtime.QFull, true, 0) }},
	{"inducing-matrix-whitened", func() *runtime.PosteriorSpec { return inducingPost(3, 2, runtime.QMatrix, true, 0) }},
	{"inducing-matrix", func() *runtime.PosteriorSpec { return inducingPost(2, 3, runtime.QMatrix, false, 0) }},
	{"inducing-ensemble", func() *runtime.PosteriorSpec { return inducingPost(2, 3, runtime.QEnsemble, false, 3) }},
	{"inducing-ensemble-whitened", func() *runtime.PosteriorSpec { return inducingPost(3, 2, runtime.QEnsemble, true, 4) }},
}

func singleLayerSpec(k, dOut int, post *runtime.PosteriorSpec) *runtime.Spec {
	s := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true, Posterior: post}}}
	if post != nil && post.Kind == runtime.KindFA {
		s.FA = &runtime.FASpec{Rank: 2}
	}
	return s
}

// TestPosteriorSingleLayer compares Posterior's mean and covariance with the sample moments of
// the weights the Predictor draws, for every posterior kind.
func TestPosteriorSingleLayer(t *testing.T) {
	const k, dOut = 3, 2
	dim := dOut*k + dOut
	n := sampleCount(60_000)
	for i, pk := range posteriorKinds {
		t.Run(pk.name, func(t *testing.T) {
			m := buildModel(t, singleLayerSpec(k, dOut, pk.post()), uint64(40+i))
			post, err := m.Posterior(1000)
			if err != nil {
				t.Fatal(err)
			}
			if post.Dim != dim || len(post.Mean) != dim || len(post.Cov) != dim*dim || !post.Exact {
				t.Fatalf("dim %d, %d means, %d covariances, exact %v; want %d", post.Dim, len(post.Mean), len(post.Cov), post.Exact, dim)
			}
			if len(post.Layers) != 1 || post.Layers[0].Name != "fc" || post.Layers[0].Size != dim || !post.Layers[0].Exact {
				t.Errorf("layers %+v", post.Layers)
			}
			if want := pk.name; !strings.HasPrefix(want, post.Layers[0].Kind) {
				t.Errorf("kind %q for %s", post.Layers[0].Kind, pk.name)
			}
			samples := n
			if pk.name == "deterministic" {
				samples = 12
			}
			got := sampleMoments(thetaSamples(t, m, samples, k, dOut, 7), dim)
			checkMoments(t, "θ", got, post.Mean, posteriorMat(post))
		})
	}
}

// TestPosteriorCrossLayer checks the cross-layer blocks (shared FA factors, shared ensemble member
// index) through a residual block whose body and shortcut are two linear layers of the same shape:
// the network computes (W_A + W_B) x̃, so the recovered "weights" are θ_A + θ_B with mean
// m_A + m_B and covariance Σ_AA + Σ_BB + Σ_AB + Σ_BA.
func TestPosteriorCrossLayer(t *testing.T) {
	const k, dOut = 3, 2
	size := dOut*k + dOut
	n := sampleCount(60_000)
	for i, pk := range []struct {
		name string
		post func() *runtime.PosteriorSpec
	}{
		{"fa", faPosterior},
		{"ensemble", func() *runtime.PosteriorSpec { return inducingPost(2, 2, runtime.QEnsemble, false, 4) }},
	} {
		t.Run(pk.name, func(t *testing.T) {
			spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k},
				Layers: []runtime.LayerSpec{{Name: "res", Op: runtime.OpResidual,
					Body:     []runtime.LayerSpec{{Name: "a", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true, Posterior: pk.post()}},
					Shortcut: []runtime.LayerSpec{{Name: "b", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true, Posterior: pk.post()}},
				}}}
			if pk.name == "fa" {
				spec.FA = &runtime.FASpec{Rank: 2}
			}
			m := buildModel(t, spec, uint64(70+i))
			post, err := m.Posterior(2 * size)
			if err != nil {
				t.Fatal(err)
			}
			if post.Dim != 2*size || post.Layers[0].Name != "a" || post.Layers[1].Name != "b" || post.Layers[1].Offset != size {
				t.Fatalf("dim %d, layers %+v", post.Dim, post.Layers)
			}
			cross := 0.0
			mean := make([]float64, size)
			cov := newMat(size, size)
			for a := 0; a < size; a++ {
				mean[a] = post.Mean[a] + post.Mean[size+a]
				for b := 0; b < size; b++ {
					d := post.Dim
					cov.set(a, b, post.Cov[a*d+b]+post.Cov[(size+a)*d+size+b]+post.Cov[a*d+size+b]+post.Cov[(size+a)*d+b])
					cross = math.Max(cross, math.Abs(post.Cov[a*d+size+b]))
				}
			}
			if cross == 0 {
				t.Fatal("no cross-layer covariance; the test would not check it")
			}
			got := sampleMoments(thetaSamples(t, m, n, k, dOut, 9), size)
			checkMoments(t, "θ_A + θ_B", got, mean, cov)
		})
	}
}

// TestPosteriorLayout checks the slices of a CNN with conv, residual and linear layers against
// sizes computed from the spec, and the deterministic layers' means against their tensors.
func TestPosteriorLayout(t *testing.T) {
	spec := cnnSpec()
	ts := randomTensors(spec, 5)
	m := newModel(t, spec, ts)
	post, err := m.Posterior(5000)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		name string
		size int
	}
	wants := []want{{"c1", 4*2*9 + 4}, {"r1a", 4*4*9 + 4}, {"r1b", 4*4*9 + 4}, {"r2a", 6*4*9 + 6}, {"r2s", 6*4 + 6}, {"fc", 5*24 + 5}}
	off := 0
	if len(post.Layers) != len(wants) {
		t.Fatalf("%d layers, want %d", len(post.Layers), len(wants))
	}
	for i, w := range wants {
		l := post.Layers[i]
		if l.Name != w.name || l.Size != w.size || l.Offset != off {
			t.Errorf("layer %d: %+v, want %s at %d size %d", i, l, w.name, off, w.size)
		}
		off += w.size
	}
	if post.Dim != off {
		t.Errorf("dim %d, want %d", post.Dim, off)
	}
	// r1b is deterministic: mean = its tensors, zero covariance in its rows.
	l := post.Layers[2]
	wt, bt := ts["r1b.weight"].Data, ts["r1b.bias"].Data
	for i, v := range append(append([]float32(nil), wt...), bt...) {
		if post.Mean[l.Offset+i] != float64(v) {
			t.Fatalf("r1b mean[%d] = %v, tensor %v", i, post.Mean[l.Offset+i], v)
		}
		for j := 0; j < post.Dim; j++ {
			if post.Cov[(l.Offset+i)*post.Dim+j] != 0 {
				t.Fatalf("deterministic parameter %d has covariance with %d", i, j)
			}
		}
	}
	// Symmetric, non-negative diagonal.
	for a := 0; a < post.Dim; a++ {
		if !(post.Cov[a*post.Dim+a] >= 0) {
			t.Fatalf("negative variance at %d", a)
		}
		for b := 0; b < a; b++ {
			if d := math.Abs(post.Cov[a*post.Dim+b] - post.Cov[b*post.Dim+a]); !(d <= 1e-12*(1+math.Abs(post.Cov[a*post.Dim+b]))) {
				t.Fatalf("covariance not symmetric at %d,%d", a, b)
			}
		}
	}
}

func TestPosteriorRefusesLargeModels(t *testing.T) {
	m := buildModel(t, mlpSpec(), 3)
	dim := 16*9 + 12*17 + 10*12
	if _, err := m.Posterior(dim); err != nil {
		t.Fatalf("dimension %d at the limit refused: %v", dim, err)
	}
	for _, max := range []int{dim - 1, 0, -5} {
		_, err := m.Posterior(max)
		if err == nil {
			t.Fatalf("max %d accepted", max)
		}
		if max > 0 && !strings.Contains(err.Error(), fmt.Sprint(dim)) {
			t.Errorf("error %q does not name the dimension %d", err, dim)
		}
	}
}

// TestPosteriorRefusals: a model past the dense-covariance limit is refused with its whole
// parameter count (the count had stopped at the first layer past 16384: 20200 for 41310), and a
// model sampling MC dropout is refused (its layers had been reported deterministic, "exact").
func TestPosteriorRefusals(t *testing.T) {
	big := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{100},
		Layers: []runtime.LayerSpec{
			{Name: "a", Op: runtime.OpLinear, In: 100, Out: 200, Bias: true},
			{Name: "b", Op: runtime.OpLinear, In: 200, Out: 100, Bias: true},
			{Name: "c", Op: runtime.OpLinear, In: 100, Out: 10, Bias: true},
		}}
	if _, err := buildModel(t, big, 1).Posterior(1 << 30); err == nil || !strings.Contains(err.Error(), "41310 parameters") {
		t.Errorf("large model: %v, want its 41310 parameters named", err)
	}
	mc := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{2},
		Layers: []runtime.LayerSpec{
			{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 3, Bias: true},
			{Name: "drop", Op: runtime.OpDropout, P: 0.3, MC: true},
			{Name: "out", Op: runtime.OpLinear, In: 3, Out: 1, Bias: true},
		}}
	if _, err := buildModel(t, mc, 1).Posterior(100); err == nil || !strings.Contains(err.Error(), "MC dropout (p = 0.3)") {
		t.Errorf("MC dropout: %v, want a refusal", err)
	}
}

func ExampleModel_Posterior() {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{1},
		FA:     &runtime.FASpec{Dim: 2, Rank: 1},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 1, Out: 1, Bias: true, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFA}}}}
	m, err := runtime.New(spec, runtime.Tensors{
		"fa.mean":    {Shape: []int{2}, Data: []float32{0.5, -1}},
		"fa.factors": {Shape: []int{2, 1}, Data: []float32{1, 2}},
		"fa.psi":     {Shape: []int{2}, Data: []float32{0.25, 0.5}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := m.Posterior(100)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Dim, p.Mean, p.Cov, p.Exact)
	// Output: 2 [0.5 -1] [1.25 2 2 4.5] true
}
