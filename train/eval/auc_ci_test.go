package eval

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAUROCIntervalComponents: the AUROC equals AUROC's, and the half-width equals
// z·√(s²(V₁₀)/m + s²(V₀₁)/n) with the structural components counted here pair by pair (O(mn)),
// on data with ties.
func TestAUROCIntervalComponents(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	in, out := make([]float64, 37), make([]float64, 23)
	for i := range in {
		in[i] = math.Round(4 * rng.NormFloat64())
	}
	for i := range out {
		out[i] = math.Round(4 * (rng.NormFloat64() + 0.8))
	}
	auc, lo, hi := AUROCInterval(in, out, 0.95)
	if want := AUROC(in, out); !(math.Abs(auc-want) <= 1e-12) {
		t.Errorf("AUROC %.12g, want %.12g", auc, want)
	}
	psi := func(x, y float64) float64 {
		switch {
		case x > y:
			return 1
		case x == y:
			return 0.5
		}
		return 0
	}
	v10, v01 := make([]float64, len(out)), make([]float64, len(in))
	for i, x := range out {
		for _, y := range in {
			v10[i] += psi(x, y) / float64(len(in))
		}
	}
	for j, y := range in {
		for _, x := range out {
			v01[j] += psi(x, y) / float64(len(out))
		}
	}
	sv := func(v []float64) float64 {
		m := 0.0
		for _, x := range v {
			m += x / float64(len(v))
		}
		s := 0.0
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return s / float64(len(v)-1)
	}
	h := 1.959963984540054 * math.Sqrt(sv(v10)/float64(len(out))+sv(v01)/float64(len(in)))
	if !(math.Abs((hi-lo)/2-h) <= 1e-12) || !(math.Abs((hi+lo)/2-auc) <= 1e-12) {
		t.Errorf("interval [%.10g, %.10g] around %.10g, want half-width %.10g", lo, hi, auc, h)
	}
	if a, l, u := AUROCInterval(nil, out, 0.95); !math.IsNaN(a) || !math.IsNaN(l) || !math.IsNaN(u) {
		t.Error("no negatives: want NaN")
	}
}

// TestAUROCIntervalCoverage: on binormal data, where the AUROC is Φ(d/√2), the 95 % interval
// covers the truth in 95 % ± 3.5 % (about 3.5 binomial standard errors at 400 repetitions) of
// the repetitions.
func TestAUROCIntervalCoverage(t *testing.T) {
	const reps, d = 400, 1.0
	truth := 0.5 * math.Erfc(-d/math.Sqrt2/math.Sqrt2)
	rng := rand.New(rand.NewPCG(3, 4))
	covered := 0
	for r := 0; r < reps; r++ {
		in, out := make([]float64, 60), make([]float64, 40)
		for i := range in {
			in[i] = rng.NormFloat64()
		}
		for i := range out {
			out[i] = rng.NormFloat64() + d
		}
		if _, lo, hi := AUROCInterval(in, out, 0.95); lo <= truth && truth <= hi {
			covered++
		}
	}
	if c := float64(covered) / reps; !(math.Abs(c-0.95) <= 0.035) {
		t.Errorf("coverage %.3f of the true AUROC %.4f, want 0.95", c, truth)
	}
}
