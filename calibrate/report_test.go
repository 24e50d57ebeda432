package calibrate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestSplit: the split is a partition of the right sizes, the same for the same seed and
// different for another seed.
func TestSplit(t *testing.T) {
	for _, c := range []struct {
		n    int
		frac float64
		fit  int
	}{{10, 0.5, 5}, {11, 0.5, 6}, {100, 0.3, 30}, {2, 0.5, 1}} {
		fit, hold, err := Split(c.n, c.frac, 7)
		if err != nil {
			t.Fatal(err)
		}
		if len(fit) != c.fit || len(hold) != c.n-c.fit {
			t.Errorf("n %d frac %g: %d + %d, want %d fit", c.n, c.frac, len(fit), len(hold), c.fit)
		}
		all := slices.Concat(fit, hold)
		slices.Sort(all)
		for i, v := range all {
			if v != i {
				t.Fatalf("n %d: not a partition of 0…n−1: %v %v", c.n, fit, hold)
			}
		}
		if !slices.IsSorted(fit) || !slices.IsSorted(hold) {
			t.Errorf("parts not sorted")
		}
		again, _, _ := Split(c.n, c.frac, 7)
		if !slices.Equal(fit, again) {
			t.Errorf("same seed, different split")
		}
	}
	a, _, _ := Split(1000, 0.5, 1)
	b, _, _ := Split(1000, 0.5, 2)
	if slices.Equal(a, b) {
		t.Error("seeds 1 and 2 give the same split")
	}
	// Pinned: the split must not change between releases (a stored policy names its seed).
	if got, _, _ := Split(8, 0.5, 42); !slices.Equal(got, pinnedSplit) {
		t.Errorf("Split(8, 0.5, 42) fit part %v, pinned %v", got, pinnedSplit)
	}
	for _, c := range []struct {
		n    int
		frac float64
	}{{1, 0.5}, {10, 0}, {10, 1}, {10, math.NaN()}, {10, 0.01}} {
		if _, _, err := Split(c.n, c.frac, 1); err == nil {
			t.Errorf("Split(%d, %g) succeeded", c.n, c.frac)
		}
	}
}

var pinnedSplit = []int{0, 2, 3, 4}

// TestCurve: the curve's points match evaluating each threshold, with coverage increasing to 1.
func TestCurve(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	recs := randomRecords(rng, 200)
	for _, s := range []On{OnConfidence, OnMutualInfo, OnEpistemicStd} {
		pts, err := Curve(recs, s)
		if err != nil {
			t.Fatal(err)
		}
		if last := pts[len(pts)-1]; last.Coverage != 1 {
			t.Errorf("%s: last point covers %g", s, last.Coverage)
		}
		for i, p := range pts {
			r := Rule{On: s, MinConfidence: p.Threshold, MaxMutualInfo: p.Threshold, MaxEpistemicStd: p.Threshold}
			if got := r.Evaluate(recs); got != p.Result {
				t.Fatalf("%s point %d: %+v, evaluating gives %+v", s, i, p.Result, got)
			}
			if i > 0 && !(p.Coverage > pts[i-1].Coverage) {
				t.Fatalf("%s: coverage not increasing at %d", s, i)
			}
		}
		if p := AtCoverage(pts, 0.5); !(p.Coverage >= 0.5) {
			t.Errorf("AtCoverage(0.5) = %+v", p)
		}
	}
	if _, err := Curve(recs, OnBoth); err == nil {
		t.Error("a curve on both scores succeeded")
	}
}

// TestClopperPearson: known values (k = 0 has the closed form 1 − alpha^(1/n); the others were
// computed by bisection on the binomial CDF summed exactly with Python's math.comb).
func TestClopperPearson(t *testing.T) {
	for _, c := range []struct {
		k, n int
		want float64
	}{
		{0, 10, 1 - math.Pow(0.05, 0.1)},
		{0, 1000, 1 - math.Pow(0.05, 0.001)},
		{5, 100, 0.1022534},
		{50, 5000, 0.0126406},
		{3, 40, 0.1825869},
		{10, 10, 1},
		{0, 0, 1},
		{1, 2, 0.9746794},
	} {
		got, err := ClopperPearsonUpper(c.k, c.n, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if !(math.Abs(got-c.want) <= 1e-6) {
			t.Errorf("upper(%d, %d) = %.7f, want %.7f", c.k, c.n, got, c.want)
		}
	}
	if _, err := ClopperPearsonUpper(3, 2, 0.05); err == nil {
		t.Error("k > n accepted")
	}
}

// TestCalibrate: the report's fit result is Fit's on the fit part, the held-out result the
// rule's on the rest, and the policy carries both.
func TestCalibrate(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	recs := randomRecords(rng, 1000)
	opt := Options{Target: Target{TargetRisk, 0.1}, On: OnBoth, Seed: 3}
	rep, err := Calibrate(recs, opt)
	if err != nil {
		t.Fatal(err)
	}
	fi, hi, _ := Split(len(recs), DefaultSplit, 3)
	var fr, hr []Record
	for _, i := range fi {
		fr = append(fr, recs[i])
	}
	for _, i := range hi {
		hr = append(hr, recs[i])
	}
	if rep.Rule.Evaluate(fr) != rep.Fit || rep.Rule.Evaluate(hr) != rep.Holdout {
		t.Errorf("report %+v disagrees with evaluating its rule", rep)
	}
	if rep.Fit.N != 500 || rep.Holdout.N != 500 || !(rep.Fit.Risk <= 0.1) {
		t.Errorf("report %+v", rep)
	}
	if !(rep.HoldoutRiskUpper > rep.Holdout.Risk && rep.HoldoutRiskUpper < 1) {
		t.Errorf("upper bound %g, held-out risk %g", rep.HoldoutRiskUpper, rep.Holdout.Risk)
	}
	p := rep.Policy(32, "test")
	if err := p.Validate(runtime.Classification); err != nil {
		t.Fatal(err)
	}
	if p.MinConfidence == nil || p.MaxMutualInfo == nil || *p.MinConfidence != rep.Rule.MinConfidence ||
		p.Calibration.Holdout.N != 500 || p.Calibration.Seed != 3 || p.Samples != 32 {
		t.Errorf("policy %+v %+v", p, p.Calibration)
	}
}

// TestCalibrateHoldoutNonFinite: a non-finite score is an error naming its record in either part
// of the split; a NaN in the held-out part had been counted as an abstention.
func TestCalibrateHoldoutNonFinite(t *testing.T) {
	recs := make([]Record, 20)
	for i := range recs {
		recs[i] = Record{Confidence: 0.9, MutualInfo: 0.01, Correct: true}
	}
	opt := Options{Target: Target{Kind: TargetCoverage, Value: 1}, On: OnConfidence, Seed: 1}
	fit, hold, err := Split(len(recs), DefaultSplit, opt.Seed)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		part string
		k    int
	}{{"fit", fit[0]}, {"held-out", hold[0]}} {
		bad := append([]Record(nil), recs...)
		bad[c.k].Confidence = math.NaN()
		_, err := Calibrate(bad, opt)
		if want := fmt.Sprintf("record %d has a non-finite score", c.k); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("NaN in the %s part (record %d): error %v, want one containing %q", c.part, c.k, err, want)
		}
	}
}
