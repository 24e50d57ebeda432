package bfvi

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// TestParetoKRecoversShape fits k̂ to generalized Pareto draws with known shape. With n draws the
// tail holds M = 3√n of them and k̂'s standard error is about (1 + k)/√M; the tolerance is four of
// those plus the bias of the prior adjustment, 10·|0.5 − k|/(M + 10).
func TestParetoKRecoversShape(t *testing.T) {
	n := 40000
	if testing.Short() {
		n = 10000
	}
	m := math.Ceil(3 * math.Sqrt(float64(n)))
	for _, k := range []float64{0.2, 0.5, 0.8} {
		for seed := uint64(1); seed <= 3; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(k*100)))
			lr := make([]float64, n)
			for i := range lr {
				u := rng.Float64()
				lr[i] = math.Log((math.Pow(1-u, -k) - 1) / k) // log of a GPD(k, σ = 1) draw
			}
			got, err := ParetoK(lr)
			if err != nil {
				t.Fatal(err)
			}
			tol := 4*(1+k)/math.Sqrt(m) + 10*math.Abs(0.5-k)/(m+10)
			if !(math.Abs(got-k) <= tol) {
				t.Errorf("k = %.1f seed %d: k̂ = %.3f (tolerance %.3f)", k, seed, got, tol)
			}
		}
	}
}

// TestParetoKQEqualsP: exact q = p gives constant ratios (k̂ = −Inf); q = N(0, 1.2²) for
// p = N(0, 1) (q wider, bounded ratios) gives k̂ < 0.5; q = N(0, 1) for p = N(0, 3²) (tail
// shape 1 − σ_q²/σ_p² = 8/9, approached slowly: 0.68–0.92 at n = 4000) gives k̂ > 0.6.
func TestParetoKQEqualsP(t *testing.T) {
	n := 4000
	lr := make([]float64, n)
	for i := range lr {
		lr[i] = -1.7 // log p − log q with p = q up to the normaliser
	}
	if k, err := ParetoK(lr); err != nil || !(k < 0.5) {
		t.Errorf("constant ratios: k̂ = %g, %v", k, err)
	}
	for seed := uint64(1); seed <= 3; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		for i := range lr {
			th := 1.2 * rng.NormFloat64()
			lr[i] = logNormal(th, 0, 1) - logNormal(th, 0, 1.2)
		}
		if k, err := ParetoK(lr); err != nil || !(k < 0.5) {
			t.Errorf("seed %d: q wider than p: k̂ = %g, %v", seed, k, err)
		}
		for i := range lr {
			th := rng.NormFloat64()
			lr[i] = logNormal(th, 0, 3) - logNormal01(th)
		}
		if k, err := ParetoK(lr); err != nil || !(k > 0.6) {
			t.Errorf("seed %d: q = N(0, 1) for p = N(0, 3²) (k = 8/9): k̂ = %g, %v", seed, k, err)
		}
	}
}

func TestParetoKBadInput(t *testing.T) {
	if _, err := ParetoK(make([]float64, 10)); !errors.Is(err, ErrTooFewDraws) {
		t.Errorf("10 draws: %v", err)
	}
	lr := make([]float64, 100)
	lr[3] = math.NaN()
	if _, err := ParetoK(lr); err == nil {
		t.Error("NaN accepted")
	}
	lr[3] = math.Inf(1)
	if _, err := ParetoK(lr); err == nil {
		t.Error("+Inf accepted")
	}
}
