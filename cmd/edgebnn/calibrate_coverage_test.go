//go:build !device

package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestCalibrateFullCoverage: `--target-coverage 1` writes a policy without thresholds, says so
// ("none"), and inspect shows that it always acts. It had kept the fit data's extreme scores as
// thresholds, so new inputs beyond them were refused.
func TestCalibrateFullCoverage(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	for _, c := range []struct {
		on, want string
	}{
		{"mutual_info", "max_mutual_info none"},
		{"both", "min_confidence none, max_mutual_info none"},
	} {
		out := filepath.Join(dir, c.on+".ebnn")
		log := runOK(t, "calibrate", "--model", model, "--data", "csv:"+csv, "--target-coverage", "1",
			"--on", c.on, "--samples", "4", "--out", out)
		if !strings.Contains(log, c.want) {
			t.Errorf("--on %s: output lacks %q:\n%s", c.on, c.want, log)
		}
		m, err := runtime.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		p := m.Policy()
		m.Close()
		if p.MaxMutualInfo != nil || p.MinConfidence != nil {
			t.Errorf("--on %s: policy %+v has a threshold", c.on, p)
		}
		if c.on == "mutual_info" {
			if info := runOK(t, "inspect", out); !strings.Contains(info, "policy: always act (no thresholds)") {
				t.Errorf("inspect:\n%s", info)
			}
		}
	}
}

// TestAdaptiveAfterFullCoverage: `calibrate --target-coverage 1` writes a policy without
// thresholds ("always act"); predict --adaptive on that model runs, every input acts and stops
// after the first round (the runtime had refused "adaptive sampling needs a policy with a
// threshold" for the model calibrate had just written).
func TestAdaptiveAfterFullCoverage(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	out := filepath.Join(dir, "mi.ebnn")
	runOK(t, "calibrate", "--model", model, "--data", "csv:"+csv, "--target-coverage", "1",
		"--on", "mutual_info", "--samples", "8", "--out", out)
	xs, _ := referenceImages(t)
	var b strings.Builder
	for j, v := range xs[:784] {
		if j > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%g", math.Round(float64(v)*255))
	}
	b.WriteString("\n")
	in := filepath.Join(dir, "in.csv")
	mustWrite(t, in, []byte(b.String()))
	code, stdout, stderr := runCLI("predict", "--model", out, "--input", in, "--adaptive", "--json")
	if code != 0 {
		t.Fatalf("predict --adaptive on a calibrated (coverage 1) model: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	if !strings.Contains(stdout, `"decision":"act"`) {
		t.Errorf("stdout: %s", stdout)
	}
}

// TestFullCoverageInspectConfidence: a coverage target of 1 on confidence (or both) gives a
// policy without thresholds too, shown as such — not "act when confidence ≥ 0".
func TestFullCoverageInspectConfidence(t *testing.T) {
	dir, csv, model := calibrateInputs(t)
	for _, on := range []string{"confidence", "both"} {
		out := filepath.Join(dir, on+".ebnn")
		runOK(t, "calibrate", "--model", model, "--data", "csv:"+csv, "--target-coverage", "1",
			"--on", on, "--samples", "4", "--out", out)
		if info := runOK(t, "inspect", out); !strings.Contains(info, "policy: always act (no thresholds)") {
			t.Errorf("--on %s: inspect does not say always act:\n%s", on, info)
		}
	}
}
