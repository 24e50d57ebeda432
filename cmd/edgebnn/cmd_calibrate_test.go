//go:build !device

package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// calibrateInputs writes the mlp_ffgu fixture's 256 reference test images and their labels as a
// CSV (784 raw pixel columns 0–255, as the built-in model's preprocessing expects; the label
// last) and the built-in model to a new directory, and returns the directory and the two paths.
func calibrateInputs(t *testing.T) (dir, csv, model string) {
	t.Helper()
	dir = t.TempDir()
	xs, labels := referenceImages(t)
	var b strings.Builder
	for i, y := range labels {
		for _, v := range xs[i*784 : (i+1)*784] {
			fmt.Fprintf(&b, "%g,", math.Round(float64(v)*255))
		}
		fmt.Fprintf(&b, "%d\n", y)
	}
	csv, model = filepath.Join(dir, "val.csv"), filepath.Join(dir, "m.ebnn")
	mustWrite(t, csv, []byte(b.String()))
	mustWrite(t, model, demoModel)
	return dir, csv, model
}

// sectionsBut returns the section table of a model file without the named section.
func sectionsBut(t *testing.T, path, skip string) []format.SectionInfo {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []format.SectionInfo
	for _, s := range f.Sections() {
		if s.Name != skip {
			s.Offset = 0
			out = append(out, s)
		}
	}
	return out
}

// TestCalibrateCommand: calibrate writes a model file whose policy meets the target on the fit
// part, whose other sections are the input's (same checksums), with a plot; calibrating the
// result again replaces the policy and takes the samples from it.
func TestCalibrateCommand(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	m2, m3, png := filepath.Join(dir, "m2.ebnn"), filepath.Join(dir, "m3.ebnn"), filepath.Join(dir, "curve.png")
	code, out, errs := runCLI("calibrate", "--model", model, "--data", "csv:"+csv, "--target-risk", "0.1",
		"--samples", "16", "--seed", "3", "--out", m2, "--plot", png)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	checkContains(t, "output", out, "256 inputs, 16 samples", "128 to fit, 128 held out", "Target risk ≤ 0.1 on both", "held out", "Clopper–Pearson")
	t.Log("\n" + out)
	m, err := runtime.Load(m2)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Policy()
	m.Close()
	if p == nil || p.MinConfidence == nil || p.MaxMutualInfo == nil || p.Samples != 16 || p.Calibration == nil {
		t.Fatalf("policy %+v", p)
	}
	c := p.Calibration
	if c.Target != "risk" || c.Value != 0.1 || c.On != "both" || c.Seed != 3 || c.Fit.N != 128 || c.Holdout.N != 128 ||
		c.Fit.Risk > 0.1 || c.Fit.Coverage == 0 || !strings.HasPrefix(c.Data, "csv:") {
		t.Errorf("calibration %+v", c)
	}
	if a, b := fmt.Sprint(sectionsBut(t, model, runtime.PolicyBlob)), fmt.Sprint(sectionsBut(t, m2, runtime.PolicyBlob)); a != b {
		t.Errorf("sections changed:\n%s\n%s", a, b)
	}
	// inspect shows the policy, in text and JSON.
	if code, out, errs := runCLI("inspect", m2); code != 0 || !strings.Contains(out, "policy: act when confidence ≥") ||
		!strings.Contains(out, "calibrated for risk ≤ 0.1 on both") || !strings.Contains(out, "held out n=128") {
		t.Errorf("inspect: exit %d %s\n%s", code, errs, out)
	}
	if code, out, errs := runCLI("inspect", "--json", m2); code != 0 || !strings.Contains(out, `"max_mutual_info"`) ||
		!strings.Contains(out, `"holdout"`) {
		t.Errorf("inspect --json: exit %d %s\n%s", code, errs, out)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	// Again on the calibrated file, to a coverage target on confidence: the policy is replaced.
	code, out, errs = runCLI("calibrate", "--model", m2, "--data", "csv:"+csv, "--target-coverage", "0.5",
		"--on", "confidence", "--out", m3)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if !strings.Contains(out, "16 samples") {
		t.Errorf("the samples do not default to the policy's:\n%s", out)
	}
	m, err = runtime.Load(m3)
	if err != nil {
		t.Fatal(err)
	}
	p = m.Policy()
	m.Close()
	if p.MaxMutualInfo != nil || p.MinConfidence == nil || p.Calibration.Target != "coverage" || p.Calibration.Fit.Coverage < 0.5 {
		t.Errorf("policy %+v %+v", p, p.Calibration)
	}
	if n2, n3 := len(sectionsBut(t, m2, "")), len(sectionsBut(t, m3, "")); n2 != n3 {
		t.Errorf("%d sections, then %d: the policy was not replaced", n2, n3)
	}
}

// TestCalibrateErrors: bad command lines are usage errors (exit 2) naming the flag; bad files
// and impossible targets are errors (exit 1) naming the file or the best achievable.
func TestCalibrateErrors(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	// Ten blank images labelled 0 … 9: they get the same prediction, so every rule accepts all
	// (risk 0.9) or none.
	blank := filepath.Join(dir, "blank.csv")
	var b strings.Builder
	for y := range 10 {
		b.WriteString(strings.Repeat("0,", 784) + fmt.Sprint(y) + "\n")
	}
	mustWrite(t, blank, []byte(b.String()))
	out := filepath.Join(dir, "out.ebnn")
	base := []string{"calibrate", "--data", "csv:" + csv, "--samples", "4"}
	for _, c := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no model", []string{"--target-risk", "0.1", "--out", out}, 2, "--model"},
		{"no out", []string{"--model", model, "--target-risk", "0.1"}, 2, "--out"},
		{"no target", []string{"--model", model, "--out", out}, 2, "--target-risk"},
		{"two targets", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--target-coverage", "0.5"}, 2, "exactly one"},
		{"risk 1", []string{"--model", model, "--out", out, "--target-risk", "1"}, 2, "--target-risk"},
		{"coverage 0", []string{"--model", model, "--out", out, "--target-coverage", "0"}, 2, "--target-coverage"},
		{"risk NaN", []string{"--model", model, "--out", out, "--target-risk", "NaN"}, 2, "--target-risk NaN is not in [0, 1)"},
		{"coverage NaN", []string{"--model", model, "--out", out, "--target-coverage", "NaN"}, 2, "--target-coverage NaN is not in (0, 1]"},
		{"on", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--on", "entropy"}, 2, "--on"},
		{"split", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--split", "1"}, 2, "--split"},
		{"data", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "mnist"}, 2, "--data"},
		{"out is the model", []string{"--model", model, "--out", model, "--target-risk", "0.1"}, 1, "--out"},
		{"out is the data", []string{"--model", model, "--out", csv, "--target-risk", "0.1"}, 1, "--out"},
		{"plot is the out", []string{"--model", model, "--out", out, "--plot", out, "--target-risk", "0.1"}, 1, "--plot"},
		{"missing model", []string{"--model", filepath.Join(dir, "none.ebnn"), "--out", out, "--target-risk", "0.1"}, 1, "--model"},
		{"missing data", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "csv:" + filepath.Join(dir, "none.csv")}, 1, "--data"},
		{"unmet", []string{"--model", model, "--out", out, "--target-risk", "0.5", "--data", "csv:" + blank}, 1,
			"cannot be met: the lowest risk at non-zero coverage is 0.8 (coverage 1, 5 of 5 accepted, 4 wrong)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, base...), c.args...)
			code, stdout, stderr := runCLI(args...)
			if code != c.code || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, stderr %q; want exit %d naming %q (stdout %q)", code, stderr, c.code, c.want, stdout)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s was written", out)
			}
		})
	}
}
