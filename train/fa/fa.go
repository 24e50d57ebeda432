// Package fa fits factor-analysis (FA) Gaussians q(θ) = N(c, F Fᵀ + diag ψ) over a flattened
// parameter vector θ ∈ R^D (MATH.md §2), independently of any network architecture:
//
//   - VIFA (paper 000, Algorithm 1, eqs. 36–46): variational inference with closed-form entropy and
//     prior gradients through the Woodbury identity (O(DK²), no D×D matrix) and the likelihood
//     gradient by the reparameterisation θ = c + F h + √ψ ⊙ z, supplied by a callback (the
//     trainer plugs in its network);
//   - online EM and online SGA (thesis 001, Algorithms 2 and 1) over a stream of parameter
//     vectors, e.g. SGD iterates (SWAG-style), with warm-up and orthonormal initial factors;
//   - a batch maximum-likelihood FA fit by EM on a sample covariance (the reference);
//   - the FA test-model generator of thesis 001, Algorithm 4;
//   - distances between Gaussians (relative mean and covariance distances, 2-Wasserstein).
//
// All arithmetic is float64. Matrices are row-major slices.
package fa

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/kernels"
)

// Model is the Gaussian N(Mean, F Fᵀ + diag Psi) with F a D×K row-major matrix.
type Model struct {
	D, K int
	Mean []float64 // c, length D
	F    []float64 // factor loadings, D×K row-major
	Psi  []float64 // diagonal variances ψ, length D
}

// Validate checks the shapes and that every ψ is finite and positive.
func (m *Model) Validate() error {
	if m.D < 1 || m.K < 0 {
		return fmt.Errorf("fa: model dimension %d / rank %d out of range", m.D, m.K)
	}
	if len(m.Mean) != m.D || len(m.F) != m.D*m.K || len(m.Psi) != m.D {
		return fmt.Errorf("fa: model has mean %d, factors %d, psi %d values; want %d, %d×%d, %d",
			len(m.Mean), len(m.F), len(m.Psi), m.D, m.D, m.K, m.D)
	}
	for i, v := range m.Psi {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("fa: psi[%d] = %g must be finite and positive", i, v)
		}
	}
	return nil
}

// Clone returns a deep copy.
func (m *Model) Clone() *Model {
	return &Model{D: m.D, K: m.K, Mean: append([]float64(nil), m.Mean...),
		F: append([]float64(nil), m.F...), Psi: append([]float64(nil), m.Psi...)}
}

// Covariance returns the dense D×D covariance F Fᵀ + diag ψ (only for small D).
func (m *Model) Covariance() []float64 {
	s := kernels.MatMul(false, true, m.D, m.D, m.K, m.F, m.F)
	for i := 0; i < m.D; i++ {
		s[i*m.D+i] += m.Psi[i]
	}
	return s
}

// Sample writes one draw θ = c + F h + √ψ ⊙ z into theta (length D).
func (m *Model) Sample(rng *rand.Rand, theta []float64) {
	h := make([]float64, m.K)
	for i := range h {
		h[i] = rng.NormFloat64()
	}
	for d := 0; d < m.D; d++ {
		v := m.Mean[d] + math.Sqrt(m.Psi[d])*rng.NormFloat64()
		row := m.F[d*m.K : (d+1)*m.K]
		for k, f := range row {
			v += f * h[k]
		}
		theta[d] = v
	}
}

// Density evaluates the log density of a Model at many points: log N(θ; c, F Fᵀ + diag ψ) in
// O(D·K) per point after an O(D·K²) set-up, through the Woodbury identity
// (F Fᵀ + Ψ)⁻¹ = Ψ⁻¹ − Ψ⁻¹F A⁻¹FᵀΨ⁻¹ and the determinant lemma |F Fᵀ + Ψ| = |Ψ|·|A|, with
// A = I_K + FᵀΨ⁻¹F. It is safe for concurrent use.
type Density struct {
	m       *Model
	chol    []float64 // Cholesky factor of A (K×K)
	logNorm float64   // −½ (log|Σ| + D log 2π)
}

// NewDensity prepares m's log density; m must be valid (every ψ positive) and is not copied.
func (m *Model) NewDensity() (*Density, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	K := m.K
	a := make([]float64, K*K)
	for d := 0; d < m.D; d++ {
		row := m.F[d*K : (d+1)*K]
		for i, fi := range row {
			fi /= m.Psi[d]
			for j := 0; j <= i; j++ {
				a[i*K+j] += fi * row[j]
			}
		}
	}
	for i := 0; i < K; i++ {
		a[i*K+i]++
	}
	l, err := cholesky(a, K)
	if err != nil {
		return nil, fmt.Errorf("fa: I + FᵀΨ⁻¹F: %w", err)
	}
	logDet := logDetChol(l, K)
	for _, p := range m.Psi {
		logDet += math.Log(p)
	}
	return &Density{m: m, chol: l, logNorm: -0.5 * (logDet + float64(m.D)*math.Log(2*math.Pi))}, nil
}

// LogPDF returns log N(theta; c, F Fᵀ + diag ψ); theta has length D.
func (d *Density) LogPDF(theta []float64) float64 {
	m, K := d.m, d.m.K
	b := make([]float64, K)
	q := 0.0
	for i := 0; i < m.D; i++ {
		r := theta[i] - m.Mean[i]
		s := r / m.Psi[i]
		q += r * s
		for k, f := range m.F[i*K : (i+1)*K] {
			b[k] += f * s
		}
	}
	x := append([]float64(nil), b...)
	kernels.CholeskySolve(d.chol, K, x, 1)
	for k, v := range b {
		q -= v * x[k]
	}
	return d.logNorm - 0.5*q
}

// covInner returns tr(Σ_a Σ_b) for two FA covariances of the same dimension, in O(D·Ka·Kb).
func covInner(a, b *Model) float64 {
	d := a.D
	// ‖F_aᵀ F_b‖²_F
	g := kernels.MatMul(true, false, a.K, b.K, d, a.F, b.F)
	s := 0.0
	for _, v := range g {
		s += v * v
	}
	for i := 0; i < d; i++ {
		ra := 0.0
		for _, f := range a.F[i*a.K : (i+1)*a.K] {
			ra += f * f
		}
		rb := 0.0
		for _, f := range b.F[i*b.K : (i+1)*b.K] {
			rb += f * f
		}
		s += a.Psi[i]*rb + b.Psi[i]*ra + a.Psi[i]*b.Psi[i]
	}
	return s
}

// RelCovDistance is ‖Σ_est − Σ_true‖_F / ‖Σ_true‖_F for two FA covariances, computed from the
// factors without forming a D×D matrix (O(D·K²)).
func RelCovDistance(est, truth *Model) (float64, error) {
	if est.D != truth.D {
		return 0, fmt.Errorf("fa: dimensions %d and %d differ", est.D, truth.D)
	}
	tt := covInner(truth, truth)
	d2 := covInner(est, est) + tt - 2*covInner(est, truth)
	return math.Sqrt(math.Max(d2, 0) / tt), nil
}

// RelDistance is ‖a − b‖ / ‖b‖ (Euclidean / Frobenius norm of flattened values).
func RelDistance(a, b []float64) float64 {
	num, den := 0.0, 0.0
	for i := range b {
		num += (a[i] - b[i]) * (a[i] - b[i])
		den += b[i] * b[i]
	}
	return math.Sqrt(num / den)
}

// Wasserstein2 is the 2-Wasserstein distance between N(m1, S1) and N(m2, S2) (dense n×n
// covariances): W² = ‖m1 − m2‖² + tr(S1 + S2 − 2 (S2^½ S1 S2^½)^½). Intended for small n.
func Wasserstein2(m1, s1, m2, s2 []float64, n int) float64 {
	w := 0.0
	for i := 0; i < n; i++ {
		w += (m1[i] - m2[i]) * (m1[i] - m2[i])
		w += s1[i*n+i] + s2[i*n+i]
	}
	r := symSqrt(s2, n)
	mid := kernels.MatMul(false, false, n, n, n, kernels.MatMul(false, false, n, n, n, r, s1), r)
	// symmetrise against rounding
	for i := 0; i < n; i++ {
		for j := 0; j < i; j++ {
			v := 0.5 * (mid[i*n+j] + mid[j*n+i])
			mid[i*n+j], mid[j*n+i] = v, v
		}
	}
	c := symSqrt(mid, n)
	for i := 0; i < n; i++ {
		w -= 2 * c[i*n+i]
	}
	return math.Sqrt(math.Max(w, 0))
}

// Float32 returns c, F (D×K row-major) and ψ as float32, the layout of the model file's fa.mean,
// fa.factors and fa.psi tensors (runtime.FASpec).
func (m *Model) Float32() (mean, factors, psi []float32) {
	conv := func(x []float64) []float32 {
		y := make([]float32, len(x))
		for i, v := range x {
			y[i] = float32(v)
		}
		return y
	}
	return conv(m.Mean), conv(m.F), conv(m.Psi)
}
