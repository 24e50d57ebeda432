package runtime_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// The factor-analysis posterior q(θ) = N(c, F Fᵀ + diag ψ) (MATH.md §2) against its closed form.

const faRank = 2

// faTensors returns random fa.mean, fa.factors and fa.psi for a D-dimensional posterior, and
// the reference mean c and covariance F Fᵀ + diag ψ in float64.
func faTensors(seed uint64, dim int) (runtime.Tensors, []float64, mat) {
	r := rand.New(rand.NewPCG(seed, 9))
	c := randn(r, dim, 0.7)
	f := randn(r, dim*faRank, 0.4)
	psi := make([]float32, dim)
	for i := range psi {
		psi[i] = float32(0.02 + 0.1*r.Float64())
	}
	ts := runtime.Tensors{
		"fa.mean":    tensor(c, dim),
		"fa.factors": tensor(f, dim, faRank),
		"fa.psi":     tensor(psi, dim),
	}
	fm := matOf(dim, faRank, f)
	cov := mul(fm, fm.T())
	for i, v := range psi {
		cov.add(i, i, float64(v))
	}
	return ts, to64s(c), cov
}

func faPosterior() *runtime.PosteriorSpec { return &runtime.PosteriorSpec{Kind: runtime.KindFA} }

// faLinearModel is a regression model of one linear layer (k → dOut with bias) whose weights and
// bias have an FA posterior of mean c and covariance cov (faTensors with seed).
func faLinearModel(t *testing.T, seed uint64, k, dOut int) (*runtime.Model, []float64, mat) {
	dim := dOut*k + dOut
	ts, c, cov := faTensors(seed, dim)
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k},
		FA:     &runtime.FASpec{Dim: dim, Rank: faRank},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true, Posterior: faPosterior()}}}
	return newModel(t, spec, ts), c, cov
}

// TestFASingleLayer: one linear layer (4 → 3 with bias, D = 15). With the Weight strategy the
// parameter vector θ (weight row-major, then bias) recovered from each sample has mean c and
// covariance F Fᵀ + diag ψ; with the Local strategy each input's output f = A_x θ has mean A_x c
// and covariance A_x Σ A_xᵀ.
func TestFASingleLayer(t *testing.T) {
	const k, dOut = 4, 3
	dim := dOut*k + dOut
	m, c, cov := faLinearModel(t, 1, k, dOut)
	n := sampleCount(100_008)
	t.Run("weight", func(t *testing.T) {
		checkMoments(t, "θ", sampleMoments(thetaSamples(t, m, n, k, dOut, 3), dim), c, cov)
	})
	t.Run("local", func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 4))
		xs := append(append(make([]float32, k), 0, 1, 0, 0), randn(r, 2*k, 1)...)
		out := predictLocal(t, m, n, 5, xs)
		for i := range out {
			a := newMat(dOut, dim)
			for o := 0; o < dOut; o++ {
				for j := 0; j < k; j++ {
					a.set(o, o*k+j, float64(xs[i*k+j]))
				}
				a.set(o, dOut*k+o, 1)
			}
			checkMoments(t, fmt.Sprintf("f(x_%d)", i), sampleMoments(to64s(out[i].Outputs), dOut),
				matVec(a, c), mul(mul(a, cov), a.T()))
		}
	})
}

// qterm is coef·θ_a·θ_b, or coef·θ_a when b < 0.
type qterm struct {
	coef float64
	a, b int
}

// quadMoments returns the exact mean and covariance of the outputs y_i = Σ terms[i] for
// θ ~ N(c, Σ) (Isserlis' theorem for the products).
func quadMoments(terms [][]qterm, c []float64, s mat) ([]float64, mat) {
	mean := make([]float64, len(terms))
	for i, ts := range terms {
		for _, t := range ts {
			if t.b < 0 {
				mean[i] += t.coef * c[t.a]
			} else {
				mean[i] += t.coef * (c[t.a]*c[t.b] + s.at(t.a, t.b))
			}
		}
	}
	cv := func(x, y qterm) float64 {
		switch {
		case x.b < 0 && y.b < 0:
			return s.at(x.a, y.a)
		case y.b < 0:
			return c[x.a]*s.at(x.b, y.a) + c[x.b]*s.at(x.a, y.a)
		case x.b < 0:
			return c[y.a]*s.at(y.b, x.a) + c[y.b]*s.at(y.a, x.a)
		}
		a, b, cc, d := x.a, x.b, y.a, y.b
		return c[a]*c[cc]*s.at(b, d) + c[a]*c[d]*s.at(b, cc) + c[b]*c[cc]*s.at(a, d) + c[b]*c[d]*s.at(a, cc) +
			s.at(a, cc)*s.at(b, d) + s.at(a, d)*s.at(b, cc)
	}
	cov := newMat(len(terms), len(terms))
	for i := range terms {
		for j := range terms {
			v := 0.0
			for _, x := range terms[i] {
				for _, y := range terms[j] {
					v += x.coef * y.coef * cv(x, y)
				}
			}
			cov.set(i, j, v)
		}
	}
	return mean, cov
}

// TestFATwoLayers: linear 3 → 3, identity, linear 3 → 2 (D = 20). The output is a quadratic form
// in θ whose exact moments test that both layers share the latent h (the cross-layer covariance)
// and take their slices of θ in order. Per input for both strategies, and jointly over a batch for
// the Weight strategy (whose inputs share one θ per sample).
func TestFATwoLayers(t *testing.T) {
	const k1, m1, m2 = 3, 3, 2
	d1 := m1*k1 + m1
	dim := d1 + m2*m1 + m2
	ts, c, cov := faTensors(2, dim)
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k1},
		FA: &runtime.FASpec{Dim: dim, Rank: faRank},
		Layers: []runtime.LayerSpec{
			{Name: "a", Op: runtime.OpLinear, In: k1, Out: m1, Bias: true, Posterior: faPosterior()},
			{Name: "id", Op: runtime.OpIdentity},
			{Name: "b", Op: runtime.OpLinear, In: m1, Out: m2, Bias: true, Posterior: faPosterior()},
		}}
	m := newModel(t, spec, ts)
	// outputTerms: y_i = Σ_j θ[bW(i,j)] (Σ_l θ[aW(j,l)] x_l + θ[aB(j)]) + θ[bB(i)].
	outputTerms := func(x []float32) [][]qterm {
		terms := make([][]qterm, m2)
		for i := 0; i < m2; i++ {
			for j := 0; j < m1; j++ {
				bw := d1 + i*m1 + j
				for l := 0; l < k1; l++ {
					terms[i] = append(terms[i], qterm{float64(x[l]), bw, j*k1 + l})
				}
				terms[i] = append(terms[i], qterm{1, bw, m1*k1 + j})
			}
			terms[i] = append(terms[i], qterm{1, d1 + m2*m1 + i, -1})
		}
		return terms
	}
	r := rand.New(rand.NewPCG(6, 6))
	xs := append(append([]float32{0, 0, 0}, 1, 0, 0), randn(r, 2*k1, 1)...)
	nIn := len(xs) / k1
	n := sampleCount(100_008)
	for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
		t.Run(st.String(), func(t *testing.T) {
			out := predictAll(t, m, runtime.Options{Samples: n, Seed: 8, Strategy: st, MaxBatch: nIn, KeepSamples: true}, xs)
			var joint [][]qterm
			for i := range out {
				terms := outputTerms(xs[i*k1 : (i+1)*k1])
				joint = append(joint, terms...)
				mean, cv := quadMoments(terms, c, cov)
				checkMoments(t, fmt.Sprintf("f(x_%d)", i), sampleMoments(to64s(out[i].Outputs), m2), mean, cv)
			}
			if st != runtime.Weight {
				return
			}
			all := make([]float64, n*nIn*m2)
			for s := 0; s < n; s++ {
				for i := range out {
					for o := 0; o < m2; o++ {
						all[(s*nIn+i)*m2+o] = float64(out[i].Outputs[s*m2+o])
					}
				}
			}
			mean, cv := quadMoments(joint, c, cov)
			checkMoments(t, "joint outputs of the batch", sampleMoments(all, nIn*m2), mean, cv)
		})
	}
}

// TestFAMean: the Mean option and MeanWeight use θ = c.
func TestFAMean(t *testing.T) {
	const k, dOut = 4, 3
	m, c, _ := faLinearModel(t, 3, k, dOut)
	w, _, _, err := m.MeanWeight("fc")
	if err != nil {
		t.Fatal(err)
	}
	for o := 0; o < dOut; o++ {
		for j := 0; j <= k; j++ {
			want := c[dOut*k+o]
			if j < k {
				want = c[o*k+j]
			}
			if got := float64(w[o*(k+1)+j]); !(math.Abs(got-want) <= 1e-6) {
				t.Errorf("MeanWeight[%d,%d] = %g, want %g", o, j, got, want)
			}
		}
	}
	for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
		out := predictAll(t, m, runtime.Options{Mean: true, Strategy: st, KeepSamples: true, MaxBatch: k + 1}, unitInputs(k))
		got := weightSamples(out, dOut, k)
		for i := range got {
			if !(math.Abs(got[i]-float64(w[i])) <= 1e-6) {
				t.Errorf("%v, Mean option: W[%d] = %g, MeanWeight %g", st, i, got[i], w[i])
			}
		}
	}
}
