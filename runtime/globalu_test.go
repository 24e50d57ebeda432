package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// The global inducing posterior (paper 003 appendix H, docs/GLOBALU.md) against its closed form:
// G ~ q(G) (whitened: G ← L_r^g G L_c^gᵀ), U_{1:L} | G ~ N(R_g G C_g, λ_g²(I − P_c^g ⊗ P_r^g))
// (σ = 1), each layer's U_l the block of U_{1:L}, u_l = L_r U_l L_cᵀ, and
// W_l | u_l ~ N(σ_l R_l u_l C_l, σ_l²λ_l²(I − P_c ⊗ P_r)). Every map is linear, so vec(W_1, …, W_L)
// is Gaussian (a mixture of Gaussians for an ensemble q(G)) with the moments computed below in
// float64 from the raw tensors only; in particular the layers' weights are correlated.

// condMap is one level of the inducing construction: the linear map from vec(u) (row-major
// mo × mi, whitened if the level is) to the mean of vec(W) (row-major dOut × dIn), and the
// conditional covariance σ²λ²(I − P_r ⊗ P_c) of vec(W).
type condMap struct {
	g, within mat
}

func newCondMap(ts runtime.Tensors, name string, dOut, dIn, mo, mi int, sigma, lamda float64, whitened bool) condMap {
	zr := matOf(mo, dOut, ts[name+".z_row"].Data)
	zc := matOf(mi, dIn, ts[name+".z_col"].Data)
	psiR, psiC := mul(zr, zr.T()), mul(zc, zc.T())
	for i := 0; i < mo; i++ {
		psiR.add(i, i, math.Pow(softplus64(float64(ts[name+"._d_row"].Data[i])), 2))
	}
	for i := 0; i < mi; i++ {
		psiC.add(i, i, math.Pow(softplus64(float64(ts[name+"._d_col"].Data[i])), 2))
	}
	lr, lc := chol64(psiR), chol64(psiC)
	r := mul(zr.T(), cholInv(lr)) // dOut × mo
	c := mul(cholInv(lc), zc)     // mi × dIn
	pr, pc := mul(r, zr), mul(zc.T(), c)
	if whitened {
		r, c = mul(r, lr), mul(lc.T(), c)
	}
	p, d := dOut*dIn, mo*mi
	cm := condMap{g: newMat(p, d), within: newMat(p, p)}
	s2l2 := sigma * sigma * lamda * lamda
	for i := 0; i < dOut; i++ {
		for j := 0; j < dIn; j++ {
			for a := 0; a < mo; a++ {
				for b := 0; b < mi; b++ {
					cm.g.set(i*dIn+j, a*mi+b, sigma*r.at(i, a)*c.at(b, j))
				}
			}
			for k := 0; k < dOut; k++ {
				for l := 0; l < dIn; l++ {
					v := -pr.at(i, k) * pc.at(j, l)
					if i == k && j == l {
						v++
					}
					cm.within.set(i*dIn+j, k*dIn+l, s2l2*v)
				}
			}
		}
	}
	return cm
}

// qMoments are the component means and common covariance of q(G) as stored (before whitening).
func qMoments(ts runtime.Tensors, name string, p *runtime.PosteriorSpec) ([][]float64, mat) {
	mo, mi := p.InducingRows, p.InducingCols
	d := mo * mi
	mean := ts[name+".inducing_mean"].Data
	cov := newMat(d, d)
	switch p.QInducing {
	case runtime.QEnsemble:
		var comps [][]float64
		for e := 0; e < p.EnsembleSize; e++ {
			comps = append(comps, matOf(1, d, mean[e*d:(e+1)*d]).v)
		}
		return comps, cov
	case runtime.QDiagonal:
		for i, raw := range ts[name+"._inducing_sd"].Data {
			s := softplus64(float64(raw))
			if p.MaxSDU != nil {
				s = math.Min(s, *p.MaxSDU)
			}
			cov.set(i, i, s*s)
		}
	case runtime.QFull:
		l := vecToTril64(ts[name+"._inducing_scale_tril"].Data, d)
		cov = mul(l, l.T())
	case runtime.QMatrix:
		lrow := vecToTril64(ts[name+"._inducing_row_scale_tril"].Data, mo)
		lcol := vecToTril64(ts[name+"._inducing_col_scale_tril"].Data, mi)
		a, b := mul(lrow, lrow.T()), mul(lcol, lcol.T())
		for i := 0; i < mo; i++ {
			for j := 0; j < mi; j++ {
				for k := 0; k < mo; k++ {
					for l := 0; l < mi; l++ {
						cov.set(i*mi+j, k*mi+l, a.at(i, k)*b.at(j, l))
					}
				}
			}
		}
	}
	return [][]float64{matOf(1, d, mean).v}, cov
}

// globalMoments is the closed form of vec(W_1, …, W_L) (each row-major with the bias column
// last, concatenated in spec order) for a spec whose inducing layers are all global-U layers.
func globalMoments(spec *runtime.Spec, ts runtime.Tensors) ([]float64, mat) {
	layers, offsets, rows := spec.GlobalULayers()
	mi := layers[0].Posterior.InducingCols
	gp := spec.GlobalU
	lamda := func(name string, p *runtime.PosteriorSpec) float64 {
		l := softplus64(float64(ts[name+"._lamda"].Data[0]))
		if p.MaxLamda != nil {
			l = math.Min(l, *p.MaxLamda)
		}
		return l
	}
	gm := newCondMap(ts, runtime.GlobalUName, rows, mi, gp.InducingRows, gp.InducingCols, 1,
		lamda(runtime.GlobalUName, gp), gp.WhitenedU)
	comps, qcov := qMoments(ts, runtime.GlobalUName, gp)
	covU := matAdd(mul(mul(gm.g, qcov), gm.g.T()), gm.within)
	// A stacks the layers' maps from vec(U_{1:L}) to their weights' means.
	p := 0
	for _, l := range layers {
		p += l.Out * (l.In + b2i(l.Bias))
	}
	a := newMat(p, rows*mi)
	within := newMat(p, p)
	at := 0
	for li, l := range layers {
		lp := l.Posterior
		dIn := l.In + b2i(l.Bias)
		cm := newCondMap(ts, l.Name, l.Out, dIn, lp.InducingRows, mi, lp.PriorSD, lamda(l.Name, lp), true)
		n := l.Out * dIn
		for i := 0; i < n; i++ {
			for k := 0; k < lp.InducingRows*mi; k++ {
				a.set(at+i, offsets[li]*mi+k, cm.g.at(i, k))
			}
			for j := 0; j < n; j++ {
				within.set(at+i, at+j, cm.within.at(i, j))
			}
		}
		at += n
	}
	var means [][]float64
	for _, c := range comps {
		means = append(means, matVec(a, matVec(gm.g, c)))
	}
	return mixture(means, matAdd(mul(mul(a, covU), a.T()), within))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// globalCase is one q(G) family of the test networks.
type globalCase struct {
	name     string
	q        string
	whitened bool
	ens      int
}

var globalCases = []globalCase{
	{"diagonal-whitened", runtime.QDiagonal, true, 0},
	{"diagonal-plain", runtime.QDiagonal, false, 0},
	{"full-whitened", runtime.QFull, true, 0},
	{"matrix-plain", runtime.QMatrix, false, 0},
	{"ensemble3-whitened", runtime.QEnsemble, true, 3},
}

// globalTwoLayer: linear 3 → 2 (bias; U 2 × 2) → tanh → linear 2 → 3 (no bias; U 1 × 2), both
// global-U layers of a 2 × 2 G.
func globalTwoLayer(c globalCase) *runtime.Spec {
	lp := func(mo int, sigma float64) *runtime.PosteriorSpec {
		return &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: 2, PriorSD: sigma,
			QInducing: runtime.QGlobal, WhitenedU: true}
	}
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{3},
		GlobalU: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 2, PriorSD: 1,
			MaxSDU: ptr(1.5), QInducing: c.q, WhitenedU: c.whitened, EnsembleSize: c.ens},
		Layers: []runtime.LayerSpec{
			{Name: "a", Op: runtime.OpLinear, In: 3, Out: 2, Bias: true, Posterior: lp(2, 0.7)},
			{Name: "t", Op: runtime.OpTanh},
			{Name: "b", Op: runtime.OpLinear, In: 2, Out: 3, Posterior: lp(1, 0.5)},
		}}
}

// globalTensors makes random tensors with a small λ for the layers (_lamda −2.5, λ ≈ 0.08) and a
// larger one for the global level (_lamda 1, λ ≈ 1.31), and q(G) scales around 1, so that
// the share of the weights' covariance that comes through U_{1:L} (and correlates the layers)
// is large.
func globalTensors(spec *runtime.Spec, seed uint64) runtime.Tensors {
	ts := randomTensors(spec, seed)
	r := rand.New(rand.NewPCG(seed, 99))
	for name, t := range ts {
		switch {
		case strings.HasSuffix(name, "._lamda"):
			t.Data[0] = -2.5
			if strings.HasPrefix(name, runtime.GlobalUName) {
				t.Data[0] = 1
			}
		case strings.HasSuffix(name, "._inducing_sd"):
			for i := range t.Data {
				t.Data[i] = float32(0.5 + 0.3*r.NormFloat64())
			}
		case strings.HasSuffix(name, "_scale_tril"):
			for i := range t.Data {
				t.Data[i] = float32(0.5 + 0.3*r.NormFloat64())
			}
		}
	}
	return ts
}

// TestGlobalUWeightMoments: the joint moments of both layers' sampled weights, including their
// cross-layer covariance, match the closed form, for each q(G) family and three seeds.
func TestGlobalUWeightMoments(t *testing.T) {
	skipUnderRace(t)
	n := sampleCount(60_000)
	for ci, c := range globalCases {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", c.name, seed), func(t *testing.T) {
				spec := globalTwoLayer(c)
				ts := globalTensors(spec, seed)
				m := newModel(t, spec, ts)
				mean, cov := globalMoments(spec, ts)
				p := len(mean)
				x := make([]float64, 0, n*p)
				for s := 0; s < n; s++ {
					for _, w := range runtime.GlobalWeights(m, 1000*seed+uint64(ci), s) {
						x = append(x, to64s(w)...)
					}
				}
				got := sampleMoments(x, p)
				checkMoments(t, "vec(W_a, W_b)", got, mean, cov)
				// The layers are correlated through U_{1:L}: some cross-layer covariance of the closed
				// form is more than seTol standard errors from zero, so a sampler that drew the
				// layers independently would fail checkMoments above.
				z := 0.0
				for i := 0; i < 8; i++ {
					for j := 8; j < p; j++ {
						z = math.Max(z, math.Abs(cov.at(i, j))/got.covSE.at(i, j))
					}
				}
				switch {
				case z > seTol:
				case n < 60_000:
					// -short and -race draw a fifth or a tenth of the samples: the standard errors
					// grow by √5–√10 and the check loses its power, which the full run has.
					t.Logf("the largest cross-layer covariance is %.1f SE from zero at %d samples (a reduced run)", z, n)
				default:
					t.Errorf("the largest cross-layer covariance is %.1f SE from zero; the test would not see a missing correlation", z)
				}
			})
		}
	}
}

// globalOneLayer is a one-layer regression model (linear 6 → 5 with bias, U 3 × 2) whose U is
// all of U_{1:L}, under a 2 × 2 G.
func globalOneLayer(c globalCase) *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{indK},
		GlobalU: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 2, InducingCols: 2, PriorSD: 1,
			MaxSDU: ptr(1.5), QInducing: c.q, WhitenedU: c.whitened, EnsembleSize: c.ens},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: indK, Out: indOut, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: 3, InducingCols: 2, PriorSD: indSigma,
				QInducing: runtime.QGlobal, WhitenedU: true}}}}
}

// TestGlobalUPredictorMoments: through the Predictor, with the weight strategy (weights recovered
// from unit inputs) and the local strategy (outputs f = W x̃ of four inputs), for three seeds.
func TestGlobalUPredictorMoments(t *testing.T) {
	skipUnderRace(t)
	n := sampleCount(60_000)
	for ci, c := range globalCases {
		for seed := uint64(1); seed <= 3; seed++ {
			spec := globalOneLayer(c)
			ts := globalTensors(spec, seed)
			m := newModel(t, spec, ts)
			mean, cov := globalMoments(spec, ts)
			t.Run(fmt.Sprintf("%s/seed%d/weight", c.name, seed), func(t *testing.T) {
				out := predictAll(t, m, runtime.Options{Samples: n, Seed: 300 + seed + uint64(ci), Strategy: runtime.Weight,
					MaxBatch: indK + 1, KeepSamples: true}, unitInputs(indK))
				checkMoments(t, "vec(W)", sampleMoments(weightSamples(out, indOut, indK), indOut*indDIn), mean, cov)
			})
			t.Run(fmt.Sprintf("%s/seed%d/local", c.name, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 6))
				xs := append(make([]float32, indK), randn(r, 3*indK, 1)...)
				out := predictLocal(t, m, n, 400+seed+uint64(ci), xs)
				for i := range out {
					// f = X vec(W) with X[o, (o', j)] = δ_oo' x̃_j.
					x := newMat(indOut, indOut*indDIn)
					for o := 0; o < indOut; o++ {
						for j := 0; j < indK; j++ {
							x.set(o, o*indDIn+j, float64(xs[i*indK+j]))
						}
						x.set(o, o*indDIn+indK, 1)
					}
					checkMoments(t, fmt.Sprintf("f(x_%d)", i), sampleMoments(to64s(out[i].Outputs), indOut),
						matVec(x, mean), mul(mul(x, cov), x.T()))
				}
			})
		}
	}
}

// TestGlobalUMean: the Mean option and MeanWeight give the closed-form mean of W for a
// non-ensemble q(G) (member 0's for an ensemble, which the test skips).
func TestGlobalUMean(t *testing.T) {
	for _, c := range globalCases[:4] {
		t.Run(c.name, func(t *testing.T) {
			spec := globalOneLayer(c)
			ts := globalTensors(spec, 5)
			m := newModel(t, spec, ts)
			mean, _ := globalMoments(spec, ts)
			w, _, _, err := m.MeanWeight("fc")
			if err != nil {
				t.Fatal(err)
			}
			for i := range mean {
				if d := math.Abs(float64(w[i]) - mean[i]); !(d <= 1e-5*(1+math.Abs(mean[i]))) {
					t.Errorf("mean weight[%d] = %.7g, closed form %.7g", i, w[i], mean[i])
				}
			}
			for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
				out := predictAll(t, m, runtime.Options{Samples: 1, Mean: true, Strategy: st,
					MaxBatch: indK + 1, KeepSamples: true}, unitInputs(indK))
				got := weightSamples(out, indOut, indK)
				for i := range mean {
					if d := math.Abs(got[i] - mean[i]); !(d <= 1e-4*(1+math.Abs(mean[i]))) {
						t.Errorf("%v: mean prediction's weight[%d] = %.7g, closed form %.7g", st, i, got[i], mean[i])
					}
				}
			}
		})
	}
}

// TestGlobalUKL: the model's global KL is KL[q(G) ‖ N(0, I)] + ΣM_out·M_in·(λ²/2 − log λ − ½)
// for a whitened diagonal q(G), and each global-U layer's KL is its conditional term only.
func TestGlobalUKL(t *testing.T) {
	spec := globalTwoLayer(globalCases[0])
	ts := globalTensors(spec, 2)
	m := newModel(t, spec, ts)
	want := 0.0
	mu, sd := ts["_global_inducing_module.inducing_mean"].Data, ts["_global_inducing_module._inducing_sd"].Data
	for i := range mu {
		s := math.Min(softplus64(float64(sd[i])), 1.5)
		want += 0.5 * (s*s + float64(mu[i])*float64(mu[i]) - 1 - 2*math.Log(s))
	}
	cond := func(d int, raw float32) float64 {
		l := softplus64(float64(raw))
		return float64(d) * (l*l/2 - math.Log(l) - 0.5)
	}
	want += cond(3*2, ts["_global_inducing_module._lamda"].Data[0])
	if got := m.GlobalKL(); !(math.Abs(got-want) <= 1e-6*math.Abs(want)) {
		t.Errorf("GlobalKL %.9g, want %.9g", got, want)
	}
	wantLayer := map[string]float64{"a": cond(2*4, ts["a._lamda"].Data[0]), "b": cond(3*2, ts["b._lamda"].Data[0])}
	for _, li := range m.Layers() {
		if w := wantLayer[li.Name]; !(math.Abs(li.KL-w) <= 1e-6*math.Abs(w)) {
			t.Errorf("layer %s: KL %.9g, want %.9g", li.Name, li.KL, w)
		}
	}
}

// TestGlobalULoadErrors: malformed global-U models are refused with an error naming the
// section, layer or tensor.
func TestGlobalULoadErrors(t *testing.T) {
	base := func() (*runtime.Spec, runtime.Tensors) {
		s := globalTwoLayer(globalCases[0])
		return s, globalTensors(s, 1)
	}
	tests := []struct {
		name  string
		edit  func(*runtime.Spec, runtime.Tensors)
		wants []string
	}{
		{"no global section", func(s *runtime.Spec, _ runtime.Tensors) { s.GlobalU = nil },
			[]string{`layer "a"`, "no global_u section"}},
		{"layer not whitened", func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[2].Posterior.WhitenedU = false },
			[]string{`layer "b"`, "whitened_u"}},
		{"cols differ", func(s *runtime.Spec, _ runtime.Tensors) { s.Layers[2].Posterior.InducingCols = 3 },
			[]string{"global_u", `layer "b"`, "inducing_cols 3"}},
		{"prior sd", func(s *runtime.Spec, _ runtime.Tensors) { s.GlobalU.PriorSD = 2 },
			[]string{"global_u", "prior_sd 2"}},
		{"kind", func(s *runtime.Spec, _ runtime.Tensors) { s.GlobalU.Kind = runtime.KindFFG },
			[]string{"global_u", `kind "ffg"`}},
		{"q family", func(s *runtime.Spec, _ runtime.Tensors) { s.GlobalU.QInducing = runtime.QGlobal },
			[]string{"global_u", `q_inducing "global"`}},
		{"no global-U layer", func(s *runtime.Spec, _ runtime.Tensors) {
			s.Layers[0].Posterior, s.Layers[2].Posterior = nil, nil
		}, []string{"global_u", "no layer has q_inducing global"}},
		{"missing tensor", func(_ *runtime.Spec, ts runtime.Tensors) { delete(ts, "_global_inducing_module.z_row") },
			[]string{`"_global_inducing_module.z_row"`, "no such tensor"}},
		{"z_row shape", func(_ *runtime.Spec, ts runtime.Tensors) {
			ts["_global_inducing_module.z_row"] = tensor(make([]float32, 4), 2, 2)
		}, []string{`"_global_inducing_module.z_row"`, "shape [2 2], want [2 3]"}},
		{"inducing_mean shape", func(_ *runtime.Spec, ts runtime.Tensors) {
			ts["_global_inducing_module.inducing_mean"] = tensor(make([]float32, 6), 2, 3)
		}, []string{`"_global_inducing_module.inducing_mean"`, "want [2 2]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, ts := base()
			tc.edit(s, ts)
			_, err := runtime.New(s, ts)
			testutil.ErrorContains(t, err, tc.wants...)
		})
	}
}
