package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// bayesianize's full-covariance Gaussian ("fcg"): θ = μ + L ε over (weight row-major, bias),
// L = diag(softplus(_scale_diag)) + tril(_scale_tril, −1).

const fcgK, fcgOut = 3, 2

// fcgTensors returns random raw tensors of a fcgK → fcgOut layer with bias "fc".
func fcgTensors(seed uint64) runtime.Tensors {
	r := rand.New(rand.NewPCG(seed, 77))
	D := fcgOut * (fcgK + 1)
	return runtime.Tensors{
		"fc.mean":        tensor(randn(r, D, 1), D),
		"fc._scale_diag": tensor(shift(randn(r, D, 0.5), -1), D),
		// The diagonal and upper triangle are ignored (bayesianize's tril(·, −1)): fill them too.
		"fc._scale_tril": tensor(randn(r, D*D, 0.4), D, D),
	}
}

// fcgRef computes θ's mean and covariance from the raw tensors in float64: L Lᵀ entry by entry.
func fcgRef(ts runtime.Tensors) (mean []float64, cov mat) {
	D := len(ts["fc.mean"].Data)
	L := newMat(D, D)
	for r := 0; r < D; r++ {
		L.set(r, r, softplus64(float64(ts["fc._scale_diag"].Data[r])))
		for c := 0; c < r; c++ {
			L.set(r, c, float64(ts["fc._scale_tril"].Data[r*D+c]))
		}
	}
	return to64s(ts["fc.mean"].Data), mul(L, L.T())
}

// TestFCGMoments: the sample mean and covariance of θ drawn by the Predictor (Weight strategy)
// match μ and L Lᵀ within checkMoments' 5 standard errors, for three tensor sets and seeds; so
// does Model.Posterior, exactly.
func TestFCGMoments(t *testing.T) {
	n := sampleCount(60_000)
	for _, seed := range []uint64{1, 2, 3} {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			ts := fcgTensors(seed)
			m := newModel(t, singleLayerSpec(fcgK, fcgOut, fcgPost()), ts)
			mean, cov := fcgRef(ts)
			got := sampleMoments(thetaSamples(t, m, n, fcgK, fcgOut, seed+10), len(mean))
			checkMoments(t, "θ", got, mean, cov)
			post, err := m.Posterior(100)
			if err != nil {
				t.Fatal(err)
			}
			for i := range post.Cov {
				if !(math.Abs(post.Cov[i]-cov.v[i]) <= 1e-6*(1+math.Abs(cov.v[i]))) {
					t.Fatalf("Posterior().Cov[%d] = %g, want %g", i, post.Cov[i], cov.v[i])
				}
			}
			for i := range mean {
				if post.Mean[i] != mean[i] {
					t.Fatalf("Posterior().Mean[%d] = %g, want %g", i, post.Mean[i], mean[i])
				}
			}
		})
	}
}

// TestFCGMeanAndLocal: Options.Mean predicts with W = μ; the Local strategy (impossible for a
// full covariance) samples weights, identically to Weight.
func TestFCGMeanAndLocal(t *testing.T) {
	ts := fcgTensors(4)
	m := newModel(t, singleLayerSpec(fcgK, fcgOut, fcgPost()), ts)
	x := []float32{0.5, -1, 2}
	p, err := m.NewPredictor(runtime.Options{Samples: 1, Mean: true})
	if err != nil {
		t.Fatal(err)
	}
	var got runtime.Prediction
	if err := p.Predict(x, &got); err != nil {
		t.Fatal(err)
	}
	mu := ts["fc.mean"].Data
	for o := 0; o < fcgOut; o++ {
		want := float64(mu[fcgOut*fcgK+o])
		for j, v := range x {
			want += float64(mu[o*fcgK+j]) * float64(v)
		}
		if !(math.Abs(float64(got.Mean[o])-want) <= 1e-5) {
			t.Errorf("mean output %d = %g, want %g", o, got.Mean[o], want)
		}
	}
	opts := runtime.Options{Samples: 5, Seed: 3, MaxBatch: 1, KeepSamples: true}
	opts.Strategy = runtime.Weight
	w := predictAll(t, m, opts, x)
	opts.Strategy = runtime.Local
	l := predictAll(t, m, opts, x)
	if err := samePrediction(&w[0], &l[0]); err != nil {
		t.Errorf("Local differs from Weight: %v", err)
	}
}

// TestFCGKL: the layer's KL is ½(tr(Σ_p⁻¹Σ) + μᵀΣ_p⁻¹μ − D + log det Σ_p − log det Σ), Σ_p =
// diag(prior_sd² for weights, prior_bias_sd² for biases), with log det Σ from Σ's own Cholesky
// factorisation (not L's diagonal).
func TestFCGKL(t *testing.T) {
	for _, bsd := range []float64{0, 1.3} {
		ts := fcgTensors(5)
		post := &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.7, PriorBiasSD: bsd}
		m := newModel(t, singleLayerSpec(fcgK, fcgOut, post), ts)
		mean, cov := fcgRef(ts)
		D := len(mean)
		c := cholRel(cov, 0)
		want := -float64(D)
		for r := 0; r < D; r++ {
			s := 0.7
			if r >= fcgOut*fcgK && bsd > 0 {
				s = bsd
			}
			want += (cov.at(r, r)+mean[r]*mean[r])/(s*s) + 2*math.Log(s) - 2*math.Log(c.at(r, r))
		}
		want /= 2
		ls := m.Layers()
		if len(ls) != 1 || ls[0].Kind != runtime.KindFCG || ls[0].Rows != fcgOut || ls[0].Cols != fcgK+1 {
			t.Fatalf("Layers() = %+v", ls)
		}
		if !(math.Abs(ls[0].KL-want) <= 1e-6*math.Abs(want)) {
			t.Errorf("prior_bias_sd %g: KL = %.9g, want %.9g", bsd, ls[0].KL, want)
		}
	}
}

// TestFCGLoadErrors: bad tensors and layers too large for a full covariance are refused with
// errors naming the layer and the tensor or the size.
func TestFCGLoadErrors(t *testing.T) {
	D := fcgOut * (fcgK + 1)
	cases := []struct {
		name  string
		edit  func(ts runtime.Tensors, s *runtime.Spec)
		wants []string
	}{
		{"missing tril", func(ts runtime.Tensors, _ *runtime.Spec) { delete(ts, "fc._scale_tril") }, []string{`"fc"`, "fc._scale_tril"}},
		{"tril shape", func(ts runtime.Tensors, _ *runtime.Spec) {
			ts["fc._scale_tril"] = tensor(make([]float32, D*(D+1)/2), D*(D+1)/2)
		}, []string{"fc._scale_tril", "shape"}},
		{"mean shape", func(ts runtime.Tensors, _ *runtime.Spec) { ts["fc.mean"] = tensor(make([]float32, D-1), D-1) }, []string{"fc.mean", "shape"}},
		{"NaN mean", func(ts runtime.Tensors, _ *runtime.Spec) { ts["fc.mean"].Data[3] = float32(math.NaN()) }, []string{`"fc"`, "fc.mean", "element 3", "NaN"}},
		{"Inf in the used triangle", func(ts runtime.Tensors, _ *runtime.Spec) {
			ts["fc._scale_tril"].Data[2*D+1] = float32(math.Inf(1))
		}, []string{"fc._scale_tril", fmt.Sprint("element ", 2*D+1)}},
		{"NaN diagonal", func(ts runtime.Tensors, _ *runtime.Spec) { ts["fc._scale_diag"].Data[0] = float32(math.NaN()) }, []string{"fc._scale_diag", "element 0"}},
		{"zero diagonal", func(ts runtime.Tensors, _ *runtime.Spec) { ts["fc._scale_diag"].Data[5] = -200 }, []string{"fc._scale_diag", "diagonal entry 5", "not a positive"}},
		{"too large", func(ts runtime.Tensors, s *runtime.Spec) {
			s.InputShape = []int{784}
			s.Layers[0].In, s.Layers[0].Out = 784, 256
		}, []string{`"fc"`, "200960", "MaxFCGDim = 4096"}},
		{"prior sd", func(ts runtime.Tensors, s *runtime.Spec) { s.Layers[0].Posterior.PriorSD = 0 }, []string{`"fc"`, "prior_sd"}},
		{"prior bias sd", func(ts runtime.Tensors, s *runtime.Spec) { s.Layers[0].Posterior.PriorBiasSD = math.Inf(1) }, []string{`"fc"`, "prior_bias_sd"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ts := fcgTensors(6)
			spec := singleLayerSpec(fcgK, fcgOut, fcgPost())
			c.edit(ts, spec)
			_, err := runtime.New(spec, ts)
			testutil.ErrorContains(t, err, c.wants...)
		})
	}
	// The ignored entries (diagonal and upper triangle of _scale_tril) may hold anything finite.
	ts := fcgTensors(6)
	ts["fc._scale_tril"].Data[0], ts["fc._scale_tril"].Data[1] = -1e30, 1e30
	if _, err := runtime.New(singleLayerSpec(fcgK, fcgOut, fcgPost()), ts); err != nil {
		t.Errorf("ignored entries: %v", err)
	}
}
