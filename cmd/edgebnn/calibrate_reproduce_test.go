//go:build !device

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/calibrate"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// convertDemoCLI converts the demo's fixture (demoFixture, its safetensors checkpoint) with the
// convert command into dir/m.ebnn and returns that path.
func convertDemoCLI(t *testing.T, dir string) string {
	t.Helper()
	m := filepath.Join(dir, "m.ebnn")
	runOK(t, "convert", "--checkpoint", filepath.Join(demoFixture, "state_dict.safetensors"),
		"--config", filepath.Join(demoFixture, "inference_config.json"), "--arch", filepath.Join(demoFixture, "model.txt"), "--out", m)
	return m
}

// TestCalibratedPolicyReproducesInPredict: predict on the calibration inputs, without --seed and
// in any batch size, takes exactly the decisions calibrate scored — the policy records the
// strategy (local; Auto's samples depend on the batch) and the seed of its K draws, which
// predict uses by default — so the fit part's risk and coverage stored in the policy are what the
// device does on those inputs. (They had differed: fit risk 6.29 % against the stored 4.57 %.)
func TestCalibratedPolicyReproducesInPredict(t *testing.T) {
	dir := t.TempDir()
	// The first 800 Fashion-MNIST test images (values in [0, 1]: the fixture has no
	// preprocessing); calibrate then predicts in batches of 100 (800/4 = 200 per worker).
	d, err := data.FashionMNISTHead(data.DefaultFashionMNISTDir, "test", 800)
	if err != nil {
		t.Skip(err)
	}
	d = d.Head(800)
	xs, labels := d.X, d.Labels
	var cal, in strings.Builder
	for i, y := range labels {
		for j, v := range xs[i*784 : (i+1)*784] {
			s := strconv.FormatFloat(float64(v), 'g', -1, 32)
			cal.WriteString(s + ",")
			if j > 0 {
				in.WriteString(",")
			}
			in.WriteString(s)
		}
		fmt.Fprintf(&cal, "%d\n", y)
		in.WriteString("\n")
	}
	calCSV, inCSV := filepath.Join(dir, "cal.csv"), filepath.Join(dir, "in.csv")
	mustWrite(t, calCSV, []byte(cal.String()))
	mustWrite(t, inCSV, []byte(in.String()))
	m, m2 := convertDemoCLI(t, dir), filepath.Join(dir, "m2.ebnn")
	const seed = 7
	runOK(t, "calibrate", "--model", m, "--data", "csv:"+calCSV, "--target-risk", "0.05", "--on", "both",
		"--samples", "32", "--seed", strconv.Itoa(seed), "--out", m2)
	mod, err := runtime.Load(m2)
	if err != nil {
		t.Fatal(err)
	}
	pol := mod.Policy()
	mod.Close()
	if pol.Strategy != "local" || pol.Seed == nil || *pol.Seed != seed {
		t.Fatalf("the policy records strategy %q, seed %v; want local and %d", pol.Strategy, pol.Seed, seed)
	}
	// Batches of 32 multiply in the same kernels as calibrate's of 100: the same bits. One input
	// at a time (GEMV) rounds its sums in another order: an input at a threshold may flip.
	checkPredictDecisions(t, m2, inCSV, "32", labels, seed, pol, 0)
	checkPredictDecisions(t, m2, inCSV, "1", labels, seed, pol, 0.01)
}

// checkPredictDecisions runs predict --batch batch on the calibration inputs and compares the
// fit part's coverage and risk with the policy's, to within tol.
func checkPredictDecisions(t *testing.T, m2, inCSV, batch string, labels []int, seed uint64, pol *runtime.Policy, tol float64) {
	t.Helper()
	out := runOK(t, "predict", "--model", m2, "--input", inCSV, "--json", "--batch", batch)
	var acts []bool
	var correct []bool
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for i := 0; sc.Scan(); i++ {
		var r struct {
			Pred     int    `json:"pred"`
			Decision string `json:"decision"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		acts = append(acts, r.Decision == "act")
		correct = append(correct, r.Pred == labels[i])
	}
	fi, _, err := calibrate.Split(len(labels), 0.5, seed)
	if err != nil {
		t.Fatal(err)
	}
	a, e := 0, 0
	for _, k := range fi {
		if acts[k] {
			a++
			if !correct[k] {
				e++
			}
		}
	}
	cov, risk := float64(a)/float64(len(fi)), float64(e)/float64(max(a, 1))
	t.Logf("predict --batch %s: coverage %.4f risk %.4f; policy %+v", batch, cov, risk, pol.Calibration.Fit)
	if !(math.Abs(cov-pol.Calibration.Fit.Coverage) <= tol) || !(math.Abs(risk-pol.Calibration.Fit.Risk) <= tol) {
		t.Errorf("predict --batch %s (K %d) on the fit part: coverage %.4f risk %.4f; the policy says coverage %.4f risk %.4f (target risk ≤ 0.05)",
			batch, pol.Samples, cov, risk, pol.Calibration.Fit.Coverage, pol.Calibration.Fit.Risk)
	}
}

// TestCalibrateNotes: calibrate says when the held-out part misses the target and when the fit
// part is too small for stable thresholds, and records the --limit of Fashion-MNIST data in the
// policy's data description (it said "fashion-mnist test set" for any --limit).
func TestCalibrateNotes(t *testing.T) {
	if _, err := data.FashionMNISTHead(data.DefaultFashionMNISTDir, "test", 1); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	m, m2 := convertDemoCLI(t, dir), filepath.Join(dir, "m2.ebnn")
	out := runOK(t, "calibrate", "--model", m, "--target-risk", "0.01", "--limit", "60", "--samples", "4", "--strategy", "weight", "--out", m2)
	for _, want := range []string{"note: the fit part has 30 inputs", "note: the held-out risk"} {
		if !strings.Contains(out, want) {
			t.Errorf("calibrate output lacks %q:\n%s", want, out)
		}
	}
	mod, err := runtime.Load(m2)
	if err != nil {
		t.Fatal(err)
	}
	defer mod.Close()
	if d := mod.Policy().Calibration.Data; d != "fashion-mnist test set, first 60" {
		t.Errorf("the policy's data: %q", d)
	}
	if p := mod.Policy(); p.Strategy != "weight" || p.Seed == nil || *p.Seed != 42 {
		t.Errorf("the policy records strategy %q seed %v, want weight and 42", p.Strategy, p.Seed)
	}
	if info := runOK(t, "inspect", m2); !strings.Contains(info, "(fitted with 4 samples, weight sampling, seed 42)") {
		t.Errorf("inspect does not show the policy's draws:\n%s", info)
	}
	// auto's samples depend on the batch: refused before any work.
	if code, _, stderr := runCLI("calibrate", "--model", m, "--target-risk", "0.01", "--strategy", "auto", "--out", m2); code != exitUsage || !strings.Contains(stderr, "--strategy") {
		t.Errorf("calibrate --strategy auto: exit %d, %s", code, stderr)
	}
}

// TestEvalOfCalibratedModel: eval of a calibrated model takes its policy's draws — the seed
// (unless --seed is given) and the strategy, as predict and serve do — so that its selective
// numbers are the device's: without --seed it equals --seed <the policy's>.
func TestEvalOfCalibratedModel(t *testing.T) {
	if _, err := data.FashionMNISTHead(data.DefaultFashionMNISTDir, "test", 1); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	m, m2 := convertDemoCLI(t, dir), filepath.Join(dir, "m2.ebnn")
	runOK(t, "calibrate", "--model", m, "--target-risk", "0.1", "--limit", "400", "--samples", "8", "--seed", "7", "--out", m2)
	def := runOK(t, "eval", m2, "--test-limit", "200", "--json")
	if policy := runOK(t, "eval", m2, "--test-limit", "200", "--json", "--seed", "7"); def != policy {
		t.Error("eval without --seed differs from eval --seed 7, the policy's")
	}
	if other := runOK(t, "eval", m2, "--test-limit", "200", "--json", "--seed", "8"); def == other {
		t.Error("eval --seed 8 equals the policy's draws: --seed is not taken")
	}
}
