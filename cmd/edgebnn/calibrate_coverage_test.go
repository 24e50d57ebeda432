//go:build !device

package main

import (
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
