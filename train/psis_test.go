package train

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/fa"
)

// linRegExact is the exact posterior of y = Xθ + ε, ε ~ N(0, 1/τ), θ ~ N(0, s² I) (no bias),
// and the log evidence log N(y; 0, s² X Xᵀ + I/τ), computed here with gonum from the data as
// float32 rounded it.
type linRegExact struct {
	mean   []float64
	cov    *mat.SymDense
	logZ   float64
	corr   float64
	chol   *mat.TriDense // lower Cholesky factor of cov
	dim, n int
}

func exactLinReg(t *testing.T, d *data.Dataset, s, tau float64) linRegExact {
	t.Helper()
	n, dim := d.N, d.Dim
	X := mat.NewDense(n, dim, nil)
	y := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < dim; j++ {
			X.Set(i, j, float64(d.X[i*dim+j]))
		}
		y.SetVec(i, float64(d.Targets[i]))
	}
	prec := mat.NewSymDense(dim, nil)
	for a := 0; a < dim; a++ {
		for b := 0; b <= a; b++ {
			v := tau * mat.Dot(X.ColView(a), X.ColView(b))
			if a == b {
				v += 1 / (s * s)
			}
			prec.SetSym(a, b, v)
		}
	}
	var pc mat.Cholesky
	if !pc.Factorize(prec) {
		t.Fatal("posterior precision not positive definite")
	}
	cov := mat.NewSymDense(dim, nil)
	if err := pc.InverseTo(cov); err != nil {
		t.Fatal(err)
	}
	var xty mat.VecDense
	xty.MulVec(X.T(), y)
	xty.ScaleVec(tau, &xty)
	var m mat.VecDense
	m.MulVec(cov, &xty)
	C := mat.NewSymDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := s * s * mat.Dot(X.RowView(i), X.RowView(j))
			if i == j {
				v += 1 / tau
			}
			C.SetSym(i, j, v)
		}
	}
	var cc mat.Cholesky
	if !cc.Factorize(C) {
		t.Fatal("evidence covariance not positive definite")
	}
	var ci mat.VecDense
	if err := cc.SolveVecTo(&ci, y); err != nil {
		t.Fatal(err)
	}
	logZ := -0.5*(mat.Dot(y, &ci)+cc.LogDet()) - 0.5*float64(n)*math.Log(2*math.Pi)
	var cl mat.Cholesky
	if !cl.Factorize(cov) {
		t.Fatal("posterior covariance not positive definite")
	}
	L := mat.NewTriDense(dim, mat.Lower, nil)
	cl.LTo(L)
	return linRegExact{mean: []float64{m.AtVec(0), m.AtVec(1)}, cov: cov, logZ: logZ, chol: L, dim: dim, n: n,
		corr: cov.At(0, 1) / math.Sqrt(cov.At(0, 0)*cov.At(1, 1))}
}

// psisLinRegTrainer builds an (untrained) trainer for Linear(2, 1, bias=False) regression with
// posterior post and the prior N(0, s²) on both weights, on data d.
func psisLinRegTrainer(t *testing.T, d *data.Dataset, post string, s, tau float64) *Trainer {
	t.Helper()
	c := DefaultConfig()
	c.Data, c.Task, c.Posterior, c.NoisePrecision = "synthetic", "regression", post, tau
	c.Arch = `{"layers": [{"name": "0", "type": "Linear", "in_features": 2, "out_features": 1, "bias": false}]}`
	c.TestFraction, c.EvalEvery, c.CheckpointEvery, c.Epochs = 0, 0, 0, 1
	switch post {
	case "fcg_w", "ffg_w":
		kind := strings.TrimSuffix(post, "_w")
		c.Inference = Inference{JSON: fmt.Sprintf(`{"inference": {"0": {"inference": %q, "prior_weight_sd": %v}}}`, kind, s)}
	case "vifa":
		c.PriorPrecision = 1 / (s * s)
	}
	tr, err := NewWithData(c, d, d)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func setParam(t *testing.T, tr *Trainer, name string, v ...float64) {
	t.Helper()
	for _, p := range tr.Nets[0].Params() {
		if p.Name == name {
			if len(p.Value) != len(v) {
				t.Fatalf("%s has %d values, setting %d", name, len(p.Value), len(v))
			}
			for i, x := range v {
				p.Value[i] = float32(x)
			}
			return
		}
	}
	t.Fatalf("no parameter %q", name)
}

// TestPSISExactPosterior: when q is the exact posterior of a Bayesian linear regression (FCG-W
// with μ and L from the closed form; FFG-W on a design whose posterior is diagonal; an FA q(θ)
// with the posterior covariance written as f fᵀ + diag ψ), every log importance ratio equals the
// log evidence, which is computed here independently (gonum, the marginal N(y; 0, s²XXᵀ + I/τ)):
// the ELBO and the IS estimate both equal log p(D) up to float32 storage of q's parameters.
// With L scaled by c, the tail shape of the ratios is known, k = 1 − c² for c < 1 (ratios
// p/q ∝ exp(½(1/c² − 1)|z|²) of a Gaussian q narrower than the Gaussian posterior) and bounded
// ratios (k ≤ 0) for c > 1: k̂ must land on the right side of 0.5 / 0.7.
func TestPSISExactPosterior(t *testing.T) {
	const s, tau = 1.5, 4.0
	ctx := context.Background()
	d := hmcTestData(11, 6, 2, 1, 0, tau)
	ex := exactLinReg(t, d, s, tau)
	// The fcg layer's prior must be the one the closed form assumes.
	setFCG := func(tr *Trainer, c float64) {
		L := ex.chol
		setParam(t, tr, "0.mean", ex.mean...)
		setParam(t, tr, "0._scale_diag", f64.SoftplusInv(c*L.At(0, 0)), f64.SoftplusInv(c*L.At(1, 1)))
		setParam(t, tr, "0._scale_tril", 0, 0, c*L.At(1, 0), 0)
	}
	tr := psisLinRegTrainer(t, d, "fcg_w", s, tau)
	if p := tr.spec.Layers[0].Posterior; p == nil || p.PriorSD != s {
		t.Fatalf("fcg layer prior %+v, want prior_sd %g", p, s)
	}
	setFCG(tr, 1)
	rep, err := tr.PSIS(ctx, PSISOptions{Draws: 500, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	const tol = 1e-4
	if !(math.Abs(rep.ELBO-ex.logZ) <= tol*(1+math.Abs(ex.logZ))) || !(math.Abs(rep.LogEvidence-ex.logZ) <= tol*(1+math.Abs(ex.logZ))) {
		t.Errorf("fcg_w at the exact posterior: ELBO %.8g, IS log evidence %.8g, want log p(D) = %.8g", rep.ELBO, rep.LogEvidence, ex.logZ)
	}
	if rep.Params != 2 || rep.Fixed != 0 || rep.Examples != 6 || rep.Draws != 500 {
		t.Errorf("report counts %+v", rep)
	}
	// k̂ of a heavy tail is noisy (0.66–1.23 over 12 seeds of 4000 draws at c = 0.3): its mean over
	// 10 seeds must be within 0.12 of the true shape.
	for _, c := range []float64{0.3, 0.5, 1.5} {
		setFCG(tr, c)
		var ks []float64
		for seed := uint64(1); seed <= 10; seed++ {
			rep, err := tr.PSIS(ctx, PSISOptions{Draws: 4000, Seed: seed})
			if err != nil {
				t.Fatal(err)
			}
			if rep.KHat == nil {
				t.Fatalf("L × %g: k̂ undefined", c)
			}
			ks = append(ks, *rep.KHat)
			if c > 1 && !(math.Abs(rep.LogEvidence-ex.logZ) <= 0.05) {
				t.Errorf("fcg_w with L × %g, seed %d: IS log evidence %.5g, want %.5g (a wider proposal is consistent)", c, seed, rep.LogEvidence, ex.logZ)
			}
			if !(rep.ELBO < ex.logZ) {
				t.Errorf("fcg_w with L × %g, seed %d: ELBO %.6g not below log p(D) = %.6g", c, seed, rep.ELBO, ex.logZ)
			}
		}
		mean := 0.0
		for _, k := range ks {
			mean += k / float64(len(ks))
		}
		t.Logf("L × %g: mean k̂ %.3f over %d seeds (%.3f … %.3f)", c, mean, len(ks), slices.Min(ks), slices.Max(ks))
		if c < 1 && !(math.Abs(mean-(1-c*c)) <= 0.12) {
			t.Errorf("fcg_w with L × %g: mean k̂ %.3f, true k = 1 − c² = %.3f", c, mean, 1-c*c)
		}
		if c > 1 && !(slices.Max(ks) < 0.5) {
			t.Errorf("fcg_w with L × %g (a wider q, bounded ratios): k̂ up to %.3f, want < 0.5", c, slices.Max(ks))
		}
	}

	t.Run("ffg_w", func(t *testing.T) {
		// Orthogonal columns: XᵀX = 8 I, so the posterior is diagonal and mean-field is exact.
		od := &data.Dataset{Name: "orthogonal", N: 6, Dim: 2, Shape: []int{2}, Outputs: 1,
			X:       []float32{1, 1, 1, -1, -1, 1, -1, -1, 2, 0, 0, 2},
			Targets: []float32{0.7, -0.4, 1.1, 0.2, 0.9, -1.3}}
		ox := exactLinReg(t, od, s, tau)
		if !(math.Abs(ox.corr) <= 1e-12) {
			t.Fatalf("posterior correlation %g, want 0", ox.corr)
		}
		tr := psisLinRegTrainer(t, od, "ffg_w", s, tau)
		setParam(t, tr, "0.weight_mean", ox.mean...)
		setParam(t, tr, "0._weight_sd", f64.SoftplusInv(math.Sqrt(ox.cov.At(0, 0))), f64.SoftplusInv(math.Sqrt(ox.cov.At(1, 1))))
		rep, err := tr.PSIS(ctx, PSISOptions{Draws: 200, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(rep.ELBO-ox.logZ) <= tol*(1+math.Abs(ox.logZ))) {
			t.Errorf("ffg_w at the exact posterior: ELBO %.8g, want log p(D) = %.8g", rep.ELBO, ox.logZ)
		}
	})

	t.Run("vifa", func(t *testing.T) {
		tr := psisLinRegTrainer(t, d, "vifa", s, tau)
		// Σ = f fᵀ + diag ψ with ψ₁ = Σ₁₁(1 − ρ²)/2 and ψ₂ chosen so that Σ − diag ψ has rank 1.
		S11, S12, S22 := ex.cov.At(0, 0), ex.cov.At(0, 1), ex.cov.At(1, 1)
		psi1 := S11 * (1 - ex.corr*ex.corr) / 2
		psi2 := S22 - S12*S12/(S11-psi1)
		f1 := math.Sqrt(S11 - psi1)
		m := &fa.Model{D: 2, K: 1, Mean: ex.mean, F: []float64{f1, S12 / f1}, Psi: []float64{math.Log(psi1), math.Log(psi2)}}
		tr.fa.avg = m // vifa's tail average (log ψ), which the deployed model uses
		rep, err := tr.PSIS(ctx, PSISOptions{Draws: 200, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(rep.ELBO-ex.logZ) <= 1e-9*(1+math.Abs(ex.logZ))) || !(math.Abs(rep.LogEvidence-ex.logZ) <= 1e-9*(1+math.Abs(ex.logZ))) {
			t.Errorf("vifa at the exact posterior: ELBO %.10g, IS log evidence %.10g, want log p(D) = %.10g", rep.ELBO, rep.LogEvidence, ex.logZ)
		}
	})
}

// TestPSISLogLik: the chunked log likelihood equals Σ_n log softmax(W x_n + b)_{y_n} and
// Σ_n log N(y_n; W x_n + b, 1/τ) summed here directly, over more rows than one chunk.
func TestPSISLogLik(t *testing.T) {
	for _, tc := range []struct {
		name             string
		outputs, classes int
	}{{"classification", 0, 3}, {"regression", 2, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			const n, dim, tau = psisChunk*2 + 77, 4, 2.5
			d := hmcTestData(5, n, dim, tc.outputs, tc.classes, tau)
			out := max(tc.outputs, tc.classes)
			spec := testLinearSpec(dim, out)
			net, err := newHMCNet(spec, nil, 1, math.MaxInt)
			if err != nil {
				t.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(1, 2))
			theta := make([]float64, net.dim)
			for i := range theta {
				theta[i] = rng.NormFloat64()
			}
			hd := hmcData{n: d.N, x: d.X, labels: d.Labels, targets: d.Targets, tau: tau}
			got := newLogLik(net, &hd).logLik(theta)
			want := 0.0
			for r := 0; r < n; r++ {
				f := make([]float64, out)
				for o := range f {
					f[o] = theta[out*dim+o]
					for j := 0; j < dim; j++ {
						f[o] += theta[o*dim+j] * float64(d.X[r*dim+j])
					}
				}
				if tc.classes > 0 {
					z := 0.0
					for _, v := range f {
						z += math.Exp(v)
					}
					want += f[d.Labels[r]] - math.Log(z)
					continue
				}
				for o, v := range f {
					e := float64(d.Targets[r*out+o]) - v
					want += -0.5*tau*e*e + 0.5*math.Log(tau/(2*math.Pi))
				}
			}
			if !(math.Abs(got-want) <= 1e-9*math.Abs(want)) {
				t.Errorf("log likelihood %.12g, direct sum %.12g", got, want)
			}
		})
	}
}

// TestPSISErrors: posteriors without a density, too few draws and a cancelled context are
// refused with errors that say so.
func TestPSISErrors(t *testing.T) {
	d := hmcTestData(11, 6, 2, 1, 0, 4)
	tr := psisLinRegTrainer(t, d, "fcg_w", 1, 4)
	if _, err := tr.PSIS(context.Background(), PSISOptions{Draws: 10}); err == nil || !strings.Contains(err.Error(), "draws outside") {
		t.Errorf("10 draws: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := tr.PSIS(ctx, PSISOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	c := DefaultConfig()
	c.Data, c.Task, c.Posterior, c.Arch = "synthetic", "regression", "inducing", "mlp:2-8-1"
	c.TestFraction, c.EvalEvery, c.CheckpointEvery = 0, 0, 0
	ind, err := NewWithData(c, hmcTestData(1, 20, 2, 1, 0, 4), hmcTestData(2, 5, 2, 1, 0, 4))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ind.PSIS(context.Background(), PSISOptions{}); !errors.Is(err, bnn.ErrNoDensity) || !strings.Contains(err.Error(), "mixture over the inducing weights") {
		t.Errorf("inducing: %v", err)
	}
}

// testLinearSpec is a single Linear(dim, out) layer with a bias.
func testLinearSpec(dim, out int) *runtime.Spec {
	return &runtime.Spec{Version: 1, InputShape: []int{dim},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: dim, Out: out, Bias: true}}}
}
