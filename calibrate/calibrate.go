// Package calibrate fits a model's decision policy — when a device acts on a prediction and when
// it abstains — on labelled held-out data, as `edgebnn calibrate` does (docs/CALIBRATE.md).
//
// The data are per-input Records: for a classifier the predicted class's probability
// (confidence), the mutual information (epistemic uncertainty) and whether the prediction was
// right; for a regression model the largest epistemic standard deviation of its outputs and
// whether every output was within a tolerance of its target. A Rule accepts an input when its
// confidence is at least MinConfidence and/or its mutual information is at most MaxMutualInfo
// (a classifier), or when its epistemic standard deviation is at most MaxEpistemicStd (a
// regression model), exactly as runtime.Policy.Decide does. On a set of records a rule has a
// coverage (accepted / all) and a risk (errors among the accepted / accepted; 0 when nothing is
// accepted). Fit chooses the thresholds that meet a Target: a risk target (risk ≤ r, coverage as
// large as possible) or a coverage target (coverage ≥ c, risk as small as possible).
// Calibrate splits the records at random (seeded) into a fit part and a held-out part, fits on
// the first and reports the rule's result on both.
//
// Everything here is pure and deterministic: the same records and options give the same rule.
package calibrate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/edgebnn/edgebnn/runtime"
)

// Record is one predicted input of the calibration data.
type Record struct {
	// Confidence is the predicted class's predictive probability (a classifier).
	Confidence float64
	// MutualInfo is the mutual information between the prediction and the weights (nats; a
	// classifier).
	MutualInfo float64
	// EpistemicStd is the largest epistemic standard deviation over the outputs (a regression
	// model; the square root of runtime.Prediction's largest EpistemicVar).
	EpistemicStd float64
	// Correct says whether the predicted class is the label, or for a regression model whether
	// every output is within the tolerance of its target.
	Correct bool
}

// On names the score (or scores) a rule thresholds.
type On string

// The scores a rule can threshold.
const (
	// OnConfidence accepts iff confidence ≥ MinConfidence.
	OnConfidence On = "confidence"
	// OnMutualInfo accepts iff mutual information ≤ MaxMutualInfo.
	OnMutualInfo On = "mutual_info"
	// OnBoth accepts iff both hold.
	OnBoth On = "both"
	// OnEpistemicStd accepts iff the epistemic standard deviation ≤ MaxEpistemicStd (a
	// regression model's rule).
	OnEpistemicStd On = "epistemic_std"
)

// ParseOn parses "confidence", "mutual_info" (or "mi"), "both" or "epistemic_std".
func ParseOn(s string) (On, error) {
	switch s {
	case "confidence":
		return OnConfidence, nil
	case "mutual_info", "mi":
		return OnMutualInfo, nil
	case "both":
		return OnBoth, nil
	case "epistemic_std":
		return OnEpistemicStd, nil
	}
	return "", fmt.Errorf("calibrate: score %q is not confidence, mutual_info, both or epistemic_std", s)
}

// TargetKind is what a Target constrains.
type TargetKind string

// The kinds of target.
const (
	// TargetRisk: the risk of the accepted inputs is at most Value; the coverage is maximised.
	TargetRisk TargetKind = "risk"
	// TargetCoverage: at least a fraction Value of the inputs is accepted; the risk is minimised.
	TargetCoverage TargetKind = "coverage"
)

// Target is what Fit must achieve on the fit data.
type Target struct {
	Kind  TargetKind
	Value float64
}

// String is e.g. "risk ≤ 0.05" or "coverage ≥ 0.8".
func (t Target) String() string {
	if t.Kind == TargetCoverage {
		return fmt.Sprintf("coverage ≥ %g", t.Value)
	}
	return fmt.Sprintf("risk ≤ %g", t.Value)
}

// validate checks the target: a risk in [0, 1), a coverage in (0, 1].
func (t Target) validate() error {
	switch t.Kind {
	case TargetRisk:
		if !(t.Value >= 0 && t.Value < 1) {
			return fmt.Errorf("calibrate: target risk %g is not in [0, 1)", t.Value)
		}
	case TargetCoverage:
		if !(t.Value > 0 && t.Value <= 1) {
			return fmt.Errorf("calibrate: target coverage %g is not in (0, 1]", t.Value)
		}
	default:
		return fmt.Errorf("calibrate: target kind %q is not risk or coverage", t.Kind)
	}
	return nil
}

// Rule is a decision rule: accept an input iff the thresholds that On selects hold. The others
// are ignored (Fit leaves them 0). A MaxMutualInfo or MaxEpistemicStd of +Inf, like a
// MinConfidence of 0, is no threshold: every input passes it.
type Rule struct {
	On              On
	MinConfidence   float64
	MaxMutualInfo   float64
	MaxEpistemicStd float64
}

// Accept reports whether the rule acts on the record. Like runtime.Policy.Decide it compares
// with ≥ and ≤ (an input exactly at a threshold is accepted), so a NaN score is rejected.
func (r Rule) Accept(rec Record) bool {
	if r.On == OnEpistemicStd {
		return rec.EpistemicStd <= r.MaxEpistemicStd
	}
	if r.On != OnMutualInfo && !(rec.Confidence >= r.MinConfidence) {
		return false
	}
	if r.On != OnConfidence && !(rec.MutualInfo <= r.MaxMutualInfo) {
		return false
	}
	return true
}

// Evaluate is the rule's result on records.
func (r Rule) Evaluate(records []Record) Result {
	var a, e int
	for _, rec := range records {
		if r.Accept(rec) {
			a++
			if !rec.Correct {
				e++
			}
		}
	}
	return newResult(len(records), a, e)
}

// Policy is the runtime policy of the rule (without Calibration): the thresholds On selects,
// fitted with the given number of samples per prediction. A threshold every input passes (a
// MinConfidence of 0, an infinite maximum) is left out: a rule without thresholds gives a
// policy without thresholds, which acts on every input.
func (r Rule) Policy(samples int) *runtime.Policy {
	p := &runtime.Policy{Version: runtime.DeployVersion, Samples: samples}
	// A threshold every input passes is left out: a MinConfidence of 0, an infinite maximum.
	if r.On == OnEpistemicStd {
		if v := r.MaxEpistemicStd; !math.IsInf(v, 1) {
			p.MaxEpistemicStd = &v
		}
		return p
	}
	if v := r.MinConfidence; r.On != OnMutualInfo && v != 0 {
		p.MinConfidence = &v
	}
	if v := r.MaxMutualInfo; r.On != OnConfidence && !math.IsInf(v, 1) {
		p.MaxMutualInfo = &v
	}
	return p
}

// Result is a rule's outcome on a set of N records: Accepted of them accepted, Errors of those
// wrong. Coverage = Accepted/N (0 when N = 0); Risk = Errors/Accepted, and 0 when nothing is
// accepted.
type Result struct {
	N, Accepted, Errors int
	Risk, Coverage      float64
}

func newResult(n, a, e int) Result {
	r := Result{N: n, Accepted: a, Errors: e}
	if n > 0 {
		r.Coverage = float64(a) / float64(n)
	}
	if a > 0 {
		r.Risk = float64(e) / float64(a)
	}
	return r
}

// Split returns the result as a runtime.SplitResult.
func (r Result) Split() runtime.SplitResult {
	return runtime.SplitResult{N: r.N, Risk: r.Risk, Coverage: r.Coverage}
}

// ErrTargetUnmet is wrapped by Fit's error when no rule meets the target on the fit data.
var ErrTargetUnmet = errors.New("target cannot be met")

// DefaultGrid is the default number of candidate thresholds per score of a two-score (OnBoth)
// search.
const DefaultGrid = 200

// Options configure Fit and Calibrate.
type Options struct {
	Target Target
	On     On
	// Grid is the number of candidate thresholds per score when On is OnBoth (default
	// DefaultGrid): the scores' quantiles at ranks round(k·(n−1)/(Grid−1)), k = 0 … Grid−1,
	// so Grid² rules are tried. A single score tries every distinct value.
	Grid int
	// Split is the fraction of the records Calibrate fits on (default 0.5); the rest is held
	// out.
	Split float64
	// Seed selects Calibrate's split.
	Seed uint64
	// Tolerance is recorded in the policy (Report.Policy) for a regression model: the distance
	// from a target beyond which an output made its Record wrong. Fit does not read it.
	Tolerance float64
}

// clamp maps the scores into the ranges a runtime.Policy can express — confidence into [0, 1],
// mutual information and epistemic standard deviation into [0, ∞) — and rejects NaN and
// infinite scores. For thresholds in those ranges a rule accepts exactly the same inputs before
// and after clamping (a mutual information of −1e−9, a rounding artefact, is ≤ t iff 0 is).
func clamp(records []Record) ([]Record, error) {
	out := make([]Record, len(records))
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	for i, r := range records {
		if !finite(r.Confidence) || !finite(r.MutualInfo) || !finite(r.EpistemicStd) {
			return nil, fmt.Errorf("calibrate: record %d has a non-finite score (confidence %g, mutual information %g, epistemic std %g)",
				i, r.Confidence, r.MutualInfo, r.EpistemicStd)
		}
		r.Confidence = min(max(r.Confidence, 0), 1)
		r.MutualInfo = max(r.MutualInfo, 0)
		r.EpistemicStd = max(r.EpistemicStd, 0)
		out[i] = r
	}
	return out, nil
}

// asMutualInfo returns the records with the epistemic standard deviation in the MutualInfo
// field: both are "accept iff score ≤ t" scores, so OnEpistemicStd is searched and drawn as
// OnMutualInfo on these.
func asMutualInfo(records []Record) []Record {
	out := make([]Record, len(records))
	for i, r := range records {
		out[i] = Record{MutualInfo: r.EpistemicStd, Correct: r.Correct}
	}
	return out
}

// candidates returns the candidate thresholds of one score, ordered from the strictest to the
// loosest (confidence descending, mutual information ascending); the last accepts every record.
// With grid ≤ 0 they are all distinct values; otherwise at most grid quantiles.
func candidates(records []Record, score On, grid int) []float64 {
	v := make([]float64, len(records))
	for i, r := range records {
		if score == OnConfidence {
			v[i] = -r.Confidence // ascending order of -confidence: strictest first
		} else {
			v[i] = r.MutualInfo
		}
	}
	sort.Float64s(v)
	var picked []float64
	if grid <= 0 || grid >= len(v) {
		picked = v
	} else {
		picked = make([]float64, 0, grid)
		for k := range grid {
			picked = append(picked, v[int(math.Round(float64(k)*float64(len(v)-1)/float64(grid-1)))])
		}
	}
	var out []float64
	for _, x := range picked {
		if len(out) == 0 || x != out[len(out)-1] {
			out = append(out, x)
		}
	}
	if score == OnConfidence {
		for i := range out {
			out[i] = -out[i]
		}
	}
	return out
}

// index returns, for each record, the position of the strictest candidate that accepts it
// (candidates strictest first); len(cands) if none does.
func index(records []Record, score On, cands []float64) []int {
	idx := make([]int, len(records))
	for i, r := range records {
		if score == OnConfidence {
			// cands descending; first c with c ≤ confidence.
			idx[i] = sort.Search(len(cands), func(k int) bool { return cands[k] <= r.Confidence })
		} else {
			// cands ascending; first c with c ≥ mutual information.
			idx[i] = sort.Search(len(cands), func(k int) bool { return cands[k] >= r.MutualInfo })
		}
	}
	return idx
}

// candidate is one rule of the search with its counts.
type candidate struct {
	rule Rule
	a, e int
}

// better reports whether x beats y for target t on n records; feasibility is checked by the
// caller. Risk target: more accepted, then fewer errors. Coverage target: lower risk (compared
// exactly), then more accepted. Then the stricter thresholds: higher MinConfidence, then lower
// MaxMutualInfo.
func better(x, y candidate, t Target) bool {
	if t.Kind == TargetRisk {
		if x.a != y.a {
			return x.a > y.a
		}
		if x.e != y.e {
			return x.e < y.e
		}
	} else {
		if l, r := x.e*y.a, y.e*x.a; l != r {
			return l < r
		}
		if x.a != y.a {
			return x.a > y.a
		}
	}
	if x.rule.MinConfidence != y.rule.MinConfidence {
		return x.rule.MinConfidence > y.rule.MinConfidence
	}
	return x.rule.MaxMutualInfo < y.rule.MaxMutualInfo
}

// feasible reports whether a candidate meets t on n records: a non-empty accepted set with
// Risk ≤ t.Value, or Coverage ≥ t.Value (the risk and coverage computed as Result does).
func feasible(c candidate, n int, t Target) bool {
	if t.Kind == TargetRisk {
		return c.a > 0 && newResult(n, c.a, c.e).Risk <= t.Value
	}
	return c.a >= minAccepted(t.Value, n)
}

// minAccepted returns how many of n fit records a rule must accept to meet the coverage target
// c: ⌈c·(n+1)⌉, at least 1. This is split conformal prediction's count: with exchangeable data a
// rule on one score that accepts a of the n fit records, its threshold a fit record's score,
// accepts a new input with probability at least a/(n+1) — so a ≥ c·(n+1) meets c on new
// inputs, where a ≥ c·n (the fit data's own coverage) fell short by up to 1/(n+1). The product
// is shortened by a relative 1e-15 so that a typed c whose c·(n+1) is an integer in decimal
// (0.07 × 100) does not ask one record more for its binary rounding (c's and the product's
// together at most 2.3e-16 relative); 1e-12 had also cut a decimal c·(n+1) just above an
// integer (0.999999 × 1999999 = 1999997.000001) to that integer.
func minAccepted(c float64, n int) int {
	x := c * float64(n+1)
	return max(1, int(math.Ceil(x-x*1e-15)))
}

// search tries every pair of candidate thresholds (a score that On leaves out has the single
// candidate that accepts everything) and returns the best feasible rule and the best rule by
// the other criterion (the one to name when nothing is feasible).
func search(records []Record, on On, grid int, t Target) (best candidate, found bool, fallback candidate) {
	n := len(records)
	var cc, mc []float64
	var ci, mi []int
	if on == OnMutualInfo {
		cc, ci = []float64{0}, make([]int, n)
	} else {
		cc = candidates(records, OnConfidence, grid)
		ci = index(records, OnConfidence, cc)
	}
	if on == OnConfidence {
		mc, mi = []float64{math.Inf(1)}, make([]int, n)
	} else {
		mc = candidates(records, OnMutualInfo, grid)
		mi = index(records, OnMutualInfo, mc)
	}
	A, B := len(cc), len(mc)
	// acc[i][j], err[i][j]: records first accepted at (i, j); then 2-D prefix sums, so that
	// acc[i][j] counts the records accepted by thresholds (cc[i], mc[j]).
	acc := make([]int, A*B)
	errs := make([]int, A*B)
	for k, r := range records {
		if ci[k] >= A || mi[k] >= B {
			continue
		}
		acc[ci[k]*B+mi[k]]++
		if !r.Correct {
			errs[ci[k]*B+mi[k]]++
		}
	}
	for i := range A {
		for j := range B {
			p := i*B + j
			if i > 0 {
				acc[p] += acc[p-B]
				errs[p] += errs[p-B]
			}
			if j > 0 {
				acc[p] += acc[p-1]
				errs[p] += errs[p-1]
			}
			if i > 0 && j > 0 {
				acc[p] -= acc[p-B-1]
				errs[p] -= errs[p-B-1]
			}
		}
	}
	// The fallback: for a risk target the lowest risk at non-zero coverage (then the highest
	// coverage), for a coverage target the highest coverage (then the lowest risk).
	fb := Target{Kind: TargetCoverage}
	if t.Kind == TargetCoverage {
		fb = Target{Kind: TargetRisk}
	}
	haveFallback := false
	for i := range A {
		for j := range B {
			c := candidate{rule: Rule{On: on, MinConfidence: cc[i], MaxMutualInfo: mc[j]}, a: acc[i*B+j], e: errs[i*B+j]}
			if feasible(c, n, t) && (!found || better(c, best, t)) {
				best, found = c, true
			}
			if c.a > 0 && (!haveFallback || better(c, fallback, fb)) {
				fallback, haveFallback = c, true
			}
		}
	}
	return best, found, fallback
}

// Fit chooses the rule on opt.On that meets opt.Target on records:
//
//   - risk target r: among the rules whose accepted set is not empty and has risk ≤ r, one with
//     the most accepted records (then the fewest errors);
//   - coverage target c: among the rules that accept at least ⌈c·(n+1)⌉ of the n records (the
//     split-conformal count, so that new exchangeable inputs are accepted with probability at
//     least c by a rule on one score — not by an OnBoth rule, which can refuse a new input on
//     either score; see minAccepted), one with the lowest risk (then the most accepted records).
//     When c > n/(n+1) no rule with thresholds at record scores qualifies — one at the records'
//     extreme scores is expected to pass only n/(n+1) of new inputs — so the rule has no
//     thresholds (MinConfidence 0, the maxima +Inf): --target-coverage 1 acts on every input.
//
// Remaining ties go to the higher MinConfidence, then the lower MaxMutualInfo (or
// MaxEpistemicStd). Thresholds are
// always scores of records, so records with equal scores are accepted or rejected together. A
// single score tries every distinct value, so the rule is optimal on the records; OnBoth tries
// opt.Grid quantiles of each score and also the two single-score optima. Scores must be
// finite; confidences are clamped to [0, 1], mutual information and epistemic standard
// deviation to [0, ∞) (which changes no
// rule's decisions; see clamp). When no rule meets the target the error wraps ErrTargetUnmet and
// names the best achievable (for a risk target the lowest risk at non-zero coverage).
func Fit(records []Record, opt Options) (Rule, Result, error) {
	if err := opt.Target.validate(); err != nil {
		return Rule{}, Result{}, err
	}
	if _, err := ParseOn(string(opt.On)); err != nil {
		return Rule{}, Result{}, err
	}
	if len(records) == 0 {
		return Rule{}, Result{}, errors.New("calibrate: no records to fit on")
	}
	recs, err := clamp(records)
	if err != nil {
		return Rule{}, Result{}, err
	}
	if opt.Target.Kind == TargetCoverage && minAccepted(opt.Target.Value, len(recs)) > len(recs) {
		// Even accepting every fit record, the fit data's extreme score as a threshold is
		// expected to pass only n/(n+1) of new inputs (exchangeable data, distinct scores),
		// short of c: no threshold at all.
		rule := Rule{On: opt.On}
		switch opt.On {
		case OnEpistemicStd:
			rule.MaxEpistemicStd = math.Inf(1)
		case OnMutualInfo, OnBoth:
			rule.MaxMutualInfo = math.Inf(1)
		}
		return rule, rule.Evaluate(recs), nil
	}
	var best, fallback candidate
	var found bool
	if opt.On == OnBoth {
		grid := opt.Grid
		if grid <= 0 {
			grid = DefaultGrid
		}
		if grid < 2 {
			grid = 2
		}
		best, found, fallback = search(recs, OnBoth, grid, opt.Target)
		// The exact single-score optima are rules on both scores too (the other threshold
		// accepting everything).
		for _, s := range []On{OnConfidence, OnMutualInfo} {
			b, ok, f := search(recs, s, 0, opt.Target)
			b.rule, f.rule = widen(b.rule, recs), widen(f.rule, recs)
			if ok && (!found || better(b, best, opt.Target)) {
				best, found = b, true
			}
			fb := Target{Kind: TargetCoverage}
			if opt.Target.Kind == TargetCoverage {
				fb = Target{Kind: TargetRisk}
			}
			if f.a > 0 && better(f, fallback, fb) {
				fallback = f
			}
		}
	} else if opt.On == OnEpistemicStd {
		best, found, fallback = search(asMutualInfo(recs), OnMutualInfo, 0, opt.Target)
	} else {
		best, found, fallback = search(recs, opt.On, 0, opt.Target)
	}
	if !found {
		fr := newResult(len(recs), fallback.a, fallback.e)
		if opt.Target.Kind == TargetRisk {
			return Rule{}, Result{}, fmt.Errorf("calibrate: %s on %s: %w: the lowest risk at non-zero coverage is %.4g (coverage %.4g, %d of %d accepted, %d wrong)",
				opt.Target, opt.On, ErrTargetUnmet, fr.Risk, fr.Coverage, fr.Accepted, fr.N, fr.Errors)
		}
		return Rule{}, Result{}, fmt.Errorf("calibrate: %s on %s: %w: the highest coverage is %.4g (risk %.4g)",
			opt.Target, opt.On, ErrTargetUnmet, fr.Coverage, fr.Risk)
	}
	rule := Rule{On: opt.On}
	if opt.On == OnEpistemicStd {
		rule.MaxEpistemicStd = best.rule.MaxMutualInfo
		return rule, newResult(len(recs), best.a, best.e), nil
	}
	if opt.On != OnMutualInfo {
		rule.MinConfidence = best.rule.MinConfidence
	}
	if opt.On != OnConfidence {
		rule.MaxMutualInfo = best.rule.MaxMutualInfo
	}
	return rule, newResult(len(recs), best.a, best.e), nil
}

// widen turns a single-score rule into an OnBoth rule with the other threshold at the value
// that accepts every record (the smallest confidence, the largest mutual information).
func widen(r Rule, records []Record) Rule {
	minC, maxM := 1.0, 0.0
	for _, rec := range records {
		minC, maxM = min(minC, rec.Confidence), max(maxM, rec.MutualInfo)
	}
	switch r.On {
	case OnConfidence:
		r.MaxMutualInfo = maxM
	case OnMutualInfo:
		r.MinConfidence = minC
	}
	r.On = OnBoth
	return r
}
