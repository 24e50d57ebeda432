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
	"github.com/edgebnn/edgebnn/train"
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
		!(c.Fit.Risk <= 0.1) || c.Fit.Coverage == 0 || !strings.HasPrefix(c.Data, "csv:") {
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
	if p.MaxMutualInfo != nil || p.MinConfidence == nil || p.Calibration.Target != "coverage" || !(p.Calibration.Fit.Coverage >= 0.5) {
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
	// One row labelled -1 among class numbers: the column became names ("-1" < "0" < …) and
	// every label moved up by one, silently.
	neg := filepath.Join(dir, "neg.csv")
	mustWrite(t, neg, []byte(b.String()+strings.Repeat("0,", 784)+"-1\n"))
	// An output path that is one of the Fashion-MNIST files --data fmnist reads.
	fm := t.TempDir()
	labels := filepath.Join(fm, "t10k-labels-idx1-ubyte.gz")
	mustWrite(t, labels, []byte("labels"))
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
		{"plot is the out", []string{"--model", model, "--out", filepath.Join(dir, "same.png"), "--plot", filepath.Join(dir, "same.png"), "--target-risk", "0.1"}, 1, "--plot"},
		{"missing model", []string{"--model", filepath.Join(dir, "none.ebnn"), "--out", out, "--target-risk", "0.1"}, 1, "--model"},
		{"missing data", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "csv:" + filepath.Join(dir, "none.csv")}, 1, "--data"},
		{"empty csv path", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "csv:"}, 2, "names no file"},
		{"csv-target with fmnist", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "fmnist", "--csv-target", "y"}, 2, "--csv-target"},
		{"data-dir with csv", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data-dir", fm}, 2, "--data-dir"},
		{"plot format", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--plot", filepath.Join(dir, "p.xyz")}, 2, `unsupported image format "xyz"`},
		{"out is a data file", []string{"--model", model, "--out", labels, "--target-risk", "0.1", "--data", "fmnist", "--data-dir", fm}, 1, "--out " + labels},
		{"label -1", []string{"--model", model, "--out", out, "--target-risk", "0.1", "--data", "csv:" + neg}, 1, `"-1`},
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

// trainRegressionModel trains a small regression MLP (FFG-W) on y = sin(3x) + noise and converts it;
// it returns the model file and the CSV (x, y).
func trainRegressionModel(t *testing.T) (model, csv string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("x,y\n")
	for i := range 240 {
		x := -1 + 2*float64(i)/239
		fmt.Fprintf(&b, "%.5f,%.5f\n", x, math.Sin(3*x)+0.1*math.Sin(37*float64(i)))
	}
	csv = filepath.Join(dir, "reg.csv")
	mustWrite(t, csv, []byte(b.String()))
	c := train.DefaultConfig()
	c.Data, c.Task, c.Arch, c.Posterior = "csv:"+csv, "regression", "mlp:1-16-1", "ffg_w"
	c.Epochs, c.BatchSize, c.EvalEvery, c.LR = 40, 40, 0, 1e-2
	c.Out = filepath.Join(dir, "reg.ckpt.ebnn")
	trainConfig(t, c)
	model = filepath.Join(dir, "reg.ebnn")
	runOK(t, "convert", "--checkpoint", c.Out, "--out", model)
	return model, csv
}

// TestCalibrateRegression: a regression model's policy thresholds the epistemic standard
// deviation, an error being an output farther than --tolerance from its target: the policy
// holds only max_epistemic_std and records the tolerance; a tolerance nothing misses makes
// every rule riskless (risk 0 accepts everything), one everything misses makes a risk target
// unmeetable; the flags that do not fit a regression model are refused, naming them.
func TestCalibrateRegression(t *testing.T) {
	model, csv := trainRegressionModel(t)
	dir := filepath.Dir(model)
	m2, png := filepath.Join(dir, "m2.ebnn"), filepath.Join(dir, "risk.png")
	out := runOK(t, "calibrate", "--model", model, "--data", "csv:"+csv, "--tolerance", "0.3", "--target-coverage", "0.5",
		"--samples", "16", "--seed", "5", "--out", m2, "--plot", png)
	checkContains(t, "output", out, "240 inputs, 16 samples", "120 to fit, 120 held out", "off by more than 0.3",
		"MAX EPISTEMIC STD", "RMSE", "Target coverage ≥ 0.5 on epistemic_std: max_epistemic_std ", "Clopper–Pearson")
	t.Log("\n" + out)
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot: %v", err)
	}
	m, err := runtime.Load(m2)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Policy()
	m.Close()
	if p == nil || p.MaxEpistemicStd == nil || p.MinConfidence != nil || p.MaxMutualInfo != nil || p.Samples != 16 || p.Calibration == nil {
		t.Fatalf("policy %+v", p)
	}
	if c := p.Calibration; c.On != "epistemic_std" || c.Tolerance != 0.3 || c.Target != "coverage" || c.Fit.N != 120 ||
		c.Holdout.N != 120 || !(c.Fit.Coverage >= 0.5) || !(*p.MaxEpistemicStd > 0) {
		t.Errorf("calibration %+v, max_epistemic_std %g", c, *p.MaxEpistemicStd)
	}
	checkContains(t, "inspect", runOK(t, "inspect", m2), "act when epistemic std ≤ ", "an error being an output off by more than 0.3")

	// Nothing is an error: risk 0 is met by accepting every input.
	m3 := filepath.Join(dir, "m3.ebnn")
	out = runOK(t, "calibrate", "--model", model, "--data", "csv:"+csv, "--tolerance", "1e6", "--target-risk", "0",
		"--samples", "16", "--out", m3)
	m, err = runtime.Load(m3)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Policy().Calibration
	m.Close()
	if c.Fit.Coverage != 1 || c.Fit.Risk != 0 {
		t.Errorf("tolerance 1e6, risk 0: fit %+v, want everything accepted", c.Fit)
	}
	// With everything accepted, the table's 100 % row and the held-out part are the same inputs:
	// the RMSE computed both ways (sorted prefix sums, the rule's accepted set) agrees.
	var row, part []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 0 && (f[0] == "≥" && f[1] == "100%") {
			row = f
		} else if len(f) > 2 && f[0] == "held" && f[1] == "out" {
			part = f
		}
	}
	if len(row) != 5 || len(part) != 8 || part[4] != "100.00%" || row[4] != part[7] {
		t.Errorf("the 100%% row %q and the held-out part %q disagree on the RMSE", row, part)
	}
	// Everything is an error: no rule has risk ≤ 0.5 at non-zero coverage.
	code, _, stderr := runCLI("calibrate", "--model", model, "--data", "csv:"+csv, "--tolerance", "1e-9", "--target-risk", "0.5",
		"--samples", "16", "--out", m3)
	if code != 1 || !strings.Contains(stderr, "target cannot be met: the lowest risk at non-zero coverage is 1") {
		t.Errorf("tolerance 1e-9: exit %d, %s", code, stderr)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data", "csv:" + csv}, "give --tolerance T"},
		{[]string{"--data", "csv:" + csv, "--tolerance", "0.3", "--on", "confidence"}, "--on confidence is for classifiers"},
		{[]string{"--tolerance", "0.3"}, "--data must be csv:PATH"},
		{[]string{"--data", "csv:" + csv, "--tolerance", "-1"}, "--tolerance -1 is not in (0, 1e15]"},
		{[]string{"--data", "csv:" + csv, "--tolerance", "NaN"}, "--tolerance NaN is not in"},
	} {
		args := append([]string{"calibrate", "--model", model, "--target-risk", "0.1", "--out", m3}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, err := os.Stat(m3); err != nil {
		t.Errorf("the first run with --out m3 should have written it: %v", err)
	}
}

// TestCalibrateClassifierRefusesRegressionFlags: --tolerance and --on epistemic_std are refused
// for a classifier, naming the flag.
func TestCalibrateClassifierRefusesRegressionFlags(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tolerance", "0.5"}, "--tolerance is for regression models"},
		{[]string{"--on", "epistemic_std"}, "--on epistemic_std is for regression models"},
	} {
		args := append([]string{"calibrate", "--model", model, "--data", "csv:" + csv, "--target-risk", "0.1", "--out", filepath.Join(dir, "x.ebnn")}, tc.args...)
		code, _, stderr := runCLI(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}
