package fa

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// --- independent dense references (naive float64, no code under test) ---

// naiveLogDet is log|A| by Gaussian elimination with partial pivoting (A positive definite).
func naiveLogDet(a []float64, n int) float64 {
	m := append([]float64(nil), a...)
	ld := 0.0
	for c := 0; c < n; c++ {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r*n+c]) > math.Abs(m[p*n+c]) {
				p = r
			}
		}
		if p != c {
			for j := 0; j < n; j++ {
				m[c*n+j], m[p*n+j] = m[p*n+j], m[c*n+j]
			}
		}
		ld += math.Log(math.Abs(m[c*n+c]))
		for r := c + 1; r < n; r++ {
			f := m[r*n+c] / m[c*n+c]
			for j := c; j < n; j++ {
				m[r*n+j] -= f * m[c*n+j]
			}
		}
	}
	return ld
}

// naiveCov is F Fᵀ + diag ψ by triple loops.
func naiveCov(f, psi []float64, d, k int) []float64 {
	s := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			for r := 0; r < k; r++ {
				s[i*d+j] += f[i*k+r] * f[j*k+r]
			}
		}
		s[i*d+i] += psi[i]
	}
	return s
}

// denseKL is KL(N(c, S) ‖ N(0, α⁻¹I)) = ½[α tr S + α‖c‖² − D − D log α − log|S|].
func denseKL(c, f, gamma []float64, d, k int, alpha float64) float64 {
	psi := make([]float64, d)
	for i := range psi {
		psi[i] = math.Exp(gamma[i])
	}
	s := naiveCov(f, psi, d, k)
	tr, cc := 0.0, 0.0
	for i := 0; i < d; i++ {
		tr += s[i*d+i]
		cc += c[i] * c[i]
	}
	dd := float64(d)
	return 0.5 * (alpha*tr + alpha*cc - dd - dd*math.Log(alpha) - naiveLogDet(s, d))
}

func randomVIFA(t *testing.T, d, k int, alpha float64, seed uint64) *VIFA {
	t.Helper()
	v, err := NewVIFA(d, VIFAConfig{Rank: k, N: 7, PriorPrecision: alpha, LRMean: 0.1, LRFactors: 0.1, LRLogVar: 0.1, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	m := &Model{D: d, K: k, Mean: make([]float64, d), F: make([]float64, d*k), Psi: make([]float64, d)}
	for i := range m.Mean {
		m.Mean[i] = rng.NormFloat64()
		m.Psi[i] = math.Exp(rng.NormFloat64())
	}
	for i := range m.F {
		m.F[i] = rng.NormFloat64()
	}
	if err := v.SetPosterior(m); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestKLMatchesDense(t *testing.T) {
	for _, tc := range []struct {
		d, k  int
		alpha float64
	}{{1, 1, 0.5}, {2, 1, 0.01}, {5, 2, 1.3}, {9, 4, 7}} {
		v := randomVIFA(t, tc.d, tc.k, tc.alpha, uint64(tc.d))
		got, err := v.KL()
		if err != nil {
			t.Fatal(err)
		}
		want := denseKL(v.c, v.f, v.gamma, tc.d, tc.k, tc.alpha)
		if !(math.Abs(got-want) <= 1e-9*(1+math.Abs(want))) {
			t.Errorf("d=%d k=%d: KL %v, dense %v", tc.d, tc.k, got, want)
		}
	}
}

// TestKLGradientsFiniteDifference checks the Woodbury gradients (eqs. 26–27, 37, 41–42) against
// central differences of the dense KL.
func TestKLGradientsFiniteDifference(t *testing.T) {
	for _, tc := range []struct {
		d, k  int
		alpha float64
	}{{1, 1, 0.5}, {2, 1, 0.01}, {4, 2, 1.3}, {7, 3, 0.2}} {
		v := randomVIFA(t, tc.d, tc.k, tc.alpha, uint64(10+tc.d))
		gc, gf, gg := make([]float64, tc.d), make([]float64, tc.d*tc.k), make([]float64, tc.d)
		if err := v.klGrads(gc, gf, gg); err != nil {
			t.Fatal(err)
		}
		const h = 1e-5
		check := func(name string, p []float64, g []float64) {
			for i := range p {
				old := p[i]
				p[i] = old + h
				up := denseKL(v.c, v.f, v.gamma, tc.d, tc.k, tc.alpha)
				p[i] = old - h
				dn := denseKL(v.c, v.f, v.gamma, tc.d, tc.k, tc.alpha)
				p[i] = old
				fd := (up - dn) / (2 * h)
				if !(math.Abs(fd-g[i]) <= 1e-6*(1+math.Abs(fd))) {
					t.Errorf("d=%d k=%d: ∂KL/∂%s[%d] = %v, finite difference %v", tc.d, tc.k, name, i, g[i], fd)
				}
			}
		}
		check("c", v.c, gc)
		check("F", v.f, gf)
		check("γ", v.gamma, gg)
	}
}

// quadNLL is the "likelihood" ½(θ−μ)ᵀP(θ−μ); its expectation under N(c, S) is
// ½[(c−μ)ᵀP(c−μ) + tr(PS)].
type quadNLL struct {
	mu, p []float64
	d     int
}

func (q quadNLL) grad(theta, g []float64) (float64, error) {
	v := 0.0
	for i := 0; i < q.d; i++ {
		s := 0.0
		for j := 0; j < q.d; j++ {
			s += q.p[i*q.d+j] * (theta[j] - q.mu[j])
		}
		g[i] = s
		v += 0.5 * (theta[i] - q.mu[i]) * s
	}
	return v, nil
}

func (q quadNLL) expected(c, f, gamma []float64, k int) float64 {
	psi := make([]float64, q.d)
	for i := range psi {
		psi[i] = math.Exp(gamma[i])
	}
	s := naiveCov(f, psi, q.d, k)
	e := 0.0
	for i := 0; i < q.d; i++ {
		for j := 0; j < q.d; j++ {
			e += 0.5 * q.p[i*q.d+j] * ((c[i]-q.mu[i])*(c[j]-q.mu[j]) + s[j*q.d+i])
		}
	}
	return e
}

func randomQuad(rng *rand.Rand, d int) quadNLL {
	a := make([]float64, d*d)
	for i := range a {
		a[i] = rng.NormFloat64()
	}
	p := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			for r := 0; r < d; r++ {
				p[i*d+j] += a[i*d+r] * a[j*d+r] / float64(d)
			}
		}
		p[i*d+i] += 0.5
	}
	mu := make([]float64, d)
	for i := range mu {
		mu[i] = rng.NormFloat64()
	}
	return quadNLL{mu: mu, p: p, d: d}
}

// TestLikelihoodGradientsReparameterised checks the Monte Carlo gradients of N·E_q[NLL]
// (eqs. 32, 33, 43) against finite differences of the exact expectation of a quadratic NLL.
func TestLikelihoodGradientsReparameterised(t *testing.T) {
	l := 200000
	if testing.Short() {
		l = 40000
	}
	const d, k = 3, 2
	v := randomVIFA(t, d, k, 1, 5)
	v.l = l
	q := randomQuad(rand.New(rand.NewPCG(3, 4)), d)
	gc, gf, gg := make([]float64, d), make([]float64, d*k), make([]float64, d)
	if _, err := v.likGrads(q.grad, gc, gf, gg); err != nil {
		t.Fatal(err)
	}
	n := float64(v.cfg.N)
	const h = 1e-5
	check := func(name string, p, g []float64) {
		for i := range p {
			old := p[i]
			p[i] = old + h
			up := q.expected(v.c, v.f, v.gamma, k)
			p[i] = old - h
			dn := q.expected(v.c, v.f, v.gamma, k)
			p[i] = old
			fd := n * (up - dn) / (2 * h)
			// Monte Carlo error ~ n·scale/√L; allow 6/√L relative to the scale of the problem.
			tol := 6 * n * 3 / math.Sqrt(float64(l))
			if !(math.Abs(fd-g[i]) <= tol) {
				t.Errorf("%s[%d]: MC gradient %v, finite difference of the exact expectation %v (tol %v)", name, i, g[i], fd, tol)
			}
		}
	}
	check("c", v.c, gc)
	check("F", v.f, gf)
	check("γ", v.gamma, gg)
}

// TestVIFARecoversGaussianPosterior: with a Gaussian "likelihood" ½(θ−μ)ᵀP(θ−μ) (N = 1) the
// exact posterior is N((P + αI)⁻¹Pμ, (P + αI)⁻¹); with K = D − 1 ≥ 1 it is an FA model up to a
// diagonal, so VIFA must get close.
func TestVIFARecoversGaussianPosterior(t *testing.T) {
	steps := 6000
	if testing.Short() {
		steps = 3000
	}
	const d, alpha = 3, 0.5
	q := randomQuad(rand.New(rand.NewPCG(8, 9)), d)
	prec := append([]float64(nil), q.p...)
	for i := 0; i < d; i++ {
		prec[i*d+i] += alpha
	}
	sTrue, err := spdInverse(prec, d) // checked independently below
	if err != nil {
		t.Fatal(err)
	}
	// independent check of the inverse
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			s := 0.0
			for r := 0; r < d; r++ {
				s += prec[i*d+r] * sTrue[r*d+j]
			}
			if want := map[bool]float64{true: 1, false: 0}[i == j]; !(math.Abs(s-want) <= 1e-9) {
				t.Fatalf("inverse check failed")
			}
		}
	}
	pm := make([]float64, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			pm[i] += q.p[i*d+j] * q.mu[j]
		}
	}
	mTrue := make([]float64, d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			mTrue[i] += sTrue[i*d+j] * pm[j]
		}
	}
	v, err := NewVIFA(d, VIFAConfig{Rank: 2, N: 1, PriorPrecision: alpha, MCSamples: 8,
		LRMean: 0.02, LRFactors: 0.02, LRLogVar: 0.02, Clip: 100, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for s := 0; s < steps; s++ {
		if s > steps/2 {
			v.SetLRFactor(float64(steps-s) / float64(steps/2))
		}
		if _, err := v.Step(q.grad); err != nil {
			t.Fatal(err)
		}
	}
	post := v.Posterior()
	if e := RelDistance(post.Mean, mTrue); !(e <= 0.03) {
		t.Errorf("relative mean error %v (mean %v, want %v)", e, post.Mean, mTrue)
	}
	if e := RelDistance(post.Covariance(), sTrue); !(e <= 0.1) {
		t.Errorf("relative covariance error %v (cov %v, want %v)", e, post.Covariance(), sTrue)
	}
}

func TestVIFATwoStageSchedule(t *testing.T) {
	q := randomQuad(rand.New(rand.NewPCG(1, 1)), 4)
	v, err := NewVIFA(4, VIFAConfig{Rank: 1, N: 10, PriorPrecision: 1, MCSamples: 2, LRMean: 0.01,
		LRFactors: 0.01, LRLogVar: 0.01, MeanOnlySteps: 3, RampSteps: 4, Clip: 10, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	before := v.Posterior()
	for s := 0; s < 3; s++ {
		if _, err := v.Step(q.grad); err != nil {
			t.Fatal(err)
		}
	}
	mid := v.Posterior()
	if RelDistance(mid.Mean, before.Mean) == 0 {
		t.Error("stage 1 did not move c")
	}
	if RelDistance(mid.F, before.F) != 0 || RelDistance(mid.Psi, before.Psi) != 0 {
		t.Error("stage 1 changed F or ψ")
	}
	if _, err := v.Step(q.grad); err != nil {
		t.Fatal(err)
	}
	after := v.Posterior()
	if RelDistance(after.F, mid.F) == 0 || RelDistance(after.Psi, mid.Psi) == 0 {
		t.Error("stage 2 did not move F and ψ")
	}
	if v.Steps() != 4 {
		t.Errorf("Steps() = %d, want 4", v.Steps())
	}
}

func TestVIFAClip(t *testing.T) {
	q := randomQuad(rand.New(rand.NewPCG(1, 2)), 3)
	for i := range q.mu {
		q.mu[i] *= 100
	}
	v, err := NewVIFA(3, VIFAConfig{Rank: 1, N: 1000, PriorPrecision: 1, LRMean: 0.1, Optimizer: "sgd", Clip: 1, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	c0 := v.Posterior().Mean
	st, err := v.Step(q.grad)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Clipped || !(st.GradNorm > 1) {
		t.Fatalf("stats %+v: want a clipped step", st)
	}
	// With SGD and clip 1 the mean moves by at most lr·1.
	moved := 0.0
	for i, c := range v.Posterior().Mean {
		moved += (c - c0[i]) * (c - c0[i])
	}
	if !(math.Sqrt(moved) <= 0.1+1e-12) {
		t.Errorf("c moved %v > lr·clip", math.Sqrt(moved))
	}
}

func TestVIFAErrors(t *testing.T) {
	ok := VIFAConfig{Rank: 1, N: 1, PriorPrecision: 1}
	for _, tc := range []struct {
		name string
		d    int
		mod  func(*VIFAConfig)
		want string
	}{
		{"dim", 0, func(*VIFAConfig) {}, "dimension"},
		{"rank", 2, func(c *VIFAConfig) { c.Rank = 3 }, "rank"},
		{"n", 2, func(c *VIFAConfig) { c.N = 0 }, "N"},
		{"alpha", 2, func(c *VIFAConfig) { c.PriorPrecision = math.NaN() }, "prior precision"},
		{"lr", 2, func(c *VIFAConfig) { c.LRMean = -1 }, "learning rates"},
		{"opt", 2, func(c *VIFAConfig) { c.Optimizer = "rmsprop" }, "optimizer"},
		{"init", 2, func(c *VIFAConfig) { c.InitMean = []float64{1} }, "initial mean"},
		{"clip", 2, func(c *VIFAConfig) { c.Clip = -1 }, "clip"},
	} {
		cfg := ok
		tc.mod(&cfg)
		if _, err := NewVIFA(tc.d, cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %q", tc.name, err, tc.want)
		}
	}
	v, err := NewVIFA(2, ok)
	if err != nil {
		t.Fatal(err)
	}
	bad := func(theta, g []float64) (float64, error) { g[0] = math.NaN(); return 0, nil }
	before := v.Posterior()
	if _, err := v.Step(bad); err == nil {
		t.Error("NaN gradient accepted")
	}
	if RelDistance(v.Posterior().Mean, before.Mean) != 0 && !math.IsNaN(RelDistance(v.Posterior().Mean, before.Mean)) {
		t.Error("failed step changed the posterior")
	}
	if err := v.SetPosterior(&Model{D: 2, K: 1, Mean: make([]float64, 2), F: make([]float64, 2), Psi: []float64{1, -1}}); err == nil {
		t.Error("negative ψ accepted")
	}
}

func TestVIFAClipPerParameter(t *testing.T) {
	q := randomQuad(rand.New(rand.NewPCG(1, 3)), 3)
	for i := range q.mu {
		q.mu[i] *= 100
	}
	v, err := NewVIFA(3, VIFAConfig{Rank: 1, N: 1000, PriorPrecision: 1, LRMean: 0.1, LRFactors: 0.1, LRLogVar: 0.1,
		Optimizer: "sgd", Clip: 1, ClipPerParameter: true, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	before := v.Posterior()
	st, err := v.Step(q.grad)
	if err != nil {
		t.Fatal(err)
	}
	after := v.Posterior()
	// Each of c, F, γ moves by at most lr·clip = 0.1, and each is clipped (all gradients are large).
	dist := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += (a[i] - b[i]) * (a[i] - b[i])
		}
		return math.Sqrt(s)
	}
	gb, ga := make([]float64, 3), make([]float64, 3)
	for i := range gb {
		gb[i], ga[i] = math.Log(before.Psi[i]), math.Log(after.Psi[i])
	}
	for name, d := range map[string]float64{"c": dist(after.Mean, before.Mean), "F": dist(after.F, before.F), "γ": dist(ga, gb)} {
		if !(d <= 0.1+1e-12) || !(d >= 0.1-1e-9) {
			t.Errorf("%s moved %v, want exactly lr·clip = 0.1", name, d)
		}
	}
	if !st.Clipped {
		t.Error("not reported as clipped")
	}
}
