package calibrate

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/edgebnn/edgebnn/runtime"
)

// DefaultSplit is the default fraction of the records Calibrate fits on.
const DefaultSplit = 0.5

// splitStream is the PCG stream of the split's generator (the seed is the other half).
const splitStream = 0x63616c6962726174 // "calibrat"

// Split divides the indices 0 … n−1 at random into a fit part of round(fraction·n) indices and
// a held-out part of the rest, both in ascending order. The division depends only on n,
// fraction and seed: a Fisher–Yates shuffle driven by PCG (math/rand/v2, seeded with seed and a
// fixed stream), position i swapped with Uint64() mod (i+1), then the first part taken. Both
// parts must be non-empty.
func Split(n int, fraction float64, seed uint64) (fit, holdout []int, err error) {
	if !(fraction > 0 && fraction < 1) {
		return nil, nil, fmt.Errorf("calibrate: split fraction %g is not in (0, 1)", fraction)
	}
	m := int(math.Round(fraction * float64(n)))
	if m < 1 || m > n-1 {
		return nil, nil, fmt.Errorf("calibrate: a split of %g of %d records leaves a part empty", fraction, n)
	}
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	pcg := rand.NewPCG(seed, splitStream)
	for i := n - 1; i > 0; i-- {
		j := int(pcg.Uint64() % uint64(i+1))
		perm[i], perm[j] = perm[j], perm[i]
	}
	fit, holdout = perm[:m:m], perm[m:]
	sort.Ints(fit)
	sort.Ints(holdout)
	return fit, holdout, nil
}

// Point is one point of a risk–coverage curve: the rule with threshold Threshold on one score
// and its result.
type Point struct {
	Threshold float64
	Result
}

// Curve is the risk–coverage curve of one score (OnConfidence: accept iff confidence ≥ t;
// OnMutualInfo: accept iff mutual information ≤ t; OnEpistemicStd: accept iff epistemic
// standard deviation ≤ t) over every distinct score value t, ordered by increasing coverage (the
// strictest threshold first, the last accepting every record). Scores are clamped as Fit clamps
// them; they must be finite.
func Curve(records []Record, score On) ([]Point, error) {
	if score != OnConfidence && score != OnMutualInfo && score != OnEpistemicStd {
		return nil, fmt.Errorf("calibrate: a curve is of confidence, mutual_info or epistemic_std, not %q", score)
	}
	recs, err := clamp(records)
	if err != nil {
		return nil, err
	}
	if score == OnEpistemicStd {
		recs, score = asMutualInfo(recs), OnMutualInfo
	}
	cands := candidates(recs, score, 0)
	idx := index(recs, score, cands)
	acc := make([]int, len(cands))
	errs := make([]int, len(cands))
	for k, r := range recs {
		acc[idx[k]]++
		if !r.Correct {
			errs[idx[k]]++
		}
	}
	pts := make([]Point, len(cands))
	a, e := 0, 0
	for i, t := range cands {
		a, e = a+acc[i], e+errs[i]
		pts[i] = Point{Threshold: t, Result: newResult(len(recs), a, e)}
	}
	return pts, nil
}

// AtCoverage returns the first point of a curve (the strictest threshold) whose coverage is at
// least c, or the last point.
func AtCoverage(curve []Point, c float64) Point {
	for _, p := range curve {
		if p.Coverage >= c {
			return p
		}
	}
	if len(curve) == 0 {
		return Point{}
	}
	return curve[len(curve)-1]
}

// Confidence is the level of Report.HoldoutRiskUpper.
const Confidence = 0.95

// Report is the outcome of Calibrate.
type Report struct {
	Options Options
	Rule    Rule
	// Fit and Holdout are the rule's results on the two parts of the split.
	Fit, Holdout Result
	// HoldoutRiskUpper is the exact (Clopper–Pearson) one-sided 95 % upper confidence bound on
	// the risk, from the held-out errors among the held-out accepted inputs (1 when none is
	// accepted).
	HoldoutRiskUpper float64
}

// Calibrate splits records (Split with opt.Split and opt.Seed), fits a rule on the fit part
// (Fit) and evaluates it on both parts. A non-finite score anywhere is an error naming its record.
func Calibrate(records []Record, opt Options) (*Report, error) {
	// Both parts are checked (and clamped) here: Fit checks only the part it is given.
	records, err := clamp(records)
	if err != nil {
		return nil, err
	}
	if opt.Split == 0 {
		opt.Split = DefaultSplit
	}
	if opt.On == OnBoth && opt.Grid <= 0 {
		opt.Grid = DefaultGrid
	}
	fi, hi, err := Split(len(records), opt.Split, opt.Seed)
	if err != nil {
		return nil, err
	}
	pick := func(idx []int) []Record {
		out := make([]Record, len(idx))
		for i, k := range idx {
			out[i] = records[k]
		}
		return out
	}
	fitRecs, holdRecs := pick(fi), pick(hi)
	rule, fr, err := Fit(fitRecs, opt)
	if err != nil {
		return nil, err
	}
	hr := rule.Evaluate(holdRecs)
	up, err := ClopperPearsonUpper(hr.Errors, hr.Accepted, 1-Confidence)
	if err != nil {
		return nil, err
	}
	return &Report{Options: opt, Rule: rule, Fit: fr, Holdout: hr, HoldoutRiskUpper: up}, nil
}

// Policy is the runtime policy of the report: its rule's thresholds, the number of samples per
// prediction, and the Calibration record naming the data.
func (r *Report) Policy(samples int, data string) *runtime.Policy {
	p := r.Rule.Policy(samples)
	p.Calibration = &runtime.Calibration{
		Target:    string(r.Options.Target.Kind),
		Value:     r.Options.Target.Value,
		On:        string(r.Options.On),
		Data:      data,
		Seed:      r.Options.Seed,
		Tolerance: r.Options.Tolerance,
		Fit:       r.Fit.Split(),
		Holdout:   r.Holdout.Split(),
	}
	return p
}

// ClopperPearsonUpper is the exact one-sided upper confidence bound, at level 1−alpha, on a
// binomial proportion from k successes in n trials: the p with P(X ≤ k | n, p) = alpha, and 1
// when k = n (or n = 0). It is found by bisection on the binomial CDF to 1e−12.
func ClopperPearsonUpper(k, n int, alpha float64) (float64, error) {
	if n < 0 || k < 0 || k > n {
		return 0, fmt.Errorf("calibrate: %d successes in %d trials", k, n)
	}
	if !(alpha > 0 && alpha < 1) {
		return 0, errors.New("calibrate: alpha must be in (0, 1)")
	}
	if k == n {
		return 1, nil
	}
	lo, hi := float64(k)/float64(n), 1.0
	for hi-lo > 1e-12 {
		mid := (lo + hi) / 2
		if binomCDF(k, n, mid) > alpha {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi, nil
}

// binomCDF is P(X ≤ k) for X ~ Binomial(n, p), 0 < p < 1, summed in log space.
func binomCDF(k, n int, p float64) float64 {
	if p <= 0 {
		return 1
	}
	if p >= 1 {
		return 0
	}
	lp, lq := math.Log(p), math.Log1p(-p)
	ln, _ := math.Lgamma(float64(n + 1))
	s := 0.0
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		s += math.Exp(ln - li - lr + float64(i)*lp + float64(n-i)*lq)
	}
	return min(s, 1)
}
