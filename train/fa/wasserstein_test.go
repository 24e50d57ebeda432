package fa

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestW2RefMatchesDense: W2Ref (Cholesky of the reference, eigenvalues of Lᵀ Σ L) equals the
// dense Wasserstein2 (matrix square roots by Jacobi rotations) on random FA models of different
// ranks, including a rank-0 and a zero-ψ model, and is 0 from a model to itself.
func TestW2RefMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	random := func(d, k int, psi0 bool) *Model {
		m := &Model{D: d, K: k, Mean: make([]float64, d), F: make([]float64, d*k), Psi: make([]float64, d)}
		for i := range m.Mean {
			m.Mean[i] = rng.NormFloat64()
			if !psi0 {
				m.Psi[i] = 0.1 + rng.Float64()
			}
		}
		for i := range m.F {
			m.F[i] = rng.NormFloat64()
		}
		return m
	}
	const d = 12
	ref := random(d, 3, false)
	w, err := NewW2Ref(ref)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := w.Distance(ref); err != nil || !(got <= 1e-6) {
		t.Errorf("distance to itself %g (%v)", got, err)
	}
	for _, m := range []*Model{random(d, 0, false), random(d, 2, false), random(d, 5, false), random(d, 12, true)} {
		got, err := w.Distance(m)
		if err != nil {
			t.Fatal(err)
		}
		want := Wasserstein2(m.Mean, m.Covariance(), ref.Mean, ref.Covariance(), d)
		if !(math.Abs(got-want) <= 1e-7*(1+want)) {
			t.Errorf("rank %d: W2 %.10g, dense %.10g", m.K, got, want)
		}
	}
	if _, err := w.Distance(random(d+1, 1, false)); err == nil {
		t.Error("dimension mismatch: no error")
	}
}
