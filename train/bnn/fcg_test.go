package bnn

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// logDetGauss returns log |det A| of an n×n matrix by Gaussian elimination with partial
// pivoting (independent of Cholesky factors).
func logDetGauss(a []float64, n int) float64 {
	m := append([]float64(nil), a...)
	s := 0.0
	for c := 0; c < n; c++ {
		p := pivotRow(m, n, c)
		for j := 0; j < n; j++ {
			m[c*n+j], m[p*n+j] = m[p*n+j], m[c*n+j]
		}
		d := m[c*n+c]
		s += math.Log(math.Abs(d))
		for r := c + 1; r < n; r++ {
			f := m[r*n+c] / d
			for j := c; j < n; j++ {
				m[r*n+j] -= f * m[c*n+j]
			}
		}
	}
	return s
}

// fcgCovariance builds L Lᵀ in float64 from the raw parameters, as bayesianize's scale_tril:
// softplus on the diagonal, the strict lower triangle of _scale_tril below it.
func fcgCovariance(diagRaw, tril []float64, D int) []float64 {
	L := make([]float64, D*D)
	for r := 0; r < D; r++ {
		L[r*D+r] = math.Log1p(math.Exp(diagRaw[r]))
		for c := 0; c < r; c++ {
			L[r*D+c] = tril[r*D+c]
		}
	}
	return matmul(L, transpose(L, D, D), D, D, D)
}

// TestFCGKLClosedForm checks the trainer's and the runtime's KL of FCG layers against the
// closed form ½(tr(Σ_p⁻¹Σ) + μᵀΣ_p⁻¹μ − D + log det Σ_p − log det Σ), with Σ = L Lᵀ formed
// explicitly and its log-determinant from Gaussian elimination, in float64.
func TestFCGKLClosedForm(t *testing.T) {
	for _, conv := range []bool{false, true} {
		rng := rand.New(rand.NewPCG(11, 12))
		spec := tinySpec(&runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 0.5, PriorBiasSD: 0.8}, conv)
		n := perturbedNet(t, spec, rng)
		// A well-conditioned L Lᵀ, so that elimination gets its log-determinant to ~1e-12.
		for _, l := range n.layers {
			if f, ok := l.(*fcg[float64]); ok {
				for i := range f.tril.Value {
					f.tril.Value[i] = 0.1 * rng.NormFloat64()
				}
				for i := range f.diag.Value {
					f.diag.Value[i] = f64.SoftplusInv(0.4 + 0.4*rng.Float64())
				}
			}
		}
		kls := layerKLs(t, n)
		m := netModel(t, n)
		rt := m.Layers()
		i := 0
		for _, l := range n.layers {
			f, ok := l.(*fcg[float64])
			if !ok {
				continue
			}
			D, nw := f.dim, f.dOut*f.k
			sigma := fcgCovariance(f.diag.Value, f.tril.Value, D)
			want := -float64(D) - logDetGauss(sigma, D)
			for r := 0; r < D; r++ {
				s := 0.5
				if r >= nw {
					s = 0.8
					if !f.bias {
						t.Fatal("bias entries in a layer without bias")
					}
				}
				mu := f.mean.Value[r]
				want += sigma[r*D+r]/(s*s) + mu*mu/(s*s) + 2*math.Log(s)
			}
			want /= 2
			if kls[i].Name != f.affine.name || rt[i].Name != f.affine.name || rt[i].Kind != runtime.KindFCG {
				t.Fatalf("layer %d: trainer %q, runtime %q (%s), want %q", i, kls[i].Name, rt[i].Name, rt[i].Kind, f.affine.name)
			}
			if rel := math.Abs(kls[i].KL-want) / math.Abs(want); !(rel < 1e-10) {
				t.Errorf("conv %v layer %s: trainer KL %.12g, closed form %.12g", conv, f.affine.name, kls[i].KL, want)
			}
			// The runtime reads float32 tensors.
			if rel := math.Abs(rt[i].KL-want) / math.Abs(want); !(rel < 1e-4) {
				t.Errorf("conv %v layer %s: runtime KL %.8g, closed form %.8g", conv, f.affine.name, rt[i].KL, want)
			}
			i++
		}
		if i != 2 {
			t.Fatalf("%d fcg layers, want 2", i)
		}
	}
}

// TestFCGSampleMoments draws θ through the trainer's forward pass many times and compares the
// sample mean and covariance of the layer's parameters with μ and L Lᵀ (built from the raw
// parameters in the test), within 5 standard errors of each estimator.
func TestFCGSampleMoments(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{2},
		Layers: []runtime.LayerSpec{{Name: "0", Op: runtime.OpLinear, In: 2, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 1}}}}
	n := perturbedNet(t, spec, rng)
	f := n.layers[0].(*fcg[float64])
	D := f.dim
	sigma := fcgCovariance(f.diag.Value, f.tril.Value, D)
	// Inputs e1, e2 and 0 read the weight columns and the bias: y = W x + b.
	x := []float64{1, 0, 0, 1, 0, 0}
	const S = 20000
	sum := make([]float64, D)
	sum2 := make([]float64, D*D)
	tp := autodiff.NewTape[float64]()
	th := make([]float64, D)
	for s := 0; s < S; s++ {
		tp.Reset()
		n.Begin()
		n.Seed(99, int64(s))
		out := n.Forward(tp, tp.Const(x, 3, 2), true).Value()
		// out rows: W e1 + b, W e2 + b, b; θ = (W row-major, b).
		for o := 0; o < 2; o++ {
			b := out[2*2+o]
			th[o*2+0] = out[0*2+o] - b
			th[o*2+1] = out[1*2+o] - b
			th[4+o] = b
		}
		for a := 0; a < D; a++ {
			sum[a] += th[a]
			for b := 0; b < D; b++ {
				sum2[a*D+b] += th[a] * th[b]
			}
		}
	}
	for a := 0; a < D; a++ {
		mean := sum[a] / S
		if se := math.Sqrt(sigma[a*D+a] / S); !(math.Abs(mean-f.mean.Value[a]) <= 5*se) {
			t.Errorf("E[θ_%d] = %.5f, want %.5f ± %.5f", a, mean, f.mean.Value[a], 5*se)
		}
		for b := 0; b < D; b++ {
			cov := sum2[a*D+b]/S - mean*sum[b]/S
			// Var of the product estimator: (Σ_aa Σ_bb + Σ_ab²)/S for Gaussians.
			se := math.Sqrt((sigma[a*D+a]*sigma[b*D+b] + sigma[a*D+b]*sigma[a*D+b]) / S)
			if !(math.Abs(cov-sigma[a*D+b]) <= 5*se) {
				t.Errorf("Cov[θ_%d, θ_%d] = %.5f, want %.5f ± %.5f", a, b, cov, sigma[a*D+b], 5*se)
			}
		}
	}
}

// TestFCGTooLarge: a layer above runtime.MaxFCGDim is refused with its name and size.
func TestFCGTooLarge(t *testing.T) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{784},
		Layers: []runtime.LayerSpec{{Name: "fc1", Op: runtime.OpLinear, In: 784, Out: 256, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: 1}}}}
	_, err := New[float32](spec, nil, rand.New(rand.NewPCG(1, 2)))
	testutil.ErrorContains(t, err, `"fc1"`, "200960", "4096")
}
