package mcmc

import (
	"context"
	"errors"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// seedOffset shifts every test seed (edit it to check that the tolerances are not tuned to one
// seed).
const seedOffset = 0

// testConfig is DefaultConfig with a fixed seed and, under -short (QEMU CI), half the
// iterations.
func testConfig(seed uint64) Config {
	cfg := DefaultConfig()
	cfg.Seed = seed + seedOffset
	if testing.Short() {
		cfg.Warmup, cfg.Draws = 500, 500
	}
	return cfg
}

func sample(t *testing.T, f LogDensity, dim int, cfg Config) *Result {
	t.Helper()
	res, err := Sample(context.Background(), f, dim, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// gaussian is the log density of N(mu, Σ) given the precision matrix prec = Σ⁻¹ (row-major).
func gaussian(mu, prec []float64) LogDensity {
	d := len(mu)
	return func(x, g []float64) float64 {
		lp := 0.0
		for i := 0; i < d; i++ {
			s := 0.0
			for j := 0; j < d; j++ {
				s += prec[i*d+j] * (x[j] - mu[j])
			}
			g[i] = -s
			lp -= 0.5 * (x[i] - mu[i]) * s
		}
		return lp
	}
}

// mapDraws applies f to every draw, giving [chain][draw].
func mapDraws(r *Result, f func(x []float64) float64) [][]float64 {
	out := make([][]float64, r.Chains)
	for c := range out {
		out[c] = make([]float64, r.Draws)
		for i := range out[c] {
			out[c][i] = f(r.Draw(c, i))
		}
	}
	return out
}

// checkExpectation asserts that the pooled mean of v is within 5 Monte Carlo standard errors
// (sd/√ESS, with the split-chain ESS of v) of the exact expectation want, and that the ESS is
// at least minESS so that the check has power.
func checkExpectation(t *testing.T, what string, v [][]float64, want, minESS float64) {
	t.Helper()
	s := Summarize(v)
	ess := ESSBasic(v)
	if !(ess >= minESS) {
		t.Errorf("%s: ESS %.0f < %.0f", what, ess, minESS)
	}
	tol := 5 * s.SD / math.Sqrt(ess)
	if !(math.Abs(s.Mean-want) <= tol) {
		t.Errorf("%s = %.5g, want %.5g ± %.3g (5 sd/√ESS, ESS %.0f)", what, s.Mean, want, tol, ess)
	}
}

// checkHealthy asserts R̂ < 1.01 (1.02 under -short, whose 2000 draws give a noisier R̂) for
// every parameter and no divergences.
func checkHealthy(t *testing.T, r *Result) {
	t.Helper()
	limit := 1.01
	if testing.Short() {
		limit = 1.02
	}
	for j, s := range r.Summary() {
		if !(s.Rhat < limit) {
			t.Errorf("parameter %d: R̂ = %.4f, want < %g", j, s.Rhat, limit)
		}
	}
	if n := r.Divergences(); n != 0 {
		t.Errorf("%d divergences, want 0", n)
	}
}

// TestStandardNormal samples N(0, I) in 1 and 10 dimensions and checks E[xᵢ] = 0,
// E[xᵢ²] = 1 and, in 10 dimensions, E[x₀x₁] = 0.
func TestStandardNormal(t *testing.T) {
	for _, dim := range []int{1, 10} {
		r := sample(t, gaussian(make([]float64, dim), identity(dim)), dim, testConfig(uint64(dim)))
		checkHealthy(t, r)
		minESS := float64(r.Chains*r.Draws) / 4
		for j := 0; j < dim; j++ {
			checkExpectation(t, "E[x]", r.Param(j), 0, minESS)
			checkExpectation(t, "E[x²]", mapDraws(r, func(x []float64) float64 { return x[j] * x[j] }), 1, minESS/4)
		}
		if dim > 1 {
			checkExpectation(t, "E[x₀x₁]", mapDraws(r, func(x []float64) float64 { return x[0] * x[1] }), 0, minESS/4)
		}
		for c, in := range r.Info {
			// Dual averaging targets a mean acceptance statistic of 0.8; its final averaged
			// step size runs a little smaller, as in Stan.
			if !(in.MeanAcceptStat > 0.7 && in.MeanAcceptStat < 0.97) {
				t.Errorf("dim %d chain %d: mean accept stat %.3f, want in (0.7, 0.97)", dim, c, in.MeanAcceptStat)
			}
			if !(in.MeanTreeDepth >= 1 && in.MeanTreeDepth <= 4) || in.MaxDepthHits != 0 {
				t.Errorf("dim %d chain %d: mean tree depth %.2f (%d at the maximum), want in [1, 4]", dim, c,
					in.MeanTreeDepth, in.MaxDepthHits)
			}
			// The last warm-up window (200 draws under -short, 500 otherwise) estimates the
			// variances 1; a factor of 2 allows for its noise.
			for i, v := range in.InvMetric {
				if !(v > 0.5 && v < 2) {
					t.Errorf("dim %d chain %d: adapted inverse metric[%d] = %.3f, want 1 within a factor of 2", dim, c, i, v)
				}
			}
		}
	}
}

func identity(d int) []float64 {
	m := make([]float64, d*d)
	for i := 0; i < d; i++ {
		m[i*d+i] = 1
	}
	return m
}

// TestCorrelatedGaussian samples a 2-D Gaussian with means (1, −2), sds (1, 3) and correlation
// 0.9: Σ = [[1, 2.7], [2.7, 9]], Σ⁻¹ = [[9, −2.7], [−2.7, 1]]/(9 − 7.29).
func TestCorrelatedGaussian(t *testing.T) {
	mu := []float64{1, -2}
	sigma := []float64{1, 2.7, 2.7, 9}
	det := 9 - 2.7*2.7
	prec := []float64{9 / det, -2.7 / det, -2.7 / det, 1 / det}
	for _, alg := range []Algorithm{NUTS, StaticHMC} {
		t.Run(alg.String(), func(t *testing.T) {
			cfg := testConfig(7)
			cfg.Algorithm = alg
			cfg.NumSteps = 7
			// With a diagonal metric NUTS U-turns on the narrow direction's fast oscillation and
			// gets an ESS of only ~0.15 per draw here (as static HMC does ~0.4); 3000 draws keep
			// R̂'s noise below 1.01, and at ~7 gradients of a 2-D density per iteration they are
			// cheap even under -short.
			cfg.Warmup, cfg.Draws = 1000, 3000
			r := sample(t, gaussian(mu, prec), 2, cfg)
			checkHealthy(t, r)
			minESS := float64(r.Chains*r.Draws) / 20
			for i := 0; i < 2; i++ {
				checkExpectation(t, "E[x]", r.Param(i), mu[i], minESS)
				for j := i; j < 2; j++ {
					checkExpectation(t, "Cov", mapDraws(r, func(x []float64) float64 { return (x[i] - mu[i]) * (x[j] - mu[j]) }),
						sigma[i*2+j], minESS/4)
				}
			}
			for c, in := range r.Info {
				// Diagonal adaptation estimates the marginal variances 1 and 9 (from a last window of
				// 200 to 500 strongly autocorrelated draws, hence the loose factor of 2).
				if !(in.InvMetric[0] > 0.5 && in.InvMetric[0] < 2 && in.InvMetric[1] > 4.5 && in.InvMetric[1] < 18) {
					t.Errorf("chain %d: adapted inverse metric %v, want (1, 9) within a factor of 2", c, in.InvMetric)
				}
			}
		})
	}
}

// TestConjugateNormal: y₁…y₈ ~ N(θ, σ² = 4) with the prior θ ~ N(1, 9). The posterior is
// normal with precision 1/9 + 8/4 = 19/9 and mean (1/9 + Σy/4)/(19/9); Σy = 20 gives mean
// (1/9 + 5)·9/19 = 46/19 and sd 3/√19. Checks the mean, sd and the 5 %/95 % quantiles μ ∓
// 1.6448536·sd, each within 5 Monte Carlo standard errors.
func TestConjugateNormal(t *testing.T) {
	y := []float64{3.1, 0.4, 2.2, 4.9, 1.7, 2.6, 3.8, 1.3}
	f := func(x, g []float64) float64 {
		th := x[0]
		lp := -(th - 1) * (th - 1) / 18
		g[0] = -(th - 1) / 9
		for _, v := range y {
			lp -= (v - th) * (v - th) / 8
			g[0] += (v - th) / 4
		}
		return lp
	}
	r := sample(t, f, 1, testConfig(3))
	checkHealthy(t, r)
	mu, sd := 46.0/19, 3/math.Sqrt(19)
	x := r.Param(0)
	n := float64(r.Chains * r.Draws)
	checkExpectation(t, "posterior mean", x, mu, n/4)
	checkExpectation(t, "posterior variance", mapDraws(r, func(x []float64) float64 { return (x[0] - mu) * (x[0] - mu) }),
		sd*sd, n/8)
	s := Summarize(x)
	// A p-quantile estimate has sd √(p(1−p))/(φ(z_p)/sd·√ESS); φ(1.6448536) = 0.10313564.
	qtol := 5 * math.Sqrt(0.05*0.95) / (0.10313564 / sd * math.Sqrt(s.ESSTail))
	near(t, "Q5", s.Q5, mu-1.6448536*sd, qtol)
	near(t, "Q95", s.Q95, mu+1.6448536*sd, qtol)
	near(t, "Q50", s.Q50, mu, 5*math.Sqrt(0.25)/(1/math.Sqrt(2*math.Pi)/sd*math.Sqrt(s.ESSBulk)))
}

// TestBetaLogit: 7 successes in 20 trials with a Beta(2, 3) prior give the posterior
// Beta(9, 16): mean 9/25, variance 9·16/(25²·26). The sampler works on x = logit θ, whose
// density (with the Jacobian θ(1 − θ)) is θ⁹(1 − θ)¹⁶: log p = 9 log θ + 16 log(1 − θ),
// d/dx = 9(1 − θ) − 16θ.
func TestBetaLogit(t *testing.T) {
	f := func(x, g []float64) float64 {
		th := 1 / (1 + math.Exp(-x[0]))
		g[0] = 9*(1-th) - 16*th
		return 9*math.Log(th) + 16*math.Log1p(-th)
	}
	r := sample(t, f, 1, testConfig(4))
	checkHealthy(t, r)
	theta := func(x []float64) float64 { return 1 / (1 + math.Exp(-x[0])) }
	n := float64(r.Chains * r.Draws)
	mean, variance := 9.0/25, 9.0*16/(25*25*26)
	checkExpectation(t, "E[θ]", mapDraws(r, theta), mean, n/4)
	checkExpectation(t, "Var[θ]", mapDraws(r, func(x []float64) float64 { d := theta(x) - mean; return d * d }), variance, n/8)
}

// TestFunnelDivergences: Neal's funnel in the centred parameterisation, v ~ N(0, 3²),
// xᵢ ~ N(0, e^v) for 9 coordinates, is the textbook source of divergences.
func TestFunnelDivergences(t *testing.T) {
	f := func(x, g []float64) float64 {
		v := x[0]
		ev := math.Exp(-v)
		lp := -v * v / 18
		g[0] = -v / 9
		for i := 1; i < len(x); i++ {
			lp -= 0.5*x[i]*x[i]*ev + 0.5*v
			g[0] += 0.5*x[i]*x[i]*ev - 0.5
			g[i] = -x[i] * ev
		}
		return lp
	}
	cfg := testConfig(5)
	cfg.Chains, cfg.Warmup, cfg.Draws = 2, 300, 300
	r := sample(t, f, 10, cfg)
	div := 0
	for _, in := range r.Info {
		div += in.Divergences + in.WarmupDivergences
	}
	if div == 0 {
		t.Error("no divergences on the centred funnel")
	}
	for _, v := range r.Samples {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatal("non-finite draw")
		}
	}
	t.Logf("%d divergences (%d kept)", div, r.Divergences())
}

// TestNonFiniteDensity: a density that is NaN (or has a NaN gradient) on x ≥ 0 is the
// half-normal on x < 0; the sampler must treat the NaN as a divergence, keep only x < 0 and
// still find E[x] = −√(2/π).
func TestNonFiniteDensity(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    LogDensity
	}{
		{"nanValue", func(x, g []float64) float64 {
			if x[0] >= 0 {
				return math.NaN()
			}
			g[0] = -x[0]
			return -x[0] * x[0] / 2
		}},
		{"nanGradient", func(x, g []float64) float64 {
			g[0] = -x[0]
			if x[0] >= 0 {
				g[0] = math.NaN()
			}
			return -x[0] * x[0] / 2
		}},
		{"infValue", func(x, g []float64) float64 {
			g[0] = -x[0]
			if x[0] >= 0 {
				return math.Inf(1)
			}
			return -x[0] * x[0] / 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample(t, tc.f, 1, testConfig(6))
			for _, v := range r.Samples {
				if !(v < 0) {
					t.Fatalf("draw %v outside the support", v)
				}
			}
			checkExpectation(t, "E[x]", r.Param(0), -math.Sqrt(2/math.Pi), 100)
		})
	}
	nan := func(x, g []float64) float64 { return math.NaN() }
	_, err := Sample(context.Background(), nan, 2, testConfig(1))
	if err == nil || !strings.Contains(err.Error(), "initial") {
		t.Errorf("everywhere-NaN density: err = %v, want an initial-point error", err)
	}
	cfg := testConfig(1)
	cfg.Inits = [][]float64{{1, 1}}
	_, err = Sample(context.Background(), nan, 2, cfg)
	if err == nil || !strings.Contains(err.Error(), "Inits") {
		t.Errorf("NaN at Config.Inits: err = %v, want it named", err)
	}
}

// TestConfigValidation: every invalid field is named in the error.
func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		field string
		mod   func(*Config)
	}{
		{"Algorithm", func(c *Config) { c.Algorithm = 7 }},
		{"Chains", func(c *Config) { c.Chains = 0 }},
		{"Warmup", func(c *Config) { c.Warmup = -1 }},
		{"Draws", func(c *Config) { c.Draws = 0 }},
		{"MaxTreeDepth", func(c *Config) { c.MaxTreeDepth = 0 }},
		{"NumSteps", func(c *Config) { c.Algorithm, c.NumSteps = StaticHMC, 0 }},
		{"TargetAccept", func(c *Config) { c.TargetAccept = 1 }},
		{"TargetAccept", func(c *Config) { c.TargetAccept = math.NaN() }},
		{"MaxEnergyError", func(c *Config) { c.MaxEnergyError = math.Inf(1) }},
		{"StepSize", func(c *Config) { c.StepSize = 0 }},
		{"InitBuffer", func(c *Config) { c.InitBuffer = -1 }},
		{"TermBuffer", func(c *Config) { c.TermBuffer = -1 }},
		{"BaseWindow", func(c *Config) { c.BaseWindow = 0 }},
		{"InitRadius", func(c *Config) { c.InitRadius = -2 }},
		{"Parallelism", func(c *Config) { c.Parallelism = -1 }},
		{"InvMetric", func(c *Config) { c.InvMetric = []float64{1} }},
		{"InvMetric[1]", func(c *Config) { c.InvMetric = []float64{1, 0} }},
		{"Inits", func(c *Config) { c.Inits = [][]float64{{0, 0}, {0, 0}} }},
		{"Inits[0][1]", func(c *Config) { c.Inits = [][]float64{{0, math.NaN()}} }},
	} {
		cfg := DefaultConfig()
		tc.mod(&cfg)
		_, err := Sample(context.Background(), gaussian([]float64{0, 0}, identity(2)), 2, cfg)
		if err == nil || !strings.Contains(err.Error(), "Config."+tc.field+" ") {
			t.Errorf("%s: err = %v, want it to name Config.%s", tc.field, err, tc.field)
		}
	}
	if err := (Config{}).Validate(2); err == nil {
		t.Error("the zero Config validated")
	}
	if err := DefaultConfig().Validate(0); err == nil {
		t.Error("dimension 0 validated")
	}
	if _, err := Sample(context.Background(), nil, 2, DefaultConfig()); err == nil {
		t.Error("nil LogDensity accepted")
	}
}

// TestDeterminism: the same seed gives bit-identical draws and stats whatever GOMAXPROCS and
// Parallelism; another seed gives other draws.
func TestDeterminism(t *testing.T) {
	f := gaussian([]float64{0, 1, 2}, []float64{2, 0.5, 0, 0.5, 1, 0.3, 0, 0.3, 4})
	cfg := testConfig(42)
	cfg.Warmup, cfg.Draws = 200, 100
	old := runtime.GOMAXPROCS(1)
	a := sample(t, f, 3, cfg)
	runtime.GOMAXPROCS(2)
	b := sample(t, f, 3, cfg)
	runtime.GOMAXPROCS(old)
	cfg.Parallelism = 1
	c := sample(t, f, 3, cfg)
	for _, o := range []*Result{b, c} {
		for i := range a.Samples {
			if math.Float64bits(a.Samples[i]) != math.Float64bits(o.Samples[i]) {
				t.Fatalf("sample %d differs: %v vs %v", i, a.Samples[i], o.Samples[i])
			}
		}
		for ch := range a.Stats {
			for i := range a.Stats[ch] {
				if a.Stats[ch][i] != o.Stats[ch][i] {
					t.Fatalf("stats of chain %d draw %d differ", ch, i)
				}
			}
		}
	}
	// Chains differ from each other, and another seed differs.
	if a.Draw(0, 0)[0] == a.Draw(1, 0)[0] {
		t.Error("chains 0 and 1 start identically")
	}
	cfg.Seed = 43
	d := sample(t, f, 3, cfg)
	if d.Samples[0] == a.Samples[0] && d.Samples[len(d.Samples)-1] == a.Samples[len(a.Samples)-1] {
		t.Error("seed 43 gave seed 42's draws")
	}
}

// TestCancel: a cancelled context stops the chains with its error.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Sample(ctx, gaussian([]float64{0}, identity(1)), 1, DefaultConfig())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

// TestNoAdaptation: without warm-up the step size and metric stay as configured.
func TestNoAdaptation(t *testing.T) {
	cfg := testConfig(9)
	cfg.Warmup, cfg.Draws, cfg.StepSize = 0, 200, 0.3
	cfg.InvMetric = []float64{2}
	r := sample(t, gaussian([]float64{0}, identity(1)), 1, cfg)
	for _, in := range r.Info {
		if in.StepSize != 0.3 || in.InvMetric[0] != 2 {
			t.Errorf("step size %v, inverse metric %v; want 0.3, 2", in.StepSize, in.InvMetric)
		}
	}
}

// TestProgress: Progress sees every iteration of every chain, in order, warm-up included.
func TestProgress(t *testing.T) {
	for _, par := range []int{1, 0} {
		cfg := testConfig(10)
		cfg.Chains, cfg.Warmup, cfg.Draws, cfg.Parallelism = 3, 30, 20, par
		var mu sync.Mutex
		last := make([]int, cfg.Chains)
		cfg.Progress = func(c, done int) {
			mu.Lock()
			defer mu.Unlock()
			if done != last[c]+1 {
				t.Errorf("parallelism %d: chain %d reported %d after %d", par, c, done, last[c])
			}
			last[c] = done
		}
		sample(t, gaussian([]float64{0}, identity(1)), 1, cfg)
		for c, n := range last {
			if n != cfg.Warmup+cfg.Draws {
				t.Errorf("parallelism %d: chain %d reported %d iterations, want %d", par, c, n, cfg.Warmup+cfg.Draws)
			}
		}
	}
}
