package bnn

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// paramValues returns the net's parameters by name, in float64.
func paramValues(n *Net[float64]) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range n.Params() {
		out[p.Name] = p.Value
	}
	return out
}

func logN(x, m, s float64) float64 {
	return -0.5*((x-m)/s)*((x-m)/s) - math.Log(s*math.Sqrt(2*math.Pi))
}

// TestDrawFFG: each FFG layer's draw is scored by Σ log N(w; μ, softplus(ρ)²) and the prior
// buffers' Σ log N(w; μ_p, σ_p²), computed here from the parameters; the draws' mean and
// standard deviation match μ and σ within their sampling error.
func TestDrawFFG(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n, err := New[float64](tinySpec(&runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 0.7}, false), nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range n.Params() {
		if p.Trainable {
			for i := range p.Value {
				p.Value[i] = rng.NormFloat64() - 1 // raw sds around −1: σ ≈ 0.3
			}
		}
	}
	v := paramValues(n)
	const draws = 4000
	var sum, sum2 float64
	for s := 0; s < draws; s++ {
		ds, err := n.Draw(rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].Layer != "0" || ds[1].Layer != "2" || len(ds[0].Weight) != 20 || len(ds[0].Bias) != 4 || len(ds[1].Weight) != 12 || ds[1].Bias != nil {
			t.Fatalf("draw layout: %+v", ds)
		}
		for _, d := range ds {
			var lq, lp float64
			score := func(x []float64, mu, raw, pm, ps string) {
				for i, w := range x {
					lq += logN(w, v[d.Layer+mu][i], math.Log1p(math.Exp(v[d.Layer+raw][i])))
					lp += logN(w, v[d.Layer+pm][i], v[d.Layer+ps][i])
				}
			}
			score(d.Weight, ".weight_mean", "._weight_sd", ".prior_weight_mean", ".prior_weight_sd")
			score(d.Bias, ".bias_mean", "._bias_sd", ".prior_bias_mean", ".prior_bias_sd")
			if !d.Stochastic || d.Params != len(d.Weight)+len(d.Bias) || !(math.Abs(d.LogQ-lq) <= 1e-9*(1+math.Abs(lq))) || !(math.Abs(d.LogPrior-lp) <= 1e-9*(1+math.Abs(lp))) {
				t.Fatalf("layer %s: log q %.12g (want %.12g), log prior %.12g (want %.12g), params %d", d.Layer, d.LogQ, lq, d.LogPrior, lp, d.Params)
			}
		}
		sum += ds[0].Weight[7]
		sum2 += ds[0].Weight[7] * ds[0].Weight[7]
	}
	mu, sd := v["0.weight_mean"][7], math.Log1p(math.Exp(v["0._weight_sd"][7]))
	m := sum / draws
	s := math.Sqrt(sum2/draws - m*m)
	if !(math.Abs(m-mu) <= 5*sd/math.Sqrt(draws)) || !(math.Abs(s-sd) <= 5*sd/math.Sqrt(2*draws)) {
		t.Errorf("weight 7: draws' mean %.4f sd %.4f, want %.4f and %.4f", m, s, mu, sd)
	}
}

// TestDrawFCG: an FCG layer's draw θ = (weight, bias) is scored by the dense Gaussian density
// N(θ; μ, L Lᵀ), formed here from the raw parameters and evaluated with gonum, and by the
// prior N(0, diag s²) with s = prior_sd for weights and prior_bias_sd for biases.
func TestDrawFCG(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n, err := New[float64](tinySpec(&runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.5, PriorBiasSD: 0.8}, false), nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	// Off-diagonal entries well below the diagonal ones, so that L Lᵀ is well conditioned and
	// the dense reference is accurate.
	for _, p := range n.Params() {
		for i := range p.Value {
			p.Value[i] = 0.1 * rng.NormFloat64()
			if !strings.HasSuffix(p.Name, "_scale_tril") {
				p.Value[i] = 0.4*rng.NormFloat64() - 0.5
			}
		}
	}
	v := paramValues(n)
	for s := 0; s < 20; s++ {
		ds, err := n.Draw(rng)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range ds {
			theta := append(append([]float64(nil), d.Weight...), d.Bias...)
			D := len(theta)
			cov := fcgCovariance(v[d.Layer+"._scale_diag"], v[d.Layer+"._scale_tril"], D)
			sym := mat.NewSymDense(D, nil)
			for r := 0; r < D; r++ {
				for c := 0; c <= r; c++ {
					sym.SetSym(r, c, cov[r*D+c])
				}
			}
			var ch mat.Cholesky
			if !ch.Factorize(sym) {
				t.Fatal("covariance not positive definite")
			}
			r := mat.NewVecDense(D, nil)
			lp := 0.0
			for i, x := range theta {
				r.SetVec(i, x-v[d.Layer+".mean"][i])
				sd := 0.5
				if i >= len(d.Weight) {
					sd = 0.8
				}
				lp += logN(x, 0, sd)
			}
			var x mat.VecDense
			if err := ch.SolveVecTo(&x, r); err != nil {
				t.Fatal(err)
			}
			lq := -0.5*(mat.Dot(r, &x)+ch.LogDet()) - 0.5*float64(D)*math.Log(2*math.Pi)
			if !(math.Abs(d.LogQ-lq) <= 1e-8*(1+math.Abs(lq))) || !(math.Abs(d.LogPrior-lp) <= 1e-9*(1+math.Abs(lp))) {
				t.Fatalf("layer %s: log q %.12g (dense %.12g), log prior %.12g (want %.12g)", d.Layer, d.LogQ, lq, d.LogPrior, lp)
			}
		}
	}
}

// TestDrawBernstein: a Bernstein layer's draw is scored by log q(θ) = Σ log N(z) − log θ′(z),
// with z recovered from θ by the flow's inverse and θ′ by central finite differences of the
// flow, built here from the layer's raw parameters; the deterministic body is returned as it is.
func TestDrawBernstein(t *testing.T) {
	const m = 6
	rng := rand.New(rand.NewPCG(7, 8))
	n, err := New[float64](bernsteinSpec(m), nil, rng)
	if err != nil {
		t.Fatal(err)
	}
	v := paramValues(n)
	for _, name := range []string{"2.bf_weight", "2.bf_bias"} {
		for i := range v[name] {
			v[name][i] += 0.3 * rng.NormFloat64()
		}
	}
	np := bfvi.NumFlowParams(m)
	for s := 0; s < 5; s++ {
		ds, err := n.Draw(rng)
		if err != nil {
			t.Fatal(err)
		}
		if len(ds) != 2 || ds[0].Stochastic || ds[0].Params != 0 || !ds[1].Stochastic || ds[1].Params != 10 {
			t.Fatalf("draw layout %+v", ds)
		}
		for i, w := range ds[0].Weight {
			if w != v["0.weight"][i] {
				t.Fatalf("deterministic weight %d: %g, want %g", i, w, v["0.weight"][i])
			}
		}
		d := ds[1]
		lq, lp := 0.0, 0.0
		score := func(theta float64, raw []float64) {
			f, err := bfvi.NewFlow(m, raw)
			if err != nil {
				t.Fatal(err)
			}
			z, err := f.Inverse(theta)
			if err != nil {
				t.Fatal(err)
			}
			const h = 1e-5
			slope := (f.Forward(z+h) - f.Forward(z-h)) / (2 * h)
			lq += logN(z, 0, 1) - math.Log(slope)
			lp += logN(theta, 0, 0.7)
		}
		for o := 0; o < 2; o++ {
			for j := 0; j < 4; j++ {
				score(d.Weight[o*4+j], v["2.bf_weight"][(o*4+j)*np:(o*4+j+1)*np])
			}
			score(d.Bias[o], v["2.bf_bias"][o*np:(o+1)*np])
		}
		if !(math.Abs(d.LogQ-lq) <= 1e-5*(1+math.Abs(lq))) || !(math.Abs(d.LogPrior-lp) <= 1e-9*(1+math.Abs(lp))) {
			t.Errorf("draw %d: log q %.10g (finite differences %.10g), log prior %.10g (want %.10g)", s, d.LogQ, lq, d.LogPrior, lp)
		}
	}
}

// TestDrawNoDensity: an inducing layer's q(W) has no closed form; Draw says which layer.
func TestDrawNoDensity(t *testing.T) {
	n, err := New[float64](tinySpec(inducingPost(runtime.QDiagonal, true), false), nil, rand.New(rand.NewPCG(1, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Draw(rand.New(rand.NewPCG(1, 1))); !errors.Is(err, ErrNoDensity) {
		t.Errorf("inducing: %v, want ErrNoDensity", err)
	}
}
