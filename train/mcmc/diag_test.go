package mcmc

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ar1 returns m chains of n draws of a stationary Gaussian AR(1) process with coefficient rho
// and unit marginal variance; chain c is shifted by c·shift.
func ar1(rng *rand.Rand, m, n int, rho, shift float64) [][]float64 {
	out := make([][]float64, m)
	for c := range out {
		out[c] = make([]float64, n)
		x := rng.NormFloat64()
		for i := range out[c] {
			out[c][i] = x + shift*float64(c)
			x = rho*x + math.Sqrt(1-rho*rho)*rng.NormFloat64()
		}
	}
	return out
}

func near(t *testing.T, what string, got, want, tol float64) {
	t.Helper()
	if !(math.Abs(got-want) <= tol) {
		t.Errorf("%s = %.10g, want %.10g ± %.3g", what, got, want, tol)
	}
}

// TestRhatBasicHand: chains [1 2 3 4] and [2 3 4 5] split into [1 2] [3 4] [2 3] [4 5]: chain
// means 1.5 3.5 2.5 4.5 around 3, so B = 2/3·(2.25+0.25+0.25+2.25) = 10/3; every within-chain
// variance is 0.5, so W = 0.5; var⁺ = ½·W + B/2 = 23/12 and R̂ = √(var⁺/W) = √(23/6).
func TestRhatBasicHand(t *testing.T) {
	x := [][]float64{{1, 2, 3, 4, 5, 6}, {2, 3, 4, 5, 6, 7}}
	// With 6 draws the halves are [1 2 3] [4 5 6] [2 3 4] [5 6 7]: means 2 5 3 6 around 4,
	// B = 3/3·(4+1+1+4) = 10, W = 1, var⁺ = 2/3 + 10/3 = 4, R̂ = 2.
	near(t, "RhatBasic(6 draws)", RhatBasic(x), 2, 1e-12)
	// The 4-draw case is below the 3-draws-per-half minimum: NaN.
	if v := RhatBasic([][]float64{{1, 2, 3, 4}, {2, 3, 4, 5}}); !math.IsNaN(v) {
		t.Errorf("RhatBasic of 2-draw halves = %v, want NaN", v)
	}
	// rhatOf on already split chains does take the 2-draw case.
	near(t, "rhatOf(2-draw halves)", rhatOf([][]float64{{1, 2}, {3, 4}, {2, 3}, {4, 5}}), math.Sqrt(23.0/6), 1e-12)
	// An odd length drops the middle draw: [1 2 3 99 4 5 6] splits like [1 2 3 4 5 6].
	x[0] = []float64{1, 2, 3, 99, 4, 5, 6}
	x[1] = []float64{2, 3, 4, 99, 5, 6, 7}
	near(t, "RhatBasic(odd)", RhatBasic(x), 2, 1e-12)
}

// TestZScaleTies: the draws 1 2 2 3 have average ranks 1 2.5 2.5 4 and normal scores
// Φ⁻¹((r − 3/8)/(4 + 1/4)): Φ⁻¹(0.625/4.25) = −1.0491313979639711 (Python's
// statistics.NormalDist), 0, 0 and +1.0491313979639711.
func TestZScaleTies(t *testing.T) {
	z := zScale([][]float64{{2, 1}, {3, 2}})
	want := [][]float64{{0, -1.0491313979639711}, {1.0491313979639711, 0}}
	for c := range want {
		for i := range want[c] {
			near(t, "z", z[c][i], want[c][i], 1e-9)
		}
	}
}

// TestAutocovarianceDirect compares the FFT autocovariance with the direct sum.
func TestAutocovarianceDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 37, 64, 100} {
		x := make([]float64, n)
		for i := range x {
			x[i] = 5 + rng.NormFloat64()
		}
		mean := 0.0
		for _, v := range x {
			mean += v
		}
		mean /= float64(n)
		got := Autocovariance(x)
		for lag := 0; lag < n; lag++ {
			s := 0.0
			for i := 0; i+lag < n; i++ {
				s += (x[i] - mean) * (x[i+lag] - mean)
			}
			near(t, "acov", got[lag], s/float64(n), 1e-12)
		}
	}
}

// TestESSKnown checks ESS on AR(1) chains against N·(1 − ρ)/(1 + ρ) (N for iid draws). The
// tolerances are wider than the spread of the estimator over 100 seeds (iid: 0.87–1.05;
// ρ = 0.5: 0.84–1.15; ρ = 0.9 with 5000 draws: 0.64–1.21).
func TestESSKnown(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rho      float64
		n        int
		tol      float64
		tailLow  float64 // tail ESS ≥ tailLow·N(1−ρ)/(1+ρ): indicators decorrelate faster than x
		tailHigh float64
	}{
		{"iid", 0, 2000, 0.15, 0.8, 1.2},
		{"rho0.5", 0.5, 2000, 0.2, 1, 3},
		{"rho0.9", 0.9, 5000, 0.4, 1, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := ar1(rand.New(rand.NewPCG(11, 12)), 4, tc.n, tc.rho, 0)
			want := float64(4*tc.n) * (1 - tc.rho) / (1 + tc.rho)
			for _, e := range []struct {
				name string
				f    func([][]float64) float64
			}{{"ESSBulk", ESSBulk}, {"ESSBasic", ESSBasic}} {
				if got := e.f(x); !(math.Abs(got/want-1) <= tc.tol) {
					t.Errorf("%s = %.0f, want %.0f within %.0f %%", e.name, got, want, 100*tc.tol)
				}
			}
			if got := ESSTail(x); !(got >= tc.tailLow*want && got <= tc.tailHigh*want) {
				t.Errorf("ESSTail = %.0f, want in [%.0f, %.0f]", got, tc.tailLow*want, tc.tailHigh*want)
			}
			if r := Rhat(x); !(r < 1.02) {
				t.Errorf("Rhat of stationary chains = %v, want < 1.02", r)
			}
		})
	}
}

// TestRhatDetects: chains whose means differ by one marginal sd each, and chains of which one
// has three times the scale (only the folded, tail part of R̂ sees that).
func TestRhatDetects(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	x := ar1(rng, 4, 1000, 0, 1)
	if r := Rhat(x); !(r > 1.3) {
		t.Errorf("Rhat of shifted chains = %v, want > 1.3", r)
	}
	if r := RhatBasic(x); !(r > 1.3) {
		t.Errorf("RhatBasic of shifted chains = %v, want > 1.3", r)
	}
	y := ar1(rng, 4, 1000, 0, 0)
	for i := range y[3] {
		y[3][i] *= 3
	}
	if r := RhatBasic(y); !(r < 1.01) {
		t.Errorf("RhatBasic of equal-mean chains = %v, want < 1.01", r)
	}
	if r := Rhat(y); !(r > 1.1) {
		t.Errorf("Rhat of chains with unequal scales = %v, want > 1.1", r)
	}
	// One chain stuck halfway: split-R̂ sees the drift within a chain.
	z := ar1(rng, 1, 2000, 0, 0)
	for i := 1000; i < 2000; i++ {
		z[0][i] += 2
	}
	if r := Rhat(z); !(r > 1.3) {
		t.Errorf("Rhat of a drifting single chain = %v, want > 1.3", r)
	}
}

// TestSummarizeHand: one chain 1 … 8 has mean 4.5, variance 6 (n − 1), type-7 quantiles
// 1 + 7·0.05 = 1.35, 4.5 and 1 + 7·0.95 = 7.65.
func TestSummarizeHand(t *testing.T) {
	s := Summarize([][]float64{{3, 1, 2, 8, 5, 4, 7, 6}})
	near(t, "Mean", s.Mean, 4.5, 1e-12)
	near(t, "SD", s.SD, math.Sqrt(6), 1e-12)
	near(t, "Q5", s.Q5, 1.35, 1e-12)
	near(t, "Q50", s.Q50, 4.5, 1e-12)
	near(t, "Q95", s.Q95, 7.65, 1e-12)
	if !(s.Rhat > 1) || !(s.ESSBulk > 0) || !(s.MCSE > 0) {
		t.Errorf("Summary %+v: want finite diagnostics", s)
	}
}

// TestDiagnosticsUnusable: empty, ragged, short, non-finite and constant input give NaN.
func TestDiagnosticsUnusable(t *testing.T) {
	fs := map[string]func([][]float64) float64{"Rhat": Rhat, "RhatBasic": RhatBasic, "ESSBulk": ESSBulk,
		"ESSTail": ESSTail, "ESSBasic": ESSBasic}
	long := make([]float64, 20)
	for i := range long {
		long[i] = float64(i % 7)
	}
	nan := append([]float64(nil), long...)
	nan[3] = math.NaN()
	inf := append([]float64(nil), long...)
	inf[5] = math.Inf(1)
	cases := map[string][][]float64{
		"empty":    nil,
		"ragged":   {long, long[:10]},
		"short":    {{1, 2, 3, 4, 5}},
		"nan":      {long, nan},
		"inf":      {inf, long},
		"constant": {make([]float64, 20), make([]float64, 20)},
	}
	for cn, x := range cases {
		for fn, f := range fs {
			if v := f(x); !math.IsNaN(v) {
				t.Errorf("%s(%s) = %v, want NaN", fn, cn, v)
			}
		}
	}
	if s := Summarize(cases["nan"]); !math.IsNaN(s.Mean) {
		t.Errorf("Summarize with NaN: Mean = %v, want NaN", s.Mean)
	}
}
