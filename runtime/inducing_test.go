package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// The extended Matheron sampler against its closed form (MATH.md §1, eq. 34 with λ), for every
// q(U) family, whitened and not, with the Weight and the Local strategies. The reference below is
// computed in float64 from the raw state_dict tensors only.

const (
	indOut = 5 // d_out
	indK   = 6 // in_features; d_in = 7 with the bias column
	indDIn = indK + 1
	indMo  = 3 // M_out
	indMi  = 2 // M_in
)

// indCase is one q(U) configuration of the test layer.
type indCase struct {
	name     string
	q        string
	whitened bool
	ens      int
	// rawLamda is _lamda; maxLamda (if not 0) clamps softplus(_lamda).
	rawLamda, maxLamda float64
	maxSDU             float64
	// pointW sets max_lamda = 0 (W given U a point estimate: λ = 0), pointU max_sd_u = 0 (a MAP
	// estimate of a diagonal q(U)): paper 003's ablation, appendix J.
	pointW, pointU bool
}

var indCases = []indCase{
	{name: "ensemble1-whitened", q: runtime.QEnsemble, whitened: true, ens: 1, rawLamda: 0.2},
	{name: "ensemble1-plain", q: runtime.QEnsemble, ens: 1, rawLamda: 0.2},
	{name: "diagonal-whitened", q: runtime.QDiagonal, whitened: true, rawLamda: 0.2, maxSDU: 0.35},
	{name: "diagonal-plain-lamda-clamped", q: runtime.QDiagonal, rawLamda: 1.5, maxLamda: 0.6},
	{name: "full-whitened", q: runtime.QFull, whitened: true, rawLamda: 0.2},
	{name: "full-plain", q: runtime.QFull, rawLamda: 0.2},
	{name: "matrix-whitened", q: runtime.QMatrix, whitened: true, rawLamda: 0.2},
	{name: "matrix-plain", q: runtime.QMatrix, rawLamda: 0.2},
	{name: "ensemble3-whitened", q: runtime.QEnsemble, whitened: true, ens: 3, rawLamda: 0.2},
	{name: "ensemble4-plain", q: runtime.QEnsemble, ens: 4, rawLamda: 0.2},
	{name: "diagonal-whitened-point-W-U", q: runtime.QDiagonal, whitened: true, rawLamda: 0.2, pointW: true, pointU: true},
	{name: "diagonal-plain-point-U", q: runtime.QDiagonal, rawLamda: 0.2, pointU: true},
	{name: "ensemble3-plain-point-W", q: runtime.QEnsemble, ens: 3, rawLamda: 0.2, pointW: true},
}

const indSigma = 0.5

// indModel is the model of indCases[ci] (c) with indLayer's tensors (seed ci+1), and the tensors.
func indModel(t testing.TB, c indCase, ci int) (*runtime.Model, runtime.Tensors) {
	t.Helper()
	spec, ts := indLayer(t, c, uint64(ci+1))
	return newModel(t, spec, ts), ts
}

// indLayer builds a one-layer regression model (linear 6 → 5 with bias) with random tensors.
func indLayer(t testing.TB, c indCase, seed uint64) (*runtime.Spec, runtime.Tensors) {
	r := rand.New(rand.NewPCG(seed, 77))
	d := indMo * indMi
	ts := runtime.Tensors{
		"fc.z_row":  tensor(randn(r, indMo*indOut, 1), indMo, indOut),
		"fc.z_col":  tensor(randn(r, indMi*indDIn, 1), indMi, indDIn),
		"fc._d_row": tensor(randn(r, indMo, 0.5), indMo),
		"fc._d_col": tensor(randn(r, indMi, 0.5), indMi),
		"fc._lamda": tensor([]float32{float32(c.rawLamda)}),
	}
	p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: indMo, InducingCols: indMi,
		PriorSD: indSigma, QInducing: c.q, WhitenedU: c.whitened, EnsembleSize: c.ens}
	if c.maxLamda != 0 {
		p.MaxLamda = ptr(c.maxLamda)
	}
	if c.maxSDU != 0 {
		p.MaxSDU = ptr(c.maxSDU)
	}
	if c.pointW {
		p.MaxLamda = ptr(0)
	}
	if c.pointU {
		p.MaxSDU = ptr(0)
	}
	switch c.q {
	case runtime.QEnsemble:
		ts["fc.inducing_mean"] = tensor(randn(r, c.ens*d, 1), c.ens, indMo, indMi)
	case runtime.QDiagonal:
		ts["fc.inducing_mean"] = tensor(randn(r, d, 1), indMo, indMi)
		sd := randn(r, d, 0.4)
		for i := range sd {
			sd[i] -= 1
		}
		ts["fc._inducing_sd"] = tensor(sd, indMo, indMi)
	case runtime.QFull:
		ts["fc.inducing_mean"] = tensor(randn(r, d, 1), d)
		raw := randn(r, d*(d+1)/2, 0.3)
		for i := 0; i < d; i++ {
			raw[i] -= 1
		}
		ts["fc._inducing_scale_tril"] = tensor(raw, d*(d+1)/2)
	case runtime.QMatrix:
		ts["fc.inducing_mean"] = tensor(randn(r, d, 1), indMo, indMi)
		rr := randn(r, indMo*(indMo+1)/2, 0.3)
		cr := randn(r, indMi*(indMi+1)/2, 0.3)
		ts["fc._inducing_row_scale_tril"] = tensor(rr, len(rr))
		ts["fc._inducing_col_scale_tril"] = tensor(cr, len(cr))
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1,
		InputShape: []int{indK},
		Layers:     []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: indK, Out: indOut, Bias: true, Posterior: p}}}
	return spec, ts
}

// vecToTril64 is bayesianize's vec_to_chol: softplus of the first d entries on the diagonal, the
// rest filling torch.tril_indices(d, d, -1) (row-major strictly lower triangle).
func vecToTril64(v []float32, d int) mat {
	l := newMat(d, d)
	for i := 0; i < d; i++ {
		l.set(i, i, softplus64(float64(v[i])))
	}
	k := d
	for i := 1; i < d; i++ {
		for j := 0; j < i; j++ {
			l.set(i, j, float64(v[k]))
			k++
		}
	}
	return l
}

// indRef is the float64 closed form of one inducing layer.
type indRef struct {
	sigma, lamda float64
	r, c         mat // R (d_out × M_out), C (M_in × d_in)
	pr, pc       mat // P_r (d_out × d_out), P_c (d_in × d_in)
	// comps are the (whitened) means of u, one per ensemble member (one for the other
	// families), row-major M_out × M_in; uCov is each component's covariance of vec(u) (row-major
	// vec), whitened.
	comps [][]float64
	uCov  mat
	// rawMean and rawCov are q(U) before whitening (rawMean is nil for ensembles); psiR and
	// psiC are the jittered Ψ_r = L_r L_rᵀ and Ψ_c = L_c L_cᵀ.
	rawMean    []float64
	rawCov     mat
	psiR, psiC mat
}

func newIndRef(c indCase, ts runtime.Tensors) indRef {
	d := indMo * indMi
	zr := matOf(indMo, indOut, ts["fc.z_row"].Data)
	zc := matOf(indMi, indDIn, ts["fc.z_col"].Data)
	psiR, psiC := mul(zr, zr.T()), mul(zc, zc.T())
	for i := 0; i < indMo; i++ {
		psiR.add(i, i, math.Pow(softplus64(float64(ts["fc._d_row"].Data[i])), 2))
	}
	for i := 0; i < indMi; i++ {
		psiC.add(i, i, math.Pow(softplus64(float64(ts["fc._d_col"].Data[i])), 2))
	}
	lr, lc := chol64(psiR), chol64(psiC)
	ref := indRef{sigma: indSigma, lamda: softplus64(c.rawLamda)}
	if c.maxLamda != 0 {
		ref.lamda = math.Min(ref.lamda, c.maxLamda)
	}
	if c.pointW {
		ref.lamda = 0
	}
	ref.r = mul(zr.T(), cholInv(lr))
	ref.c = mul(cholInv(lc), zc)
	ref.pr = mul(ref.r, zr)
	ref.pc = mul(zc.T(), ref.c)

	mean := ts["fc.inducing_mean"].Data
	cov := newMat(d, d)
	switch c.q {
	case runtime.QEnsemble:
		for e := 0; e < c.ens; e++ {
			ref.comps = append(ref.comps, matOf(1, d, mean[e*d:(e+1)*d]).v)
		}
	case runtime.QDiagonal:
		ref.comps = [][]float64{matOf(1, d, mean).v}
		for i, raw := range ts["fc._inducing_sd"].Data {
			s := softplus64(float64(raw))
			if c.maxSDU != 0 {
				s = math.Min(s, c.maxSDU)
			}
			if c.pointU {
				s = 0
			}
			cov.set(i, i, s*s)
		}
	case runtime.QFull:
		ref.comps = [][]float64{matOf(1, d, mean).v}
		l := vecToTril64(ts["fc._inducing_scale_tril"].Data, d)
		cov = mul(l, l.T())
	case runtime.QMatrix:
		ref.comps = [][]float64{matOf(1, d, mean).v}
		lrow := vecToTril64(ts["fc._inducing_row_scale_tril"].Data, indMo)
		lcol := vecToTril64(ts["fc._inducing_col_scale_tril"].Data, indMi)
		a, b := mul(lrow, lrow.T()), mul(lcol, lcol.T())
		for i := 0; i < indMo; i++ {
			for j := 0; j < indMi; j++ {
				for k := 0; k < indMo; k++ {
					for l := 0; l < indMi; l++ {
						cov.set(i*indMi+j, k*indMi+l, a.at(i, k)*b.at(j, l))
					}
				}
			}
		}
	}
	if c.q != runtime.QEnsemble {
		ref.rawMean = append([]float64(nil), ref.comps[0]...)
	}
	ref.rawCov = cov
	ref.psiR, ref.psiC = mul(lr, lr.T()), mul(lc, lc.T())
	if c.whitened {
		// u_w = L_r u L_cᵀ: u_w[i,j] = Σ_ab L_r[i,a] u[a,b] L_c[j,b].
		tw := newMat(d, d)
		for i := 0; i < indMo; i++ {
			for j := 0; j < indMi; j++ {
				for a := 0; a < indMo; a++ {
					for b := 0; b < indMi; b++ {
						tw.set(i*indMi+j, a*indMi+b, lr.at(i, a)*lc.at(j, b))
					}
				}
			}
		}
		for e := range ref.comps {
			ref.comps[e] = matVec(tw, ref.comps[e])
		}
		cov = mul(mul(tw, cov), tw.T())
	}
	ref.uCov = cov
	return ref
}

// mixture combines per-component means (each a p-vector) with a common within-component
// covariance into the moments of the equal-weight mixture.
func mixture(means [][]float64, within mat) ([]float64, mat) {
	p := within.r
	mu := make([]float64, p)
	for _, m := range means {
		for i := range mu {
			mu[i] += m[i] / float64(len(means))
		}
	}
	cov := matAdd(within, newMat(p, p))
	for _, m := range means {
		for i := 0; i < p; i++ {
			for j := 0; j < p; j++ {
				cov.add(i, j, (m[i]-mu[i])*(m[j]-mu[j])/float64(len(means)))
			}
		}
	}
	return mu, cov
}

// weightMoments is the closed form of vec(W) (row-major: index i·d_in + j):
// E[W | u] = σ R u C, Cov(W_ij, W_kl | u) = σ²λ²(δ_ik δ_jl − P_r[i,k] P_c[j,l]), plus
// σ² G Cov(u) Gᵀ with G[(ij),(ab)] = R[i,a] C[b,j] for random u.
func (ref indRef) weightMoments() ([]float64, mat) {
	p, d := indOut*indDIn, indMo*indMi
	g := newMat(p, d)
	for i := 0; i < indOut; i++ {
		for j := 0; j < indDIn; j++ {
			for a := 0; a < indMo; a++ {
				for b := 0; b < indMi; b++ {
					g.set(i*indDIn+j, a*indMi+b, ref.r.at(i, a)*ref.c.at(b, j))
				}
			}
		}
	}
	s2l2 := ref.sigma * ref.sigma * ref.lamda * ref.lamda
	within := matScale(ref.sigma*ref.sigma, mul(mul(g, ref.uCov), g.T()))
	for i := 0; i < indOut; i++ {
		for j := 0; j < indDIn; j++ {
			for k := 0; k < indOut; k++ {
				for l := 0; l < indDIn; l++ {
					v := -ref.pr.at(i, k) * ref.pc.at(j, l)
					if i == k && j == l {
						v++
					}
					within.add(i*indDIn+j, k*indDIn+l, s2l2*v)
				}
			}
		}
	}
	var means [][]float64
	for _, u := range ref.comps {
		means = append(means, vecScale(ref.sigma, matVec(g, u)))
	}
	return mixture(means, within)
}

// localMoments is the closed form of f = W x̃ for one input: mean σ R u C x̃, covariance
// σ²λ²(a I − b P_r) with a = x̃ᵀx̃, b = x̃ᵀ P_c x̃, plus σ² G_x Cov(u) G_xᵀ, G_x[i,(ab)] = R[i,a](C x̃)_b.
func (ref indRef) localMoments(x []float32) ([]float64, mat) {
	xt := make([]float64, indDIn)
	for j, v := range x {
		xt[j] = float64(v)
	}
	xt[indK] = 1
	v := matVec(ref.c, xt)
	a, b := 0.0, 0.0
	pcx := matVec(ref.pc, xt)
	for j := range xt {
		a += xt[j] * xt[j]
		b += xt[j] * pcx[j]
	}
	d := indMo * indMi
	g := newMat(indOut, d)
	for i := 0; i < indOut; i++ {
		for aa := 0; aa < indMo; aa++ {
			for bb := 0; bb < indMi; bb++ {
				g.set(i, aa*indMi+bb, ref.r.at(i, aa)*v[bb])
			}
		}
	}
	s2l2 := ref.sigma * ref.sigma * ref.lamda * ref.lamda
	within := matScale(ref.sigma*ref.sigma, mul(mul(g, ref.uCov), g.T()))
	for i := 0; i < indOut; i++ {
		for k := 0; k < indOut; k++ {
			w := -b * ref.pr.at(i, k)
			if i == k {
				w += a
			}
			within.add(i, k, s2l2*w)
		}
	}
	var means [][]float64
	for _, u := range ref.comps {
		means = append(means, vecScale(ref.sigma, matVec(g, u)))
	}
	return mixture(means, within)
}

// unitInputs returns the batch 0, e_0, …, e_{k-1} (k+1 inputs of k values).
func unitInputs(k int) []float32 {
	xs := make([]float32, (k+1)*k)
	for j := 0; j < k; j++ {
		xs[(j+1)*k+j] = 1
	}
	return xs
}

// weightSamples recovers each sample's weight matrix (row-major, bias last) from the outputs of
// the batch unitInputs(k) predicted with the Weight strategy and KeepSamples: input 0 gives the
// bias column, input e_j gives column j plus the bias. It panics unless there are k+1 predictions
// each keeping the same positive number of samples (without KeepSamples there are none, and a
// comparison over the returned weights would check nothing).
func weightSamples(out []runtime.Prediction, dOut, k int) []float64 {
	if len(out) != k+1 {
		panic(fmt.Sprintf("weightSamples: %d predictions, want %d", len(out), k+1))
	}
	if n := len(out[0].Outputs); n < dOut || n%dOut != 0 {
		panic(fmt.Sprintf("weightSamples: %d outputs kept, want a positive multiple of %d", n, dOut))
	}
	for j := range out {
		if len(out[j].Outputs) != len(out[0].Outputs) {
			panic(fmt.Sprintf("weightSamples: prediction %d has %d outputs, prediction 0 %d", j, len(out[j].Outputs), len(out[0].Outputs)))
		}
	}
	n := len(out[0].Outputs) / dOut
	dIn := k + 1
	w := make([]float64, n*dOut*dIn)
	for s := 0; s < n; s++ {
		for i := 0; i < dOut; i++ {
			bias := float64(out[0].Outputs[s*dOut+i])
			row := w[(s*dOut+i)*dIn : (s*dOut+i+1)*dIn]
			row[k] = bias
			for j := 0; j < k; j++ {
				row[j] = float64(out[j+1].Outputs[s*dOut+i]) - bias
			}
		}
	}
	return w
}

func to64s(x []float32) []float64 {
	y := make([]float64, len(x))
	for i, v := range x {
		y[i] = float64(v)
	}
	return y
}

func TestInducingWeightMoments(t *testing.T) {
	skipUnderRace(t)
	n := sampleCount(100_008)
	for ci, c := range indCases {
		t.Run(c.name, func(t *testing.T) {
			m, ts := indModel(t, c, ci)
			out := predictAll(t, m, runtime.Options{Samples: n, Seed: uint64(100 + ci), Strategy: runtime.Weight,
				MaxBatch: indK + 1, KeepSamples: true}, unitInputs(indK))
			got := sampleMoments(weightSamples(out, indOut, indK), indOut*indDIn)
			mean, cov := newIndRef(c, ts).weightMoments()
			checkMoments(t, "vec(W)", got, mean, cov)
		})
	}
}

func TestInducingLocalMoments(t *testing.T) {
	n := sampleCount(100_008)
	for ci, c := range indCases {
		t.Run(c.name, func(t *testing.T) {
			m, ts := indModel(t, c, ci)
			r := rand.New(rand.NewPCG(uint64(ci), 5))
			xs := append(make([]float32, indK), unitInputs(indK)[3*indK:4*indK]...) // 0 and e_2
			xs = append(xs, randn(r, 2*indK, 1)...)
			out := predictLocal(t, m, n, uint64(200+ci), xs)
			ref := newIndRef(c, ts)
			for i := range out {
				mean, cov := ref.localMoments(xs[i*indK : (i+1)*indK])
				checkMoments(t, fmt.Sprintf("f(x_%d)", i), sampleMoments(to64s(out[i].Outputs), indOut), mean, cov)
			}
		})
	}
}

// TestInducingMeanWeight: MeanWeight and the Mean option give σ R E[u_w] C (member 0 for
// ensembles).
func TestInducingMeanWeight(t *testing.T) {
	for ci, c := range indCases {
		t.Run(c.name, func(t *testing.T) {
			m, ts := indModel(t, c, ci)
			ref := newIndRef(c, ts)
			want := matMulRC(ref, ref.comps[0])
			w, rows, cols, err := m.MeanWeight("fc")
			if err != nil {
				t.Fatal(err)
			}
			if rows != indOut || cols != indDIn {
				t.Fatalf("MeanWeight is %d×%d, want %d×%d", rows, cols, indOut, indDIn)
			}
			for i := range want {
				if !(math.Abs(float64(w[i])-want[i]) <= 1e-5*(1+math.Abs(want[i]))) {
					t.Errorf("MeanWeight[%d] = %.7g, want %.7g", i, w[i], want[i])
				}
			}
			for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
				out := predictAll(t, m, runtime.Options{Mean: true, Strategy: st,
					MaxBatch: indK + 1, KeepSamples: true}, unitInputs(indK))
				got := weightSamples(out, indOut, indK)
				if len(got) != len(want) {
					t.Fatalf("%v: %d samples kept with the Mean option, want 1", st, len(got)/len(want))
				}
				for i := range want {
					if !(math.Abs(got[i]-want[i]) <= 1e-5*(1+math.Abs(want[i]))) {
						t.Errorf("%v, Mean option: W[%d] = %.7g, want %.7g", st, i, got[i], want[i])
					}
				}
			}
		})
	}
}

// matMulRC returns σ R u C (row-major d_out × d_in) for u row-major M_out × M_in.
func matMulRC(ref indRef, u []float64) []float64 {
	um := mat{r: indMo, c: indMi, v: u}
	return matScale(ref.sigma, mul(mul(ref.r, um), ref.c)).v
}

// TestInducingKL: Layers() reports bayesianize's KL (MATH.md §1): KL[q(U) ‖ p(U)] for the Gaussian
// q(U) against p(U) = N(0, I) (whitened) or the matrix normal MN(0, Ψ_r, Ψ_c), plus
// d_in·d_out·(λ²/2 − log λ − 1/2); ensembles have no U term. For paper 003's point estimates
// (both infinite as KLs) the trainer's terms: no conditional term with max_lamda = 0, and
// −log p(U) at the mean, ½(μᵀΣ_p⁻¹μ + log|Σ_p| + d log 2π), with max_sd_u = 0. The reference uses
// the dense (M_out·M_in)² covariances and plain Cholesky log-determinants.
func TestInducingKL(t *testing.T) {
	for ci, c := range indCases {
		t.Run(c.name, func(t *testing.T) {
			m, ts := indModel(t, c, ci)
			ref := newIndRef(c, ts)
			lam := ref.lamda
			want := 0.0
			if !c.pointW {
				want = float64(indOut*indDIn) * (lam*lam/2 - math.Log(lam) - 0.5)
			}
			if ref.rawMean != nil {
				d := indMo * indMi
				sp := eye(d)
				if !c.whitened {
					for a := 0; a < indMo; a++ {
						for b := 0; b < indMi; b++ {
							for cc := 0; cc < indMo; cc++ {
								for dd := 0; dd < indMi; dd++ {
									sp.set(a*indMi+b, cc*indMi+dd, ref.psiR.at(a, cc)*ref.psiC.at(b, dd))
								}
							}
						}
					}
				}
				lp := cholRel(sp, 0)
				spInv := cholInv(lp)
				maha, logdetP := 0.0, 0.0
				for i := 0; i < d; i++ {
					for j := 0; j < d; j++ {
						maha += ref.rawMean[i] * spInv.at(i, j) * ref.rawMean[j]
					}
					logdetP += 2 * math.Log(lp.at(i, i))
				}
				if c.pointU {
					want += 0.5 * (maha + logdetP + float64(d)*math.Log(2*math.Pi))
				} else {
					lq := cholRel(ref.rawCov, 0)
					tr, logdetQ := 0.0, 0.0
					for i := 0; i < d; i++ {
						for j := 0; j < d; j++ {
							tr += spInv.at(i, j) * ref.rawCov.at(j, i)
						}
						logdetQ += 2 * math.Log(lq.at(i, i))
					}
					want += 0.5 * (tr + maha - float64(d) + logdetP - logdetQ)
				}
			}
			ls := m.Layers()
			if len(ls) != 1 || ls[0].Kind != runtime.KindInducing || ls[0].Rows != indOut || ls[0].Cols != indDIn {
				t.Fatalf("Layers() = %+v", ls)
			}
			if !(math.Abs(ls[0].KL-want) <= 1e-6*math.Max(1, math.Abs(want))) {
				t.Errorf("KL = %.9g, want %.9g", ls[0].KL, want)
			}
		})
	}
}
