package bnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// naive float64 matrix helpers, independent of the tape and the kernels.
func matmul(a, b []float64, n, k, m int) []float64 {
	c := make([]float64, n*m)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			for l := 0; l < k; l++ {
				c[i*m+j] += a[i*k+l] * b[l*m+j]
			}
		}
	}
	return c
}

func transpose(a []float64, n, m int) []float64 {
	t := make([]float64, n*m)
	for i := 0; i < n; i++ {
		for j := 0; j < m; j++ {
			t[j*n+i] = a[i*m+j]
		}
	}
	return t
}

// pivotRow returns the row r ≥ c of the n×n matrix m with the largest |m[r, c]| (the first
// of equal ones): partial pivoting's choice for column c.
func pivotRow(m []float64, n, c int) int {
	p := c
	for r := c + 1; r < n; r++ {
		if math.Abs(m[r*n+c]) > math.Abs(m[p*n+c]) {
			p = r
		}
	}
	return p
}

// inverse by Gauss–Jordan elimination with partial pivoting.
func inverse(a []float64, n int) []float64 {
	m := append([]float64(nil), a...)
	inv := make([]float64, n*n)
	for i := 0; i < n; i++ {
		inv[i*n+i] = 1
	}
	for c := 0; c < n; c++ {
		p := pivotRow(m, n, c)
		for j := 0; j < n; j++ {
			m[c*n+j], m[p*n+j] = m[p*n+j], m[c*n+j]
			inv[c*n+j], inv[p*n+j] = inv[p*n+j], inv[c*n+j]
		}
		d := m[c*n+c]
		for j := 0; j < n; j++ {
			m[c*n+j] /= d
			inv[c*n+j] /= d
		}
		for r := 0; r < n; r++ {
			if r != c {
				f := m[r*n+c]
				for j := 0; j < n; j++ {
					m[r*n+j] -= f * m[c*n+j]
					inv[r*n+j] -= f * inv[c*n+j]
				}
			}
		}
	}
	return inv
}

// TestMatheronMoments checks the sampled weights of an Ensemble-U layer (u fixed by the member,
// no whitening) against the closed form of MATH.md §1: E[W | u] = σ R u C and
// Cov(vec W | u) = σ²λ² (I − P_c ⊗ P_r) with vec stacking columns.
func TestMatheronMoments(t *testing.T) {
	const dOut, k, mo, mi = 3, 2, 2, 2
	dIn := k + 1
	p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: mo, InducingCols: mi, PriorSD: 0.8,
		QInducing: runtime.QEnsemble, EnsembleSize: 2}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{k},
		Layers: []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: k, Out: dOut, Bias: true, Posterior: p}}}
	rng := rand.New(rand.NewPCG(5, 6))
	n := perturbedNet(t, spec, rng)
	l := n.layers[0].(*inducing[float64])
	l.jit = 0
	sig := p.PriorSD
	lam := math.Log1p(math.Exp(l.lamda.Value[0]))
	zr, zc := l.zRow.Value, l.zCol.Value
	sp := func(x float64) float64 { return math.Log1p(math.Exp(x)) }
	psiR := matmul(zr, transpose(zr, mo, dOut), mo, dOut, mo)
	for i := 0; i < mo; i++ {
		psiR[i*mo+i] += sp(l.dRow.Value[i]) * sp(l.dRow.Value[i])
	}
	psiC := matmul(zc, transpose(zc, mi, dIn), mi, dIn, mi)
	for i := 0; i < mi; i++ {
		psiC[i*mi+i] += sp(l.dCol.Value[i]) * sp(l.dCol.Value[i])
	}
	R := matmul(transpose(zr, mo, dOut), inverse(psiR, mo), dOut, mo, mo) // dOut × mo
	C := matmul(inverse(psiC, mi), zc, mi, mi, dIn)                       // mi × dIn
	u := l.mean.Value[mo*mi : 2*mo*mi]                                    // member 1
	mean := matmul(matmul(R, u, dOut, mo, mi), C, dOut, mi, dIn)
	Pr := matmul(R, zr, dOut, mo, dOut)                   // Z_rᵀ Ψ_r⁻¹ Z_r
	Pc := matmul(transpose(zc, mi, dIn), C, dIn, mi, dIn) // Z_cᵀ Ψ_c⁻¹ Z_c
	D := dOut * dIn
	// cov over (i, j) pairs: Cov(W_ij, W_ab) = σ²λ² (δ_ia δ_jb − Pr_ia Pc_jb).
	samples := 20000
	if testing.Short() {
		samples = 4000
	}
	sum := make([]float64, D)
	sum2 := make([]float64, D*D)
	tp := autodiff.NewTape[float64]()
	for s := 0; s < samples; s++ {
		tp.Reset()
		n.Begin()
		n.Seed(11, int64(s))
		w := l.weight(tp, &Context[float64]{Member: 1, net: n}).Value()
		for a := range w {
			sum[a] += w[a]
			for b := range w {
				sum2[a*D+b] += w[a] * w[b]
			}
		}
	}
	if tp.Err() != nil {
		t.Fatal(tp.Err())
	}
	scale := sig * lam
	for a := 0; a < D; a++ {
		m := sum[a] / float64(samples)
		if d := math.Abs(m - sig*mean[a]); !(d <= 5*scale/math.Sqrt(float64(samples))+1e-9) {
			t.Errorf("mean of W[%d]: %.6g, closed form %.6g", a, m, sig*mean[a])
		}
		for b := 0; b < D; b++ {
			i, j, ia, jb := a/dIn, a%dIn, b/dIn, b%dIn
			want := -Pr[i*dOut+ia] * Pc[j*dIn+jb]
			if a == b {
				want++
			}
			want *= scale * scale
			got := sum2[a*D+b]/float64(samples) - (sum[a]/float64(samples))*(sum[b]/float64(samples))
			if !(math.Abs(got-want) <= 6*scale*scale/math.Sqrt(float64(samples))) {
				t.Errorf("Cov(W[%d], W[%d]) = %.5g, closed form %.5g", a, b, got, want)
			}
		}
	}
}
