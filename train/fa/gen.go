package fa

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Generate returns a random FA model by thesis 001, Algorithm 4: c ~ N(0, I); V_K the eigenvectors
// of the K largest eigenvalues of A Aᵀ with A a D×D standard-normal matrix; s² ~ U(lo, hi)
// per coordinate; F = V_K ⊙ s (row i scaled by s_i); ψ ~ U(0, max s²). The eigenvectors come from
// a Householder tridiagonalisation (O(D³)).
func Generate(rng *rand.Rand, d, k int, lo, hi float64) (*Model, error) {
	if d < 1 || k < 1 || k > d {
		return nil, fmt.Errorf("fa: generate: need 1 ≤ k (%d) ≤ d (%d)", k, d)
	}
	if !(lo > 0) || !(hi >= lo) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("fa: generate: spectrum [%g, %g] must satisfy 0 < lo ≤ hi < ∞", lo, hi)
	}
	c := make([]float64, d)
	for i := range c {
		c[i] = rng.NormFloat64()
	}
	a := make([]float64, d*d)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	m := make([]float64, d*d) // A Aᵀ by row dot products (symmetric)
	for i := 0; i < d; i++ {
		ai := a[i*d : (i+1)*d]
		for j := 0; j <= i; j++ {
			aj := a[j*d : (j+1)*d]
			s := 0.0
			for p, v := range ai {
				s += v * aj[p]
			}
			m[i*d+j], m[j*d+i] = s, s
		}
	}
	_, v := topEigen(m, d, k)
	s2 := make([]float64, d)
	smax := 0.0
	for i := range s2 {
		s2[i] = lo + (hi-lo)*rng.Float64()
		smax = math.Max(smax, s2[i])
	}
	f := make([]float64, d*k)
	for i := 0; i < d; i++ {
		s := math.Sqrt(s2[i])
		for j := 0; j < k; j++ {
			f[i*k+j] = v[i*k+j] * s
		}
	}
	psi := make([]float64, d)
	for i := range psi {
		// U(0, smax), excluding an exact 0 so the model stays a valid FA model.
		for psi[i] == 0 {
			psi[i] = smax * rng.Float64()
		}
	}
	return &Model{D: d, K: k, Mean: c, F: f, Psi: psi}, nil
}
