package calibrate

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestFullCoverageHasNoThreshold: a coverage target above n/(n+1) must act on new inputs whose
// scores lie beyond every fit record's. The rule had kept the fit data's extremes as thresholds
// (--target-coverage 1 acted on 99.6 % of new data); now it has none, and its policy holds none.
func TestFullCoverageHasNoThreshold(t *testing.T) {
	fit := make([]Record, 50)
	for i := range fit {
		fit[i] = Record{Confidence: 0.5 + 0.01*float64(i), MutualInfo: 0.001 * float64(i), EpistemicStd: 0.1 * float64(i), Correct: i%5 != 0}
	}
	beyond := []Record{{Confidence: 0.2, MutualInfo: 0.9, EpistemicStd: 50, Correct: true}}
	for _, on := range []On{OnConfidence, OnMutualInfo, OnBoth, OnEpistemicStd} {
		rule, res, err := Fit(fit, Options{Target: Target{TargetCoverage, 1}, On: on})
		if err != nil {
			t.Fatalf("%s: %v", on, err)
		}
		if res.Accepted != len(fit) {
			t.Errorf("%s: fit accepted %d of %d", on, res.Accepted, len(fit))
		}
		if got := rule.Evaluate(beyond); got.Accepted != 1 {
			t.Errorf("%s: rule %+v refuses an input beyond the fit data's scores", on, rule)
		}
		p := rule.Policy(8)
		if p.MaxMutualInfo != nil || p.MaxEpistemicStd != nil || p.MinConfidence != nil {
			t.Errorf("%s: policy %+v has a threshold", on, p)
		}
	}
	// At c ≤ n/(n+1) the fit data's extreme stays the threshold (50 records: 0.98 ≤ 50/51).
	rule, _, err := Fit(fit, Options{Target: Target{TargetCoverage, 0.98}, On: OnEpistemicStd})
	if err != nil {
		t.Fatal(err)
	}
	if math.IsInf(rule.MaxEpistemicStd, 1) || rule.Evaluate(beyond).Accepted != 0 {
		t.Errorf("coverage 0.98 of 50: rule %+v, want a finite threshold refusing std 50", rule)
	}
}

// TestCoverageTargetIsConformal: a coverage target c holds on new inputs, in expectation over
// fit sets (split conformal prediction). Scores are uniform on (0, 1) and only the record of the
// highest score is right, so accepting the a highest has risk (a−1)/a and the lowest-risk rule
// accepting at least k fit records accepts exactly the k highest; its threshold τ is then the k-th largest of n uniforms, and a new input passes with
// probability 1 − τ ~ Beta(k, n+1−k): mean k/(n+1). With k = ⌈c·(n+1)⌉ that mean is at least c;
// the fit data's own coverage (k = ⌈c·n⌉) gave 18/21 = 0.857 for c = 0.9, n = 20. The test
// checks the mean over trials against k/(n+1) and c within four standard errors.
func TestCoverageTargetIsConformal(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	const trials = 3000
	for _, c := range []struct{ n, num, den int }{{20, 9, 10}, {50, 97, 100}, {9, 1, 2}, {100, 4, 5}} {
		target := float64(c.num) / float64(c.den)
		k := (c.num*(c.n+1) + c.den - 1) / c.den // ⌈c·(n+1)⌉ in integers
		recs := make([]Record, c.n)
		var sum float64
		for range trials {
			top := 0
			for i := range recs {
				recs[i] = Record{Confidence: rng.Float64()}
				if recs[i].Confidence > recs[top].Confidence {
					top = i
				}
			}
			recs[top].Correct = true
			rule, res, err := Fit(recs, Options{Target: Target{TargetCoverage, target}, On: OnConfidence})
			if err != nil {
				t.Fatal(err)
			}
			if res.Accepted < k {
				t.Fatalf("n %d, c %g: %d accepted, fewer than ⌈c·(n+1)⌉ = %d", c.n, target, res.Accepted, k)
			}
			sum += 1 - rule.MinConfidence // P(a new uniform score passes)
		}
		mean := sum / trials
		want := float64(k) / float64(c.n+1)
		se := math.Sqrt(float64(k)*float64(c.n+1-k)/(float64(c.n+1)*float64(c.n+1)*float64(c.n+2))) / math.Sqrt(trials)
		t.Logf("n %d, c %g: new-input coverage %.4f ± %.4f, k/(n+1) = %.4f", c.n, target, mean, se, want)
		if !(math.Abs(mean-want) <= 4*se) || !(mean >= target-4*se) {
			t.Errorf("n %d, c %g: new-input coverage %.4f ± %.4f, want %.4f (≥ %g)", c.n, target, mean, se, want, target)
		}
	}
}
