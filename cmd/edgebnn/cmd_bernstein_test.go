package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/train"
)

// bernsteinArch is a 2 → 16 → 2 MLP in the JSON architecture format train and plan share.
const bernsteinArch = `{"layers": [{"name": "fc1", "type": "Linear", "in_features": 2, "out_features": 16},
	{"name": "relu", "type": "ReLU"}, {"name": "fc2", "type": "Linear", "in_features": 16, "out_features": 2}]}`

// TestBernsteinCommands: a bernstein_last checkpoint (Two Moons, degree M = 10) converts, f32
// and f16; inspect (text and JSON) shows the kinds and bayesianize-style counts — fc1 2·16 + 16
// = 48 plain parameters, fc2 (2·16 weights + 2 biases) × (M + 5) = 510 flow parameters against
// 34 plain ones; plan --bernstein-last M counts the same, and its loaded model holds the quantile
// tables (2 × 17 weights × 257 points × 4 bytes).
func TestBernsteinCommands(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "arch.json")
	mustWrite(t, arch, []byte(bernsteinArch))
	c := train.DefaultConfig()
	c.Arch, c.Data, c.Posterior = arch, "moons", "bernstein_last"
	c.BernsteinDegree, c.Epochs, c.BatchSize, c.EvalEvery = 10, 1, 50, 0
	c.Out = filepath.Join(dir, "bf.ebnn")
	trainConfig(t, c)
	const (
		fc1, fc2, fc2Det = 48, (2*16 + 2) * 15, 2*16 + 2
		tableBytes       = 2 * 17 * 257 * 4
	)
	for _, dtype := range []string{"f32", "f16"} {
		out := filepath.Join(dir, "bf_"+dtype+".ebnn")
		stdout := runHostOK(t, "convert", "--checkpoint", c.Out, "--dtype", dtype, "--out", out)
		if dtype == "f16" && !strings.Contains(stdout, "bernstein fc2.bf_weight: fp16") && !strings.Contains(stdout, "bernstein fc2.bf_weight: kept float32") {
			t.Errorf("convert f16 does not report the gate:\n%s", stdout)
		}
		stdout = runOK(t, "inspect", out)
		for _, want := range []string{"fc1  deterministic  48  48  48", "fc2      bernstein  510  510  34", "total                558  558  82"} {
			if !strings.Contains(strings.Join(strings.Fields(stdout), " "), strings.Join(strings.Fields(want), " ")) {
				t.Errorf("inspect %s: no %q in\n%s", dtype, want, stdout)
			}
		}
		if dtype == "f16" && !strings.Contains(stdout, "bernstein fc2.bf_weight") {
			t.Errorf("inspect f16 does not report the gate:\n%s", stdout)
		}
		var in convert.Inspection
		runCLIJSON(t, &in, "inspect", "--json", out)
		if len(in.Layers) != 2 || in.Layers[0].Kind != "deterministic" || in.Layers[0].Parameters != fc1 ||
			in.Layers[1].Kind != "bernstein" || in.Layers[1].Parameters != fc2 || in.Layers[1].Deterministic != fc2Det ||
			in.Parameters != fc1+fc2 {
			t.Errorf("inspect --json %s: %+v", dtype, in.Layers)
		}
	}
	t.Run("plan", func(t *testing.T) {
		skipAbsent(t, "plan")
		var pr convert.PlanReport
		runCLIJSON(t, &pr, "plan", "--arch", arch, "--classes", "2", "--bernstein-last", "10", "--json")
		if pr.Parameters != fc1+fc2 || pr.DeterministicParameters != fc1+fc2Det || len(pr.Layers) != 2 || pr.Layers[1].Kind != "bernstein" {
			t.Errorf("plan: %+v", pr)
		}
		// ModelBytes is a heap measurement in a process other tests share: allow 10 % of noise (a
		// plan that left the tables out would report a few KB).
		if pr.ModelBytes < tableBytes*9/10 {
			t.Errorf("plan: the loaded model holds %d bytes, less than its quantile tables (%d)", pr.ModelBytes, tableBytes)
		}
		code, _, stderr := runCLI("plan", "--arch", arch, "--classes", "2", "--bernstein-last", "10", "--bernstein-table", "1")
		if code == 0 || !strings.Contains(stderr, "table") {
			t.Errorf("plan with table size 1: exit %d, %s", code, stderr)
		}
	})
}
