package bfvi

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
)

// ErrTooFewDraws is returned by ParetoK when the tail has fewer than 5 draws.
var ErrTooFewDraws = errors.New("too few draws for a Pareto tail fit")

// ParetoK returns the PSIS diagnostic k̂ (Vehtari, Simpson, Gelman, Yao, Gabry, "Pareto smoothed
// importance sampling"; Yao et al. 2018) for log importance ratios log r_s = log p(θ_s, y) −
// log q(θ_s), θ_s ~ q, as in loo/ArviZ with relative efficiency 1: the ratios are shifted by their
// maximum, the tail is the draws above the (M+1)-th largest with M = ⌈min(n/5, 3√n)⌉, and a
// generalized Pareto distribution is fitted to the exceedances r − r_cut by the Zhang & Stephens
// (2009) posterior-mean estimator (m = 30 + ⌊√M⌋ grid points, prior parameter 3), followed by the
// weakly informative prior adjustment k̂ ← (M·k̂ + 10·0.5)/(M + 10).
//
// k̂ < 0.5: q is close to the posterior; 0.5–0.7: usable; > 0.7: unreliable. It returns −Inf when
// every tail exceedance is zero (constant ratios: q ∝ p exactly), an error wrapping
// ErrTooFewDraws when the tail would hold fewer than 5 draws, and an error for NaN or +Inf input
// (−Inf ratios, i.e. p = 0, are allowed).
func ParetoK(logRatios []float64) (float64, error) {
	n := len(logRatios)
	for i, v := range logRatios {
		if math.IsNaN(v) || math.IsInf(v, 1) {
			return 0, fmt.Errorf("bfvi: Pareto k: log ratio %d is %g", i, v)
		}
	}
	tail := int(math.Ceil(math.Min(0.2*float64(n), 3*math.Sqrt(float64(n)))))
	if tail < 5 || n < tail+1 {
		return 0, fmt.Errorf("bfvi: Pareto k of %d draws (tail %d): %w", n, tail, ErrTooFewDraws)
	}
	x := append([]float64(nil), logRatios...)
	sort.Float64s(x)
	mx := x[n-1]
	if math.IsInf(mx, -1) {
		return 0, fmt.Errorf("bfvi: Pareto k: every log ratio is −Inf")
	}
	cut := math.Max(x[n-tail-1]-mx, math.Log(math.SmallestNonzeroFloat64))
	ecut := math.Exp(cut)
	ex := make([]float64, 0, tail)
	for _, v := range x[n-tail:] {
		if v-mx > cut {
			ex = append(ex, math.Exp(v-mx)-ecut)
		}
	}
	if len(ex) == 0 || ex[len(ex)-1] == 0 {
		return math.Inf(-1), nil
	}
	if len(ex) < 5 {
		return 0, fmt.Errorf("bfvi: Pareto k: only %d draws above the cutoff: %w", len(ex), ErrTooFewDraws)
	}
	k, _ := gpdFit(ex)
	return k, nil
}

// gpdFit fits a generalized Pareto distribution to sorted positive exceedances x by Zhang &
// Stephens (2009) with the PSIS prior adjustment, returning shape k and scale σ.
func gpdFit(x []float64) (k, sigma float64) {
	const priorBS, priorK = 3.0, 10.0
	n := len(x)
	m := 30 + int(math.Sqrt(float64(n)))
	b := make([]float64, m)
	q1 := x[int(float64(n)/4+0.5)-1]
	for j := range b {
		b[j] = (1-math.Sqrt(float64(m)/(float64(j+1)-0.5)))/(priorBS*q1) + 1/x[n-1]
	}
	l := make([]float64, m)
	for j, bj := range b {
		s := 0.0
		for _, v := range x {
			s += math.Log1p(-bj * v)
		}
		kj := s / float64(n)
		l[j] = float64(n) * (math.Log(-bj/kj) - kj - 1)
	}
	// Weights w_j = 1/Σ_i exp(l_i − l_j), negligible ones dropped, then normalised.
	w := make([]float64, m)
	ws := 0.0
	for j := range w {
		s := 0.0
		for i := range l {
			s += math.Exp(l[i] - l[j])
		}
		w[j] = 1 / s
		if w[j] < 10*2.220446049250313e-16 {
			w[j] = 0
		}
		ws += w[j]
	}
	bPost := 0.0
	for j := range b {
		bPost += b[j] * w[j] / ws
	}
	s := 0.0
	for _, v := range x {
		s += math.Log1p(-bPost * v)
	}
	k = s / float64(n)
	sigma = -k / bPost
	k = (float64(n)*k + priorK*0.5) / (float64(n) + priorK)
	return k, sigma
}

// LogImportanceRatios draws n samples θ_s ~ q (seeded) and returns log p(θ_s, y) − log q(θ_s),
// the input of ParetoK.
func LogImportanceRatios(m Model, q Sampler, n int, seed uint64) ([]float64, error) {
	if m == nil || q == nil || m.Dim() != q.Dim() {
		return nil, fmt.Errorf("bfvi: importance ratios need a model and a family of equal dimension")
	}
	if n < 1 {
		return nil, fmt.Errorf("bfvi: importance ratios: %d draws", n)
	}
	rng := rand.New(rand.NewPCG(seed, 0x9515))
	th := make([]float64, m.Dim())
	out := make([]float64, n)
	for i := range out {
		lq, err := q.Sample(rng, th)
		if err != nil {
			return nil, err
		}
		out[i] = m.LogJoint(th, nil) - lq
		if math.IsNaN(out[i]) || math.IsInf(out[i], 1) {
			return nil, fmt.Errorf("bfvi: importance ratio %d is %g at θ = %v", i, out[i], th)
		}
	}
	return out, nil
}
