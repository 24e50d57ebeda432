package fa

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
)

// W2Ref computes 2-Wasserstein distances from many FA Gaussians to one reference FA Gaussian,
// in O(D³) each through the reference's Cholesky factor (computed once): with Σ_ref = L Lᵀ,
//
//	W2² = |m − m_ref|² + tr Σ + tr Σ_ref − 2 Σ_i √λ_i,
//
// λ the eigenvalues of Lᵀ Σ L, which are those of Σ Σ_ref, so Σ_i √λ_i = tr (Σ_ref^½ Σ Σ_ref^½)^½.
// Σ = F Fᵀ + diag ψ enters as Lᵀ diag ψ L + (LᵀF)(LᵀF)ᵀ, without forming Σ. Wasserstein2 is the
// dense reference for small D.
type W2Ref struct {
	ref   *Model
	l     *mat.TriDense
	trRef float64
}

// NewW2Ref prepares distances to ref (valid, every ψ positive).
func NewW2Ref(ref *Model) (*W2Ref, error) {
	if err := ref.Validate(); err != nil {
		return nil, err
	}
	d := ref.D
	s := mat.NewSymDense(d, nil)
	tr := 0.0
	for i := 0; i < d; i++ {
		fi := ref.F[i*ref.K : (i+1)*ref.K]
		for j := 0; j <= i; j++ {
			v := 0.0
			for k, f := range ref.F[j*ref.K : (j+1)*ref.K] {
				v += fi[k] * f
			}
			if i == j {
				v += ref.Psi[i]
				tr += v
			}
			s.SetSym(i, j, v)
		}
	}
	var ch mat.Cholesky
	if !ch.Factorize(s) {
		return nil, fmt.Errorf("fa: W2 reference covariance: %w", errNotPD)
	}
	l := mat.NewTriDense(d, mat.Lower, nil)
	ch.LTo(l)
	return &W2Ref{ref: ref, l: l, trRef: tr}, nil
}

// Distance returns the 2-Wasserstein distance between N(m.Mean, F Fᵀ + diag ψ) and the reference.
// m's ψ may be zero (a degenerate Gaussian) but not negative.
func (w *W2Ref) Distance(m *Model) (float64, error) {
	d, ref := w.ref.D, w.ref
	if m.D != d || len(m.Mean) != d || len(m.F) != d*m.K || len(m.Psi) != d {
		return 0, fmt.Errorf("fa: W2: a model of dimension %d (rank %d) against the reference's %d", m.D, m.K, d)
	}
	w2, tr := 0.0, 0.0
	b := mat.NewDense(d, d, nil) // diag(√ψ) L
	for i := 0; i < d; i++ {
		if !(m.Psi[i] >= 0) || math.IsInf(m.Psi[i], 0) {
			return 0, fmt.Errorf("fa: W2: psi[%d] = %g", i, m.Psi[i])
		}
		dm := m.Mean[i] - ref.Mean[i]
		w2 += dm * dm
		tr += m.Psi[i]
		for _, f := range m.F[i*m.K : (i+1)*m.K] {
			tr += f * f
		}
		sq := math.Sqrt(m.Psi[i])
		for j := 0; j <= i; j++ {
			b.Set(i, j, sq*w.l.At(i, j))
		}
	}
	var h mat.SymDense
	h.SymOuterK(1, b.T()) // Lᵀ diag ψ L
	if m.K > 0 {
		var g mat.Dense
		g.Mul(w.l.T(), mat.NewDense(d, m.K, m.F)) // Lᵀ F
		h.SymRankK(&h, 1, &g)
	}
	var eig mat.EigenSym
	if !eig.Factorize(&h, false) {
		return 0, fmt.Errorf("fa: W2: eigendecomposition failed")
	}
	s := 0.0
	for _, v := range eig.Values(nil) {
		s += math.Sqrt(math.Max(v, 0))
	}
	return math.Sqrt(math.Max(w2+tr+w.trRef-2*s, 0)), nil
}
