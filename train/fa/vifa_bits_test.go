package fa

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/kernels"
)

// matMulKLGrads is klGrads as it was written with kernels.MatMul and D×K temporaries A, Cw and
// Cw Bᵀ, and the KL's log-determinant from the same factorisation: the reference klGrads and KL
// must match bit for bit.
func matMulKLGrads(t *testing.T, v *VIFA) (gc, gf, gg []float64, logDet float64) {
	t.Helper()
	d, k, alpha := v.d, v.k, v.cfg.PriorPrecision
	a := make([]float64, d*k)
	for i := 0; i < d; i++ {
		inv := 1 / v.psi[i]
		for j := 0; j < k; j++ {
			a[i*k+j] = v.f[i*k+j] * inv
		}
	}
	b := kernels.MatMul(true, false, k, k, d, v.f, a)
	ib := append([]float64(nil), b...)
	for j := 0; j < k; j++ {
		ib[j*k+j]++
	}
	lchol, err := cholesky(ib, k)
	if err != nil {
		t.Fatal(err)
	}
	inv := make([]float64, k*k)
	for j := 0; j < k; j++ {
		inv[j*k+j] = 1
	}
	kernels.CholeskySolve(lchol, k, inv, k)
	cw := kernels.MatMul(false, false, d, k, k, a, inv)
	gc, gf, gg = make([]float64, d), make([]float64, d*k), make([]float64, d)
	for i := range gc {
		gc[i] = alpha * v.c[i]
	}
	cbt := kernels.MatMul(false, true, d, k, k, cw, b)
	for i := range gf {
		gf[i] = alpha*v.f[i] - a[i] + cbt[i]
	}
	for i := 0; i < d; i++ {
		s := 0.0
		for j := 0; j < k; j++ {
			s += cw[i*k+j] * a[i*k+j]
		}
		gg[i] = 0.5*alpha*v.psi[i] - 0.5 + 0.5*s*v.psi[i]
	}
	return gc, gf, gg, logDetChol(lchol, k)
}

// TestKLGradsBitsMatchMatMul: klGrads, which forms A, Cw and Cw Bᵀ a row at a time, gives the
// bits of the D×K matrix products, also with zero (and negative zero) entries in F, which the
// products skip, and with F = 0 (Cw Bᵀ = −0 · …).
func TestKLGradsBitsMatchMatMul(t *testing.T) {
	for _, tc := range []struct {
		d, k  int
		alpha float64
		zeros float64 // the share of F's entries set to ±0
	}{{1, 1, 0.5, 0}, {7, 3, 0.2, 0}, {50, 4, 1.3, 0.3}, {200, 8, 0.01, 0.1}, {30, 2, 2, 1}} {
		v := randomVIFA(t, tc.d, tc.k, tc.alpha, uint64(20+tc.d))
		rng := rand.New(rand.NewPCG(uint64(tc.d), 5))
		for i := range v.f {
			if rng.Float64() < tc.zeros {
				v.f[i] = math.Copysign(0, rng.NormFloat64())
			}
		}
		for i := range v.c {
			if i%5 == 0 {
				v.c[i] = 0
			}
		}
		wc, wf, wg, wld := matMulKLGrads(t, v)
		gc, gf, gg := make([]float64, tc.d), make([]float64, tc.d*tc.k), make([]float64, tc.d)
		if err := v.klGrads(gc, gf, gg); err != nil {
			t.Fatal(err)
		}
		for _, x := range []struct {
			name      string
			got, want []float64
		}{{"c", gc, wc}, {"F", gf, wf}, {"γ", gg, wg}, {"log det", []float64{logDetChol(v.wb.l, v.k)}, []float64{wld}}} {
			for i := range x.want {
				if math.Float64bits(x.got[i]) != math.Float64bits(x.want[i]) {
					t.Fatalf("d=%d k=%d: ∇%s[%d] = %v (%#x), the matrix products give %v (%#x)", tc.d, tc.k, x.name, i,
						x.got[i], math.Float64bits(x.got[i]), x.want[i], math.Float64bits(x.want[i]))
				}
			}
		}
		// KL's factorisation (without the inverse) is the same.
		if _, err := v.KL(); err != nil {
			t.Fatal(err)
		}
		if got := logDetChol(v.wb.l, v.k); math.Float64bits(got) != math.Float64bits(wld) {
			t.Fatalf("d=%d k=%d: KL's log det %v, want %v", tc.d, tc.k, got, wld)
		}
	}
}
