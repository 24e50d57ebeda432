//go:build !device

package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/calibrate"
)

// TestCalibrateCoverageNote checks the note calibrate prints when the held-out coverage falls
// below a coverage target: split conformal prediction's guarantee (the target holds on new
// inputs on average) is claimed for a rule on one score only. A rule on both scores can refuse
// a new input on either: with independent uniform scores, c = 0.9 and 20 fit inputs it passed
// 86 % of new inputs on average, as the fit data's own coverage had (docs/CALIBRATE.md).
func TestCalibrateCoverageNote(t *testing.T) {
	const conformal = "holds on new data on average (split conformal)"
	for _, c := range []struct {
		on        calibrate.On
		want, not string
	}{
		{calibrate.OnConfidence, conformal, "not for both"},
		{calibrate.OnMutualInfo, conformal, "not for both"},
		{calibrate.OnBoth, "not for --on both", conformal},
	} {
		rep := &calibrate.Report{
			Options: calibrate.Options{Target: calibrate.Target{Kind: calibrate.TargetCoverage, Value: 0.9}, On: c.on},
			Rule:    calibrate.Rule{On: c.on, MinConfidence: 0.5, MaxMutualInfo: 0.1},
			Fit:     calibrate.Result{N: 100, Accepted: 91, Coverage: 0.91},
			Holdout: calibrate.Result{N: 100, Accepted: 85, Coverage: 0.85},
		}
		cal := &calibration{report: rep, n: 200, fitN: 100, holdoutN: 100,
			curves: []scoreCurve{{score: calibrate.OnConfidence}, {score: calibrate.OnMutualInfo}}}
		o := &calibrateFlags{model: "m.ebnn", out: "m2.ebnn", data: "csv:x.csv", target: rep.Options.Target, on: c.on, split: 0.5}
		var buf bytes.Buffer
		if err := printCalibration(&buf, o, "csv:x.csv", 8, cal); err != nil {
			t.Fatal(err)
		}
		var note string
		for _, l := range strings.Split(buf.String(), "\n") {
			if strings.HasPrefix(l, "note: the held-out coverage") {
				note = l
			}
		}
		if !strings.Contains(note, c.want) || strings.Contains(note, c.not) {
			t.Errorf("--on %s: note %q, want it to say %q and not %q", c.on, note, c.want, c.not)
		}
	}
}
