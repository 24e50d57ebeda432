package calibrate

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// rec is a classifier's record.
func rec(confidence, mutualInfo float64, correct bool) Record {
	return Record{Confidence: confidence, MutualInfo: mutualInfo, Correct: correct}
}

// randomRecords draws n records whose scores take few distinct values (so that ties are common)
// and whose correctness is likelier at high confidence and low mutual information.
func randomRecords(rng *rand.Rand, n int) []Record {
	recs := make([]Record, n)
	for i := range recs {
		c := float64(rng.IntN(8)+2) / 10
		m := float64(rng.IntN(6)) / 100
		sd := float64(rng.IntN(7)) / 10
		recs[i] = Record{Confidence: c, MutualInfo: m, EpistemicStd: sd, Correct: rng.Float64() < c-2*m-sd/4}
	}
	return recs
}

// bruteForce tries every rule whose thresholds are score values of the records (plus the
// single-score rules) and returns the optimal (accepted, errors) for the target, or ok = false.
func bruteForce(recs []Record, on On, t Target) (best Result, ok bool) {
	var cs, ms []float64
	for _, r := range recs {
		cs = append(cs, r.Confidence)
		ms = append(ms, r.MutualInfo)
		if on == OnEpistemicStd {
			ms[len(ms)-1] = r.EpistemicStd
		}
	}
	if on == OnMutualInfo || on == OnEpistemicStd {
		cs = []float64{0}
	}
	if on == OnConfidence {
		ms = []float64{math.Inf(1)}
	}
	for _, c := range cs {
		for _, m := range ms {
			rule := Rule{On: on, MinConfidence: c, MaxMutualInfo: m}
			if on == OnEpistemicStd {
				rule = Rule{On: on, MaxEpistemicStd: m}
			}
			r := rule.Evaluate(recs)
			var feas bool
			if t.Kind == TargetRisk {
				feas = r.Accepted > 0 && r.Risk <= t.Value
			} else {
				// The split-conformal count, ⌈c·(n+1)⌉ (the fit data's own coverage a/n ≥ c
				// fell short on new inputs by up to 1/(n+1)).
				// Above n it is no rule with thresholds at record scores: Fit then returns the
				// rule without thresholds, which accepts all n, as the capped count does here.
				feas = r.Accepted >= min(len(recs), int(math.Ceil(t.Value*float64(len(recs)+1)-1e-9)))
			}
			if !feas {
				continue
			}
			if !ok {
				best, ok = r, true
				continue
			}
			if t.Kind == TargetRisk {
				if r.Accepted > best.Accepted || (r.Accepted == best.Accepted && r.Errors < best.Errors) {
					best = r
				}
			} else {
				l, rr := r.Errors*best.Accepted, best.Errors*r.Accepted
				if l < rr || (l == rr && r.Accepted > best.Accepted) {
					best = r
				}
			}
		}
	}
	return best, ok
}

// TestFitMatchesBruteForce: on small random data sets Fit finds the optimum of an exhaustive
// search over all thresholds, for every score and both kinds of target, and reports the result
// its rule really has; when no rule meets the target it says so.
func TestFitMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	targets := []Target{
		{TargetRisk, 0}, {TargetRisk, 0.05}, {TargetRisk, 0.2}, {TargetRisk, 0.4},
		{TargetCoverage, 0.1}, {TargetCoverage, 0.5}, {TargetCoverage, 0.8}, {TargetCoverage, 1},
	}
	unmet := 0
	for trial := range 300 {
		recs := randomRecords(rng, 1+rng.IntN(40))
		for _, on := range []On{OnConfidence, OnMutualInfo, OnBoth, OnEpistemicStd} {
			for _, tg := range targets {
				want, ok := bruteForce(recs, on, tg)
				rule, got, err := Fit(recs, Options{Target: tg, On: on})
				if !ok {
					if !errors.Is(err, ErrTargetUnmet) {
						t.Fatalf("trial %d %s %s: brute force finds no rule, Fit: %+v %v", trial, on, tg, got, err)
					}
					unmet++
					continue
				}
				if err != nil {
					t.Fatalf("trial %d %s %s: %v (brute force: %+v)", trial, on, tg, err, want)
				}
				if got.Accepted != want.Accepted || got.Errors != want.Errors {
					t.Fatalf("trial %d %s %s: Fit %d accepted, %d wrong; brute force %d, %d", trial, on, tg, got.Accepted, got.Errors, want.Accepted, want.Errors)
				}
				if ev := rule.Evaluate(recs); ev != got {
					t.Fatalf("trial %d %s %s: Fit reports %+v, its rule %+v gives %+v", trial, on, tg, got, rule, ev)
				}
				if rule.On != on {
					t.Fatalf("rule on %s, want %s", rule.On, on)
				}
			}
		}
	}
	if unmet == 0 {
		t.Error("no trial had an unmet target: the test does not exercise that case")
	}
}

// TestFitSmallGrid: with a coarse OnBoth grid a rule Fit returns meets the target and is no
// better than the exhaustive optimum.
func TestFitSmallGrid(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 100 {
		recs := randomRecords(rng, 50+rng.IntN(100))
		for _, tg := range []Target{{TargetRisk, 0.1}, {TargetCoverage, 0.7}} {
			want, ok := bruteForce(recs, OnBoth, tg)
			rule, got, err := Fit(recs, Options{Target: tg, On: OnBoth, Grid: 4})
			if !ok || errors.Is(err, ErrTargetUnmet) {
				// A coarse grid may miss every rule that meets the target.
				continue
			}
			if err != nil {
				t.Fatalf("trial %d %s: %v", trial, tg, err)
			}
			if tg.Kind == TargetRisk && (!(got.Risk <= tg.Value) || got.Accepted > want.Accepted) {
				t.Fatalf("trial %d %s: %+v beats or misses the optimum %+v", trial, tg, got, want)
			}
			if tg.Kind == TargetCoverage && (!(got.Coverage >= tg.Value) || !(got.Risk >= want.Risk)) {
				t.Fatalf("trial %d %s: %+v beats or misses the optimum %+v", trial, tg, got, want)
			}
			if rule.Evaluate(recs) != got {
				t.Fatalf("trial %d: reported result is not the rule's", trial)
			}
		}
	}
}

// TestFitCases: hand-made cases with known answers, ties and impossible targets.
func TestFitCases(t *testing.T) {
	r := func(c, m float64, ok bool) Record { return Record{Confidence: c, MutualInfo: m, Correct: ok} }
	four := []Record{r(0.9, 0.01, true), r(0.8, 0.02, true), r(0.7, 0.00, false), r(0.6, 0.03, true)}
	tied := []Record{r(0.9, 0, true), r(0.8, 0, true), r(0.8, 0, false), r(0.5, 0, true)}
	sd := func(sd float64, ok bool) Record { return Record{EpistemicStd: sd, Correct: ok} }
	sds := []Record{sd(0.1, true), sd(0.2, false), sd(0.05, true), sd(0.7, true)}
	for _, c := range []struct {
		name     string
		recs     []Record
		opt      Options
		wantRule Rule
		wantA    int
		wantE    int
		unmet    string // substring of the error, if the target cannot be met
	}{
		{"risk 0 on confidence", four, Options{Target: Target{TargetRisk, 0}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.8}, 2, 0, ""},
		{"risk 0.25 on confidence accepts all", four, Options{Target: Target{TargetRisk, 0.25}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.6}, 4, 1, ""},
		{"risk 0 on mutual info", four, Options{Target: Target{TargetRisk, 0}, On: OnMutualInfo},
			Rule{}, 0, 0, "lowest risk at non-zero coverage is 0.25 (coverage 1, 4 of 4 accepted, 1 wrong)"},
		{"risk 0 on both", four, Options{Target: Target{TargetRisk, 0}, On: OnBoth},
			Rule{}, 2, 0, ""},
		// A coverage target c needs ⌈c·(n+1)⌉ of the n = 4 records: 0.4 two (the two right ones
		// above 0.7), 0.5 three — then the wrong record at 0.7 comes in (risk 1/3), and taking
		// 0.6 as well has the lower risk 1/4.
		{"coverage 0.4 on confidence", four, Options{Target: Target{TargetCoverage, 0.4}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.8}, 2, 0, ""},
		{"coverage 0.5 on confidence", four, Options{Target: Target{TargetCoverage, 0.5}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.6}, 4, 1, ""},
		// Coverage above n/(n+1) = 0.8 takes every record, and then no threshold: the fit
		// data's largest MI (0.03) would refuse new inputs above it.
		{"coverage 1", four, Options{Target: Target{TargetCoverage, 1}, On: OnMutualInfo},
			Rule{On: OnMutualInfo, MaxMutualInfo: math.Inf(1)}, 4, 1, ""},
		{"coverage 0.81 on both", four, Options{Target: Target{TargetCoverage, 0.81}, On: OnBoth},
			Rule{On: OnBoth, MaxMutualInfo: math.Inf(1)}, 4, 1, ""},
		// Ties: the two records at 0.8 go together, so risk 0 only keeps the first.
		{"tie", tied, Options{Target: Target{TargetRisk, 0}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.9}, 1, 0, ""},
		// Coverage ≥ 0.5: threshold 0.8 (3 accepted, risk 1/3) or 0.5 (4 accepted, risk 1/4);
		// the lower risk wins although it covers more.
		{"tie coverage 0.5", tied, Options{Target: Target{TargetCoverage, 0.5}, On: OnConfidence},
			Rule{On: OnConfidence, MinConfidence: 0.5}, 4, 1, ""},
		// A regression model's rule: the record at sd 0.2 is wrong, so risk 0 keeps the two
		// below it (coverage 0.4 too: ⌈0.4·5⌉ = 2); coverage 0.5 (three records) and 0.75 (four)
		// must take it, and then 0.7 (risk 1/4) beats 0.2 (risk 1/3).
		{"risk 0 on epistemic std", sds, Options{Target: Target{TargetRisk, 0}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: 0.1}, 2, 0, ""},
		{"coverage 0.4 on epistemic std", sds, Options{Target: Target{TargetCoverage, 0.4}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: 0.1}, 2, 0, ""},
		{"coverage 0.5 on epistemic std", sds, Options{Target: Target{TargetCoverage, 0.5}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: 0.7}, 4, 1, ""},
		{"coverage 0.75 on epistemic std", sds, Options{Target: Target{TargetCoverage, 0.75}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: 0.7}, 4, 1, ""},
		{"coverage 0.81 on epistemic std", sds, Options{Target: Target{TargetCoverage, 0.81}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: math.Inf(1)}, 4, 1, ""},
		{"risk 0.4 on epistemic std accepts all", sds, Options{Target: Target{TargetRisk, 0.4}, On: OnEpistemicStd},
			Rule{On: OnEpistemicStd, MaxEpistemicStd: 0.7}, 4, 1, ""},
		{"everything wrong", []Record{r(0.9, 0, false), r(0.4, 0, false)}, Options{Target: Target{TargetRisk, 0.5}, On: OnBoth},
			Rule{}, 0, 0, "lowest risk at non-zero coverage is 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rule, res, err := Fit(c.recs, c.opt)
			if c.unmet != "" {
				if !errors.Is(err, ErrTargetUnmet) || !strings.Contains(err.Error(), c.unmet) {
					t.Fatalf("err %v, want ErrTargetUnmet naming %q", err, c.unmet)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.opt.On == OnBoth && c.wantRule == (Rule{}) {
				// Only the rule's effect is specified here.
				rule = Rule{}
				c.wantRule = Rule{}
			}
			if rule != c.wantRule || res.Accepted != c.wantA || res.Errors != c.wantE {
				t.Errorf("got %+v %+v, want %+v with %d accepted, %d wrong", rule, res, c.wantRule, c.wantA, c.wantE)
			}
		})
	}
}

// TestFitBothBeatsEither: one wrong record has low confidence but low mutual information, the
// other high confidence but high mutual information; only a rule on both scores excludes both
// and keeps the three right ones.
func TestFitBothBeatsEither(t *testing.T) {
	recs := []Record{rec(0.95, 0.001, true), rec(0.9, 0.002, true), rec(0.85, 0.05, false), rec(0.8, 0.003, true), rec(0.6, 0.001, false)}
	risk0 := Target{TargetRisk, 0}
	for _, c := range []struct {
		on    On
		wantA int // -1: unmet
	}{{OnConfidence, 2}, {OnMutualInfo, -1}, {OnBoth, 3}} {
		rule, res, err := Fit(recs, Options{Target: risk0, On: c.on})
		if c.wantA < 0 {
			if !errors.Is(err, ErrTargetUnmet) {
				t.Errorf("%s: %+v %v, want ErrTargetUnmet", c.on, res, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if res.Accepted != c.wantA || res.Errors != 0 {
			t.Errorf("%s: %+v (rule %+v), want %d accepted, 0 wrong", c.on, res, rule, c.wantA)
		}
	}
}

// TestFitErrors: bad options and records are errors.
func TestFitErrors(t *testing.T) {
	ok := []Record{rec(0.9, 0, true)}
	for _, c := range []struct {
		name string
		recs []Record
		opt  Options
		want string
	}{
		{"no records", nil, Options{Target: Target{TargetRisk, 0.1}, On: OnBoth}, "no records"},
		{"risk 1", ok, Options{Target: Target{TargetRisk, 1}, On: OnBoth}, "target risk"},
		{"risk NaN", ok, Options{Target: Target{TargetRisk, math.NaN()}, On: OnBoth}, "target risk"},
		{"coverage 0", ok, Options{Target: Target{TargetCoverage, 0}, On: OnBoth}, "target coverage"},
		{"kind", ok, Options{Target: Target{"accuracy", 0.5}, On: OnBoth}, "target kind"},
		{"on", ok, Options{Target: Target{TargetRisk, 0.1}, On: "entropy"}, "entropy"},
		{"NaN score", []Record{rec(math.NaN(), 0, true)}, Options{Target: Target{TargetRisk, 0.1}, On: OnBoth}, "record 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := Fit(c.recs, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err %v, want one naming %q", err, c.want)
			}
		})
	}
}

// TestClampKeepsDecisions: a slightly negative mutual information or a confidence above 1
// (rounding) is clamped, and the fitted thresholds make the same decisions on the raw records.
func TestClampKeepsDecisions(t *testing.T) {
	recs := []Record{rec(1.0000001, -1e-9, true), rec(0.7, 0.01, false), rec(0.8, 0.001, true)}
	rule, res, err := Fit(recs, Options{Target: Target{TargetRisk, 0}, On: OnBoth})
	if err != nil {
		t.Fatal(err)
	}
	if !(rule.MinConfidence <= 1) || !(rule.MaxMutualInfo >= 0) {
		t.Errorf("thresholds out of the policy's range: %+v", rule)
	}
	if rule.Evaluate(recs) != res || res.Accepted != 2 {
		t.Errorf("rule %+v: %+v on the raw records, fit %+v", rule, rule.Evaluate(recs), res)
	}
	if err := rule.Policy(8).Validate(runtime.Classification); err != nil {
		t.Error(err)
	}
}

// TestEpistemicStdPolicyDecides: a regression rule fitted on records whose score is the
// square root of the largest of float32 epistemic variances, as `edgebnn calibrate` computes it,
// acts on exactly the predictions its runtime policy's Decide acts on, and validates for a
// regression model only.
func TestEpistemicStdPolicyDecides(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const n, outputs = 400, 3
	vars := make([][]float32, n)
	recs := make([]Record, n)
	for i := range recs {
		vars[i] = make([]float32, outputs)
		top := float32(0)
		for j := range vars[i] {
			vars[i][j] = float32(rng.IntN(50)) / 64 // ties and exact squares
			top = max(top, vars[i][j])
		}
		recs[i] = Record{EpistemicStd: math.Sqrt(float64(top)), Correct: rng.Float64() > float64(top)}
	}
	for _, tg := range []Target{{TargetRisk, 0.2}, {TargetCoverage, 0.5}, {TargetCoverage, 0.99}} {
		rule, res, err := Fit(recs, Options{Target: tg, On: OnEpistemicStd})
		if err != nil {
			t.Fatalf("%s: %v", tg, err)
		}
		pol := rule.Policy(8)
		if pol.MinConfidence != nil || pol.MaxMutualInfo != nil || pol.MaxEpistemicStd == nil || *pol.MaxEpistemicStd != rule.MaxEpistemicStd {
			t.Fatalf("%s: policy %+v from rule %+v", tg, pol, rule)
		}
		if err := pol.Validate(runtime.Regression); err != nil {
			t.Errorf("%s: %v", tg, err)
		}
		if err := pol.Validate(runtime.Classification); err == nil {
			t.Errorf("%s: a max_epistemic_std policy validates for a classifier", tg)
		}
		acted := 0
		for i, r := range recs {
			d := pol.Decide(&runtime.Prediction{EpistemicVar: vars[i]})
			if d.Act != rule.Accept(r) {
				t.Fatalf("%s: record %d (variances %v): Decide acts %v, the rule %v", tg, i, vars[i], d.Act, rule.Accept(r))
			}
			if d.Act {
				acted++
			}
		}
		if acted != res.Accepted {
			t.Errorf("%s: Decide acts on %d, Fit reports %d accepted", tg, acted, res.Accepted)
		}
	}
	if _, _, err := Fit([]Record{{EpistemicStd: math.Inf(1), Correct: true}}, Options{Target: Target{TargetRisk, 0.1}, On: OnEpistemicStd}); err == nil ||
		!strings.Contains(err.Error(), "epistemic std +Inf") {
		t.Errorf("an infinite epistemic std: %v", err)
	}
}
