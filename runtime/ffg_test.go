package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// bayesianize's mean-field Gaussian ("ffg"): W = M + S ⊙ ε, S = min(softplus(_weight_sd), max_sd).

const (
	ffgK, ffgOut = 4, 3
	ffgMaxSD     = 0.3
	ffgPriorSD   = 0.8
)

func ffgModel(t testing.TB, withPrior bool) (*runtime.Model, runtime.Tensors) {
	t.Helper()
	return ffgModelBiasSD(t, withPrior, 0)
}

// ffgModelBiasSD is ffgModel with the spec's PriorBiasSD set to biasSD.
func ffgModelBiasSD(t testing.TB, withPrior bool, biasSD float64) (*runtime.Model, runtime.Tensors) {
	t.Helper()
	r := rand.New(rand.NewPCG(11, 11))
	sd := randn(r, ffgOut*ffgK, 0.5)
	bsd := randn(r, ffgOut, 0.5)
	for i := range sd {
		sd[i] -= 1.5
	}
	for i := range bsd {
		bsd[i] -= 1.5
	}
	sd[0], bsd[1] = 2, 3 // softplus far above max_sd: clamped
	ts := runtime.Tensors{
		"fc.weight_mean": tensor(randn(r, ffgOut*ffgK, 1), ffgOut, ffgK),
		"fc._weight_sd":  tensor(sd, ffgOut, ffgK),
		"fc.bias_mean":   tensor(randn(r, ffgOut, 1), ffgOut),
		"fc._bias_sd":    tensor(bsd, ffgOut),
	}
	if withPrior {
		ts["fc.prior_weight_mean"] = tensor(randn(r, ffgOut*ffgK, 0.1), ffgOut, ffgK)
		ts["fc.prior_weight_sd"] = tensor(randn(r, ffgOut*ffgK, 0.1), ffgOut, ffgK)
		ts["fc.prior_bias_mean"] = tensor(randn(r, ffgOut, 0.1), ffgOut)
		ts["fc.prior_bias_sd"] = tensor(randn(r, ffgOut, 0.1), ffgOut)
		for _, n := range []string{"fc.prior_weight_sd", "fc.prior_bias_sd"} {
			for i, v := range ts[n].Data {
				ts[n].Data[i] = float32(math.Abs(float64(v)) + 0.5)
			}
		}
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{ffgK},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: ffgK, Out: ffgOut, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: ffgPriorSD, PriorBiasSD: biasSD, MaxSD: ptr(ffgMaxSD)}}}}
	m := newModel(t, spec, ts)
	return m, ts
}

// ffgRef returns the weight matrix's mean and standard deviation (row-major d_out × d_in, bias
// last) from the raw tensors.
func ffgRef(ts runtime.Tensors) (mean, sd []float64) {
	dIn := ffgK + 1
	mean, sd = make([]float64, ffgOut*dIn), make([]float64, ffgOut*dIn)
	s := func(raw float32) float64 { return math.Min(softplus64(float64(raw)), ffgMaxSD) }
	for o := 0; o < ffgOut; o++ {
		for j := 0; j < ffgK; j++ {
			mean[o*dIn+j] = float64(ts["fc.weight_mean"].Data[o*ffgK+j])
			sd[o*dIn+j] = s(ts["fc._weight_sd"].Data[o*ffgK+j])
		}
		mean[o*dIn+ffgK] = float64(ts["fc.bias_mean"].Data[o])
		sd[o*dIn+ffgK] = s(ts["fc._bias_sd"].Data[o])
	}
	return mean, sd
}

func TestFFGMoments(t *testing.T) {
	m, ts := ffgModel(t, false)
	mean, sd := ffgRef(ts)
	dIn := ffgK + 1
	n := sampleCount(100_008)
	t.Run("weight", func(t *testing.T) {
		out := predictAll(t, m, runtime.Options{Samples: n, Seed: 1, Strategy: runtime.Weight,
			MaxBatch: dIn, KeepSamples: true}, unitInputs(ffgK))
		cov := newMat(len(sd), len(sd))
		for i, s := range sd {
			cov.set(i, i, s*s)
		}
		checkMoments(t, "vec(W)", sampleMoments(weightSamples(out, ffgOut, ffgK), ffgOut*dIn), mean, cov)
	})
	t.Run("local", func(t *testing.T) {
		r := rand.New(rand.NewPCG(2, 2))
		xs := append(append(make([]float32, ffgK), 0, 0, 1, 0), randn(r, 2*ffgK, 1)...)
		out := predictLocal(t, m, n, 2, xs)
		checkFFGOutputs(t, out, xs, mean, sd)
	})
}

// checkFFGOutputs checks the sampled outputs of the FFG layer for the inputs xs (ffgK values
// each) against their exact moments: mean W̄x and diagonal covariance Σ_j s_oj² x_j², from the
// weights' means and sds (row-major ffgOut × (ffgK+1), bias last).
func checkFFGOutputs(t *testing.T, out []runtime.Prediction, xs []float32, mean, sd []float64) {
	t.Helper()
	dIn := ffgK + 1
	for i := range out {
		x := append(to64s(xs[i*ffgK:(i+1)*ffgK]), 1)
		mu := make([]float64, ffgOut)
		cov := newMat(ffgOut, ffgOut)
		for o := 0; o < ffgOut; o++ {
			for j, v := range x {
				mu[o] += mean[o*dIn+j] * v
				cov.add(o, o, sd[o*dIn+j]*sd[o*dIn+j]*v*v)
			}
		}
		checkMoments(t, fmt.Sprintf("f(x_%d)", i), sampleMoments(to64s(out[i].Outputs), ffgOut), mu, cov)
	}
}

// TestFFGKL: the layer's KL is Σ log(s_p/s) + (s² + (m − m_p)²)/(2 s_p²) − 1/2 over the weights
// and biases, with the prior from the state_dict buffers or, without them, N(0, prior_sd²) for
// the weights and N(0, prior_bias_sd²) for the biases (prior_sd when 0).
func TestFFGKL(t *testing.T) {
	for _, c := range []struct {
		name      string
		withPrior bool
		biasSD    float64 // spec's PriorBiasSD
	}{
		{"buffers", true, 0},
		{"buffers win over prior_bias_sd", true, 0.35},
		{"spec prior_sd", false, 0},
		{"spec prior_bias_sd", false, 0.35},
	} {
		m, ts := ffgModelBiasSD(t, c.withPrior, c.biasSD)
		mean, sd := ffgRef(ts)
		dIn := ffgK + 1
		want := 0.0
		for o := 0; o < ffgOut; o++ {
			for j := 0; j < dIn; j++ {
				pm, ps := 0.0, ffgPriorSD
				switch {
				case c.withPrior && j < ffgK:
					pm, ps = float64(ts["fc.prior_weight_mean"].Data[o*ffgK+j]), float64(ts["fc.prior_weight_sd"].Data[o*ffgK+j])
				case c.withPrior:
					pm, ps = float64(ts["fc.prior_bias_mean"].Data[o]), float64(ts["fc.prior_bias_sd"].Data[o])
				case j == ffgK && c.biasSD > 0:
					ps = c.biasSD
				}
				mu, s := mean[o*dIn+j], sd[o*dIn+j]
				want += math.Log(ps/s) + (s*s+(mu-pm)*(mu-pm))/(2*ps*ps) - 0.5
			}
		}
		ls := m.Layers()
		if len(ls) != 1 || ls[0].Kind != runtime.KindFFG || ls[0].Rows != ffgOut || ls[0].Cols != dIn {
			t.Fatalf("%s: Layers() = %+v", c.name, ls)
		}
		if !(math.Abs(ls[0].KL-want) <= 1e-6*math.Abs(want)) {
			t.Errorf("%s: KL = %.9g, want %.9g", c.name, ls[0].KL, want)
		}
	}
}

// TestPriorDefault: the value an absent FFG prior buffer takes, and OmitPrior's test of a
// buffer's values against it.
func TestPriorDefault(t *testing.T) {
	ffg := func(sd, bsd float64) *runtime.LayerSpec {
		return &runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: sd, PriorBiasSD: bsd}}
	}
	ind := &runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 2,
		Posterior: &runtime.PosteriorSpec{Kind: runtime.KindInducing, PriorSD: 1}}
	third := float32(1.0 / 3)
	for _, c := range []struct {
		name  string
		ls    *runtime.LayerSpec
		field string
		v     float32
		ok    bool
		omit  []float32 // values OmitPrior accepts
		keep  []float32 // values it refuses
	}{
		{"weight mean", ffg(0.5, 0), "prior_weight_mean", 0, true, []float32{0, 0, 0}, []float32{0, 1e-30, 0}},
		{"bias mean", ffg(0.5, 0), "prior_bias_mean", 0, true, []float32{0, 0}, []float32{0.1, 0}},
		{"weight sd", ffg(1.0/3, 0), "prior_weight_sd", third, true, []float32{third, third}, []float32{third, 0.3333}},
		{"bias sd is prior_sd", ffg(0.5, 0), "prior_bias_sd", 0.5, true, []float32{0.5}, []float32{1}},
		{"bias sd is prior_bias_sd", ffg(0.5, 0.25), "prior_bias_sd", 0.25, true, []float32{0.25, 0.25}, []float32{0.5, 0.25}},
		{"weight sd ignores prior_bias_sd", ffg(0.5, 0.25), "prior_weight_sd", 0.5, true, []float32{0.5}, []float32{0.25}},
		{"no prior_sd: bayesianize's 1", ffg(0, 0), "prior_weight_sd", 1, true, []float32{1}, []float32{0}},
		{"NaN never matches", ffg(0.5, 0), "prior_weight_sd", 0.5, true, nil, []float32{float32(math.NaN())}},
		{"not a prior buffer", ffg(0.5, 0), "weight_mean", 0, false, nil, []float32{0}},
		{"not ffg", ind, "prior_weight_mean", 0, false, nil, []float32{0}},
	} {
		v, ok := runtime.PriorDefault(c.ls, c.field)
		if v != c.v || ok != c.ok {
			t.Errorf("%s: PriorDefault = %v, %v; want %v, %v", c.name, v, ok, c.v, c.ok)
		}
		if c.omit != nil && !runtime.OmitPrior(c.ls, c.field, c.omit) {
			t.Errorf("%s: OmitPrior(%v) = false, want true", c.name, c.omit)
		}
		if runtime.OmitPrior(c.ls, c.field, c.keep) {
			t.Errorf("%s: OmitPrior(%v) = true, want false", c.name, c.keep)
		}
	}
}

// TestFFGPriorSpecErrors: an ffg layer's prior_sd and prior_bias_sd must be non-negative and
// finite; the error names the layer and the field.
func TestFFGPriorSpecErrors(t *testing.T) {
	for _, c := range []struct {
		name    string
		sd, bsd float64
	}{
		{"negative prior_sd", -1, 0},
		{"NaN prior_sd", math.NaN(), 0},
		{"infinite prior_sd", math.Inf(1), 0},
		{"negative prior_bias_sd", 1, -0.5},
		{"NaN prior_bias_sd", 1, math.NaN()},
		{"infinite prior_bias_sd", 1, math.Inf(1)},
	} {
		spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{ffgK},
			Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: ffgK, Out: ffgOut, Bias: true,
				Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: c.sd, PriorBiasSD: c.bsd}}}}
		err := spec.Validate()
		if err == nil || !strings.Contains(err.Error(), `"fc"`) || !strings.Contains(err.Error(), "prior_bias_sd") {
			t.Errorf("%s: Validate() = %v, want an error naming layer \"fc\" and its prior sds", c.name, err)
		}
	}
}
