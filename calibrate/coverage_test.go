package calibrate

import (
	"math"
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
