package fa

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/kernels"
)

func randomSym(rng *rand.Rand, n int) []float64 {
	a := make([]float64, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j <= i; j++ {
			v := rng.NormFloat64()
			a[i*n+j], a[j*n+i] = v, v
		}
	}
	return a
}

// residual is max_k ‖A v_k − λ_k v_k‖ over the given columns of vecs (n×cols).
func residual(a []float64, n int, vals, vecs []float64, cols int) float64 {
	worst := 0.0
	for c := range vals {
		r := 0.0
		for i := 0; i < n; i++ {
			s := -vals[c] * vecs[i*cols+c]
			for j := 0; j < n; j++ {
				s += a[i*n+j] * vecs[j*cols+c]
			}
			r += s * s
		}
		worst = math.Max(worst, math.Sqrt(r))
	}
	return worst
}

func TestSymEigen(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 5, 20} {
		a := randomSym(rng, n)
		vals, vecs := symEigen(a, n)
		if r := residual(a, n, vals, vecs, n); !(r <= 1e-9) {
			t.Errorf("n=%d: residual %v", n, r)
		}
		for i := 1; i < n; i++ {
			if !(vals[i] >= vals[i-1]) {
				t.Errorf("n=%d: eigenvalues not ascending", n)
			}
		}
		// orthonormal
		for p := 0; p < n; p++ {
			for q := 0; q < n; q++ {
				s := 0.0
				for i := 0; i < n; i++ {
					s += vecs[i*n+p] * vecs[i*n+q]
				}
				want := 0.0
				if p == q {
					want = 1
				}
				if !(math.Abs(s-want) <= 1e-9) {
					t.Fatalf("n=%d: eigenvectors not orthonormal", n)
				}
			}
		}
	}
}

func TestTopEigenMatchesJacobi(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct{ n, k int }{{1, 1}, {2, 1}, {3, 3}, {10, 4}, {40, 10}} {
		// A Wishart matrix, as in Algorithm 4.
		g := make([]float64, tc.n*tc.n)
		for i := range g {
			g[i] = rng.NormFloat64()
		}
		a := make([]float64, tc.n*tc.n)
		for i := 0; i < tc.n; i++ {
			for j := 0; j < tc.n; j++ {
				for r := 0; r < tc.n; r++ {
					a[i*tc.n+j] += g[i*tc.n+r] * g[j*tc.n+r]
				}
			}
		}
		vals, vecs := topEigen(a, tc.n, tc.k)
		jv, _ := symEigen(a, tc.n)
		for e := 0; e < tc.k; e++ {
			want := jv[tc.n-1-e]
			if !(math.Abs(vals[e]-want) <= 1e-9*(1+math.Abs(want))) {
				t.Errorf("n=%d: eigenvalue %d = %v, Jacobi %v", tc.n, e, vals[e], want)
			}
		}
		if r := residual(a, tc.n, vals, vecs, tc.k); !(r <= 1e-7*(1+math.Abs(vals[0]))) {
			t.Errorf("n=%d k=%d: residual %v", tc.n, tc.k, r)
		}
	}
}

func TestOrthonormalColumns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	d, k := 30, 6
	q := orthonormalColumns(rng, d, k)
	g := kernels.MatMul(true, false, k, k, d, q, q)
	for i := 0; i < k; i++ {
		for j := 0; j < k; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if !(math.Abs(g[i*k+j]-want) <= 1e-12) {
				t.Fatalf("QᵀQ[%d,%d] = %v", i, j, g[i*k+j])
			}
		}
	}
}

func TestGenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	// A constant spectrum makes F = √s² V_K with orthonormal V_K.
	m, err := Generate(rng, 25, 4, 3, 3)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	g := kernels.MatMul(true, false, 4, 4, 25, m.F, m.F)
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			want := 0.0
			if i == j {
				want = 3
			}
			if !(math.Abs(g[i*4+j]-want) <= 1e-9) {
				t.Fatalf("FᵀF[%d,%d] = %v, want %v", i, j, g[i*4+j], want)
			}
		}
	}
	m, err = Generate(rng, 50, 5, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range m.Psi {
		// ψ ≤ max s² ≤ 100; row norms² of F are s_i² ‖V_K row‖² ≤ s_i² ≤ 100.
		rn := 0.0
		for j := 0; j < 5; j++ {
			rn += m.F[i*5+j] * m.F[i*5+j]
		}
		if !(p > 0 && p <= 100) || !(rn <= 100) {
			t.Fatalf("row %d: ψ = %v, ‖F_i‖² = %v", i, p, rn)
		}
	}
	for _, bad := range []struct {
		d, k   int
		lo, hi float64
	}{{0, 1, 1, 2}, {3, 4, 1, 2}, {3, 1, 0, 2}, {3, 1, 2, 1}, {3, 1, 1, math.Inf(1)}} {
		if _, err := Generate(rng, bad.d, bad.k, bad.lo, bad.hi); err == nil {
			t.Errorf("Generate(%+v) accepted", bad)
		}
	}
}

func TestRelCovDistanceAndWasserstein(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	mk := func(d, k int) *Model {
		m := &Model{D: d, K: k, Mean: make([]float64, d), F: make([]float64, d*k), Psi: make([]float64, d)}
		for i := range m.F {
			m.F[i] = rng.NormFloat64()
		}
		for i := range m.Psi {
			m.Psi[i] = rng.Float64() + 0.1
			m.Mean[i] = rng.NormFloat64()
		}
		return m
	}
	a, b := mk(12, 3), mk(12, 2)
	got, err := RelCovDistance(a, b)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := naiveCov(a.F, a.Psi, 12, 3), naiveCov(b.F, b.Psi, 12, 2)
	num, den := 0.0, 0.0
	for i := range sa {
		num += (sa[i] - sb[i]) * (sa[i] - sb[i])
		den += sb[i] * sb[i]
	}
	if want := math.Sqrt(num / den); !(math.Abs(got-want) <= 1e-12*want) {
		t.Errorf("RelCovDistance %v, dense %v", got, want)
	}
	if _, err := RelCovDistance(a, mk(11, 1)); err == nil {
		t.Error("dimension mismatch accepted")
	}
	// W2 between diagonal Gaussians: ‖m1−m2‖² + Σ(√a_i − √b_i)².
	m1, m2 := []float64{1, 2, 3}, []float64{0, 2, 5}
	d1, d2 := []float64{4, 0, 0, 0, 1, 0, 0, 0, 9}, []float64{1, 0, 0, 0, 1, 0, 0, 0, 4}
	if got, want := Wasserstein2(m1, d1, m2, d2, 3), math.Sqrt(1+4+1+0+1); !(math.Abs(got-want) <= 1e-9) {
		t.Errorf("W2 %v, want %v", got, want)
	}
	// Same covariance, rotated: W2 equals the mean distance.
	if got := Wasserstein2(m1, sa[:9], m1, sa[:9], 3); !(got <= 1e-6) {
		t.Errorf("W2 of a distribution with itself = %v", got)
	}
}

func TestMomentsMatchNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const d, n = 7, 300 // more than two blocks
	mom, err := NewMoments(d)
	if err != nil {
		t.Fatal(err)
	}
	xs := make([][]float64, n)
	for i := range xs {
		xs[i] = make([]float64, d)
		for j := range xs[i] {
			xs[i][j] = 5 + rng.NormFloat64()*float64(j+1)
		}
		if err := mom.Add(xs[i]); err != nil {
			t.Fatal(err)
		}
	}
	mean := make([]float64, d)
	for _, x := range xs {
		for j, v := range x {
			mean[j] += v / n
		}
	}
	cov := mom.Covariance()
	for i := 0; i < d; i++ {
		if !(math.Abs(mom.Mean()[i]-mean[i]) <= 1e-9) {
			t.Errorf("mean[%d] %v, want %v", i, mom.Mean()[i], mean[i])
		}
		for j := 0; j < d; j++ {
			want := 0.0
			for _, x := range xs {
				want += (x[i] - mean[i]) * (x[j] - mean[j]) / n
			}
			if !(math.Abs(cov[i*d+j]-want) <= 1e-5*(1+math.Abs(want))) { // float32 block products
				t.Errorf("cov[%d,%d] %v, want %v", i, j, cov[i*d+j], want)
			}
		}
	}
	if err := mom.Add(make([]float64, d+1)); err == nil {
		t.Error("wrong length accepted")
	}
}

// sampleModel draws n observations and returns them with their moments.
func sampleModel(m *Model, n int, seed uint64) ([][]float64, *Moments) {
	rng := rand.New(rand.NewPCG(seed, 1))
	mom, _ := NewMoments(m.D)
	xs := make([][]float64, n)
	for i := range xs {
		xs[i] = make([]float64, m.D)
		m.Sample(rng, xs[i])
		_ = mom.Add(xs[i])
	}
	return xs, mom
}

// generate is Generate(rng, d, k, lo, hi); the test fails at once on an error.
func generate(t *testing.T, rng *rand.Rand, d, k int, lo, hi float64) *Model {
	t.Helper()
	m, err := Generate(rng, d, k, lo, hi)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// faStream draws a 20-dimensional rank-3 FA model (Generate(·, 20, 3, 1, 10) with PCG(s1,
// s2)) and a stream of its samples drawn with sampleSeed: 20000 of them, 4000 under -short.
func faStream(t *testing.T, s1, s2, sampleSeed uint64) (*Model, [][]float64, *Moments) {
	t.Helper()
	n := 20000
	if testing.Short() {
		n = 4000
	}
	truth := generate(t, rand.New(rand.NewPCG(s1, s2)), 20, 3, 1, 10)
	xs, mom := sampleModel(truth, n, sampleSeed)
	return truth, xs, mom
}

// batchDistance fits the batch ML model (rank 3) to mom and returns its relative covariance
// distance to truth.
func batchDistance(t *testing.T, mom *Moments, truth *Model) float64 {
	t.Helper()
	fit, _, err := FitML(mom.Mean(), mom.Covariance(), 20, 3, MLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := RelCovDistance(fit, truth)
	return d
}

// TestFitMLIsAMaximum: the batch fit's log-likelihood (checked against a dense evaluation) is at
// least that of the true model and of small perturbations of the fit.
func TestFitMLIsAMaximum(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	truth := generate(t, rng, 12, 2, 1, 10)
	_, mom := sampleModel(truth, 2000, 3)
	mean, cov := mom.Mean(), mom.Covariance()
	fit, info, err := FitML(mean, cov, 12, 2, MLConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Converged {
		t.Errorf("not converged after %d iterations", info.Iterations)
	}
	dense, err := LogLikelihood(fit, cov)
	if err != nil {
		t.Fatal(err)
	}
	if !(math.Abs(dense-info.LogLik) <= 1e-6*math.Abs(dense)) {
		t.Errorf("reported log-likelihood %v, dense %v", info.LogLik, dense)
	}
	tm := truth.Clone()
	tm.Mean = mean
	llTruth, _ := LogLikelihood(tm, cov)
	if !(dense >= llTruth-1e-9) {
		t.Errorf("fit log-likelihood %v below the true model's %v", dense, llTruth)
	}
	for trial := 0; trial < 20; trial++ {
		p := fit.Clone()
		for i := range p.F {
			p.F[i] += 1e-3 * rng.NormFloat64()
		}
		for i := range p.Psi {
			p.Psi[i] *= math.Exp(1e-3 * rng.NormFloat64())
		}
		if ll, _ := LogLikelihood(p, cov); !(ll <= dense+1e-9) {
			t.Errorf("perturbation %d has higher log-likelihood %v > %v", trial, ll, dense)
		}
	}
	if d, _ := RelCovDistance(fit, truth); !(d <= 0.15) {
		t.Errorf("batch fit relative covariance distance %v", d)
	}
	if _, _, err := FitML(mean, cov[:10], 12, 2, MLConfig{}); err == nil {
		t.Error("short covariance accepted")
	}
}

// TestOnlineRecoversFAModel streams FA data into online EM and SGA: both improve with T, and
// online EM ends close to the batch ML fit.
func TestOnlineRecoversFAModel(t *testing.T) {
	truth, xs, mom := faStream(t, 15, 16, 7)
	n := len(xs)
	cfg := OnlineConfig{Rank: 3, Warmup: 100, LR: 0.001, Seed: 1}
	em, err := NewOnlineEM(20, cfg)
	if err != nil {
		t.Fatal(err)
	}
	sga, err := NewOnlineSGA(20, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var early [2]float64
	for i, x := range xs {
		if err := em.Observe(x); err != nil {
			t.Fatal(err)
		}
		if err := sga.Observe(x); err != nil {
			t.Fatal(err)
		}
		if i == 199 {
			early[0], _ = RelCovDistance(em.Model(), truth)
			early[1], _ = RelCovDistance(sga.Model(), truth)
		}
	}
	if em.Count() != n {
		t.Errorf("Count %d", em.Count())
	}
	dEM, _ := RelCovDistance(em.Model(), truth)
	dSGA, _ := RelCovDistance(sga.Model(), truth)
	dB := batchDistance(t, mom, truth)
	t.Logf("T=%d: batch %.4f, online EM %.4f (T=200: %.4f), SGA %.4f (T=200: %.4f)", n, dB, dEM, early[0], dSGA, early[1])
	if !(dEM < early[0]) || !(dSGA < early[1]) {
		t.Error("online estimates did not improve")
	}
	if !(dEM <= 4*dB+0.02) {
		t.Errorf("online EM %v far from batch fit %v", dEM, dB)
	}
	if !(RelDistance(em.Model().Mean, mom.Mean()) <= 1e-9) {
		t.Error("online mean is not the running mean")
	}
	if err := em.Observe(make([]float64, 3)); err == nil {
		t.Error("wrong length accepted")
	}
	bad := make([]float64, 20)
	bad[4] = math.Inf(1)
	if err := sga.Observe(bad); err == nil || !strings.Contains(err.Error(), "entry 4") {
		t.Errorf("infinite entry: %v", err)
	}
	if _, err := NewOnlineSGA(20, OnlineConfig{Rank: 3}); err == nil {
		t.Error("SGA without learning rate accepted")
	}
	if _, err := NewOnlineEM(20, OnlineConfig{Rank: 21}); err == nil {
		t.Error("rank > dimension accepted")
	}
}

func TestOnlineEMWeighting(t *testing.T) {
	truth, xs, mom := faStream(t, 17, 18, 9)
	plain, _ := NewOnlineEM(20, OnlineConfig{Rank: 3, Warmup: 100, Seed: 1})
	weighted, err := NewOnlineEM(20, OnlineConfig{Rank: 3, Warmup: 100, Seed: 1, Weighting: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range xs {
		if err := plain.Observe(x); err != nil {
			t.Fatal(err)
		}
		if err := weighted.Observe(x); err != nil {
			t.Fatal(err)
		}
	}
	dB := batchDistance(t, mom, truth)
	dP, _ := RelCovDistance(plain.Model(), truth)
	dW, _ := RelCovDistance(weighted.Model(), truth)
	t.Logf("T=%d: batch %.4f, online EM %.4f, weighted online EM %.4f", len(xs), dB, dP, dW)
	if !(dW <= dP) {
		t.Errorf("weighted online EM %v worse than Algorithm 2 %v", dW, dP)
	}
	if _, err := NewOnlineEM(20, OnlineConfig{Rank: 3, Weighting: -1}); err == nil {
		t.Error("negative weighting accepted")
	}
}
