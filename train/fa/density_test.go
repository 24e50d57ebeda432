package fa

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestDensityMatchesDense: Density.LogPDF (Woodbury, determinant lemma) equals the Gaussian log
// density computed here from the dense covariance with gonum's Cholesky, for ranks 0…3 and
// points near and far from the mean.
func TestDensityMatchesDense(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ d, k int }{{1, 0}, {4, 1}, {7, 2}, {12, 3}} {
		m := &Model{D: tc.d, K: tc.k, Mean: make([]float64, tc.d), F: make([]float64, tc.d*tc.k), Psi: make([]float64, tc.d)}
		for i := range m.Mean {
			m.Mean[i] = rng.NormFloat64()
			m.Psi[i] = 0.05 + rng.Float64()
		}
		for i := range m.F {
			m.F[i] = 2 * rng.NormFloat64()
		}
		dens, err := m.NewDensity()
		if err != nil {
			t.Fatal(err)
		}
		cov := mat.NewSymDense(tc.d, nil)
		for i := 0; i < tc.d; i++ {
			for j := 0; j <= i; j++ {
				v := 0.0
				for k := 0; k < tc.k; k++ {
					v += m.F[i*tc.k+k] * m.F[j*tc.k+k]
				}
				if i == j {
					v += m.Psi[i]
				}
				cov.SetSym(i, j, v)
			}
		}
		var ch mat.Cholesky
		if !ch.Factorize(cov) {
			t.Fatal("covariance not positive definite")
		}
		for _, scale := range []float64{0, 0.3, 3} {
			theta := make([]float64, tc.d)
			r := mat.NewVecDense(tc.d, nil)
			for i := range theta {
				theta[i] = m.Mean[i] + scale*rng.NormFloat64()
				r.SetVec(i, theta[i]-m.Mean[i])
			}
			var x mat.VecDense
			if err := ch.SolveVecTo(&x, r); err != nil {
				t.Fatal(err)
			}
			want := -0.5*(mat.Dot(r, &x)+ch.LogDet()) - 0.5*float64(tc.d)*math.Log(2*math.Pi)
			if got := dens.LogPDF(theta); !(math.Abs(got-want) <= 1e-9*(1+math.Abs(want))) {
				t.Errorf("D=%d K=%d scale %g: LogPDF %.12g, dense %.12g", tc.d, tc.k, scale, got, want)
			}
		}
	}
	bad := &Model{D: 2, K: 0, Mean: []float64{0, 0}, Psi: []float64{1, 0}}
	if _, err := bad.NewDensity(); err == nil {
		t.Error("ψ = 0: no error")
	}
}
