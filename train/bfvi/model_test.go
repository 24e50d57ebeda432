package bfvi

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/f64"
)

func TestModelGradientsFiniteDifference(t *testing.T) {
	tests := []struct {
		name  string
		model Model
	}{
		{"bernoulli", PaperBernoulli()},
		{"cauchy", PaperCauchy()},
		{"linreg", PaperLinReg()},
		{"linreg-reference", &LinReg{x1: PaperLinReg().x1, x2: PaperLinReg().x2, y: PaperLinReg().y, ReferenceSigma: true}},
		{"8schools-cp", EightSchools{}},
		{"8schools-ncp", EightSchools{NonCentred: true}},
		{"8schools-cp-reference", EightSchools{ReferenceTau: true}},
		{"8schools-ncp-reference", EightSchools{NonCentred: true, ReferenceTau: true}},
		{"nnreg", PaperNNRegression()},
	}
	for _, tc := range tests {
		rng := rand.New(rand.NewPCG(5, 17))
		d := tc.model.Dim()
		x, g := make([]float64, d), make([]float64, d)
		for trial := 0; trial < 5; trial++ {
			for i := range x {
				x[i] = 2 * rng.NormFloat64()
			}
			lp := tc.model.LogJoint(x, g)
			if math.IsNaN(lp) || math.IsInf(lp, 0) {
				t.Fatalf("%s: log joint %g at %v", tc.name, lp, x)
			}
			for i := range x {
				h := 1e-6 * math.Max(1, math.Abs(x[i]))
				xp := append([]float64(nil), x...)
				xp[i] += h
				xm := append([]float64(nil), x...)
				xm[i] -= h
				num := (tc.model.LogJoint(xp, nil) - tc.model.LogJoint(xm, nil)) / (2 * h)
				if !(math.Abs(num-g[i]) <= 1e-5*math.Max(1, math.Abs(num))) {
					t.Errorf("%s: ∂/∂x[%d] = %.10g, finite difference %.10g", tc.name, i, g[i], num)
				}
			}
		}
		if c, ok := tc.model.(Constrained); ok {
			if len(c.Names()) != d {
				t.Errorf("%s: %d names for dimension %d", tc.name, len(c.Names()), d)
			}
		}
		if !math.IsNaN(tc.model.LogJoint(make([]float64, d+1), nil)) {
			t.Errorf("%s: wrong-length x not reported", tc.name)
		}
	}
}

// TestLinRegReferenceSigma checks that the reference script's target differs from the model's
// log joint in ρ by exactly the Jacobian log σ′(ρ) = log sigmoid(ρ) of σ = softplus(ρ).
func TestLinRegReferenceSigma(t *testing.T) {
	m := PaperLinReg()
	ref := *m
	ref.ReferenceSigma = true
	for _, rho := range []float64{-8, -1, 0, 0.5, 3, 20} {
		x := []float64{0.3, -1.2, 0.7, rho}
		got := m.LogJoint(x, nil) - ref.LogJoint(x, nil)
		want := math.Log(f64.Sigmoid(rho))
		if !(math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))) {
			t.Errorf("ρ = %g: log joint − reference target = %.12g, want log sigmoid(ρ) = %.12g", rho, got, want)
		}
	}
}

// TestLogEvidence checks the models' normalising constants: the Bernoulli evidence is
// B(3.1, 1.1)/B(1.1, 1.1) and the Cauchy one is the paper's −21.43069 (eq. S11).
func TestLogEvidence(t *testing.T) {
	b := PaperBernoulli()
	g, err := NewGridPosterior(b, -40, 40, 40000)
	if err != nil {
		t.Fatal(err)
	}
	want := f64.LogBeta(3.1, 1.1) - f64.LogBeta(1.1, 1.1)
	if !(math.Abs(g.LogEvidence-want) <= 1e-6) {
		t.Errorf("Bernoulli log evidence %.8f, want %.8f", g.LogEvidence, want)
	}
	for _, x := range []float64{-3, 0, 1.5, 6} {
		if d := math.Abs(g.LogDensity(x) - b.LogPosterior(x)); !(d <= 1e-6) {
			t.Errorf("Bernoulli posterior at %g differs by %g", x, d)
		}
	}
	c, err := NewGridPosterior(PaperCauchy(), -15, 15, 30000)
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(c.LogEvidence-(-21.43069)) <= 1e-4) {
		t.Errorf("Cauchy log evidence %.6f, paper −21.43069", c.LogEvidence)
	}
}

func TestModelBadInput(t *testing.T) {
	if _, err := NewBernoulli([]int{1, 2}, 1, 1); err == nil {
		t.Error("Bernoulli y=2 accepted")
	}
	if _, err := NewBernoulli([]int{1}, 0, 1); err == nil {
		t.Error("Beta(0, 1) accepted")
	}
	if _, err := NewCauchyLocation([]float64{1}, -1); err == nil {
		t.Error("negative Cauchy scale accepted")
	}
	if _, err := NewLinReg([][2]float64{{1, 2}}, nil); err == nil {
		t.Error("mismatched regression data accepted")
	}
}

// TestNNRegression checks the network's output and log joint against a direct evaluation and
// rejects bad settings.
func TestNNRegression(t *testing.T) {
	m := PaperNNRegression()
	if m.Dim() != 10 || len(m.Names()) != 10 || m.Names()[9] != "b2" {
		t.Fatalf("dimension %d, names %v", m.Dim(), m.Names())
	}
	th := []float64{1, -0.5, -2, 0.3, 0.7, 1.5, 0.4, -1.2, 2, 0.1}
	xs, ys := m.Data()
	want := 0.0
	for _, w := range th {
		want += -0.5*w*w - 0.5*math.Log(2*math.Pi)
	}
	for i, x := range xs {
		mu := th[9]
		for k := 0; k < 3; k++ {
			mu += th[6+k] / (1 + math.Exp(-(th[2*k]*x + th[2*k+1])))
		}
		if got := m.Mean(th, x); !(math.Abs(got-mu) <= 1e-14) {
			t.Errorf("Mean(%g) = %g, want %g", x, got, mu)
		}
		r := (ys[i] - mu) / 0.2
		want += -0.5*r*r - math.Log(0.2) - 0.5*math.Log(2*math.Pi)
	}
	if got := m.LogJoint(th, nil); !(math.Abs(got-want) <= 1e-10*math.Abs(want)) {
		t.Errorf("LogJoint = %.12g, want %.12g", got, want)
	}
	if !math.IsNaN(m.Mean(th[:9], 0)) {
		t.Error("Mean with a short θ is not NaN")
	}
	for _, bad := range []func() error{
		func() error { _, err := NewNNRegression([]float64{1}, []float64{1, 2}, 3, 0.2, 1); return err },
		func() error { _, err := NewNNRegression([]float64{1}, []float64{1}, 0, 0.2, 1); return err },
		func() error { _, err := NewNNRegression([]float64{1}, []float64{1}, 3, 0, 1); return err },
		func() error { _, err := NewNNRegression([]float64{math.NaN()}, []float64{1}, 3, 0.2, 1); return err },
		func() error { _, err := NewNNRegression([]float64{1}, []float64{1}, 3, 0.2, math.Inf(1)); return err },
	} {
		if bad() == nil {
			t.Error("bad network settings accepted")
		}
	}
}

// TestEightSchoolsReferenceTarget: the reference scripts' target is the log-joint of (μ, τ, θ)
// at τ = exp(0.1·ρ) without a Jacobian term, written out here from the normal and half-Cauchy
// densities.
func TestEightSchoolsReferenceTarget(t *testing.T) {
	y := []float64{28, 8, -3, 7, -1, 1, 18, 12}
	sd := []float64{15, 10, 16, 11, 9, 11, 10, 18}
	lnorm := func(x, m, s float64) float64 { return -0.5*((x-m)/s)*((x-m)/s) - math.Log(s) - 0.5*math.Log(2*math.Pi) }
	rng := rand.New(rand.NewPCG(9, 9))
	for _, ncp := range []bool{false, true} {
		for trial := 0; trial < 5; trial++ {
			x := make([]float64, 10)
			for i := range x {
				x[i] = 3 * rng.NormFloat64()
			}
			tau := math.Exp(0.1 * x[1])
			want := lnorm(x[0], 0, 5) + math.Log(2/(5*math.Pi)) - math.Log(1+tau*tau/25)
			for j := 0; j < 8; j++ {
				if ncp {
					want += lnorm(x[2+j], 0, 1) + lnorm(y[j], x[0]+tau*x[2+j], sd[j])
				} else {
					want += lnorm(x[2+j], x[0], tau) + lnorm(y[j], x[2+j], sd[j])
				}
			}
			if got := (EightSchools{NonCentred: ncp, ReferenceTau: true}).LogJoint(x, nil); !(math.Abs(got-want) <= 1e-9*(1+math.Abs(want))) {
				t.Fatalf("ncp=%v x=%v: log joint %.12g, written out %.12g", ncp, x, got, want)
			}
		}
	}
}
