package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// trainEnsembleCheckpoint trains a tiny Ensemble-W classifier (3 members, 2 → 6 → 3 with a
// BatchNorm) on a small CSV and returns the checkpoint and the CSV.
func trainEnsembleCheckpoint(t *testing.T) (ckpt, csv string) {
	t.Helper()
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := 0; i < 60; i++ {
		c := i % 3
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", float64(c)+0.4*math.Sin(float64(i)), float64(2-c)+0.4*math.Cos(float64(3*i)), c)
	}
	csv = filepath.Join(dir, "d.csv")
	mustWrite(t, csv, []byte(b.String()))
	c := train.DefaultConfig()
	c.Posterior, c.EnsembleSize = "ensemble_w", 3
	c.Data, c.Task = "csv:"+csv, "classification"
	c.Arch = `{"layers": [{"name": "fc1", "type": "Linear", "in_features": 2, "out_features": 6},
		{"name": "bn1", "type": "BatchNorm1d", "num_features": 6}, {"name": "relu", "type": "ReLU"},
		{"name": "fc2", "type": "Linear", "in_features": 6, "out_features": 3}]}`
	c.Epochs, c.BatchSize, c.EvalEvery = 1, 20, 0
	c.Out = filepath.Join(dir, "ens.ebnn")
	trainConfig(t, c)
	return c.Out, csv
}

// TestEnsembleCommands: an Ensemble-W checkpoint converts with its members (f16), inspect shows
// K and the per-member parameter count (fc1 12+6, bn1 6+6, fc2 18+3 = 51), eval predicts the
// checkpoint and the converted file with one sample per member, and plan --members counts them.
func TestEnsembleCommands(t *testing.T) {
	ckpt, csv := trainEnsembleCheckpoint(t)
	out := filepath.Join(t.TempDir(), "ens16.ebnn")
	runHostOK(t, "convert", "--checkpoint", ckpt, "--dtype", "f16", "--out", out)
	stdout := runOK(t, "inspect", out)
	checkContains(t, "inspect output", stdout, "ensemble of 3 networks (Ensemble-W): 51 parameters per member, 153 in all", "member2/fc2.weight", "member1/bn1.running_var")
	var in struct {
		Members          int   `json:"members"`
		MemberParameters int64 `json:"member_parameters"`
		Parameters       int64 `json:"parameters"`
	}
	runCLIJSON(t, &in, "inspect", "--json", out)
	if in.Members != 3 || in.MemberParameters != 51 || in.Parameters != 153 {
		t.Errorf("inspect --json: %+v", in)
	}
	runCases(t, []cliCase{
		{name: "eval checkpoint", args: []string{"eval", ckpt}, wantStdout: []string{"(3 samples)", "acc "}},
		{name: "eval converted", args: []string{"eval", "--data", "csv:" + csv, out}, wantStdout: []string{"(3 samples)"}},
		{name: "eval samples flag", args: []string{"eval", "--samples", "6", ckpt}, wantStdout: []string{"(6 samples)"}},
		// predict and bench default to one sample per member, like eval.
		{name: "bench default samples", args: []string{"bench", "--model", out, "--min-time", "1ms"}, wantStdout: []string{"samples           3 "}},
		{name: "bench samples flag", args: []string{"bench", "--model", out, "--min-time", "1ms", "--samples", "5"}, wantStdout: []string{"samples           5 "}},
	})
	// A policy fitted with K = 5 makes 5 the default K of eval, bench and predict.
	cal := filepath.Join(t.TempDir(), "ens16cal.ebnn")
	runHostOK(t, "calibrate", "--model", out, "--out", cal, "--data", "csv:"+csv, "--target-coverage", "0.5", "--samples", "5")
	calIn := filepath.Join(t.TempDir(), "one.csv")
	mustWrite(t, calIn, []byte("0.1,2.2\n"))
	runCases(t, []cliCase{
		{name: "eval policy K", args: []string{"eval", "--data", "csv:" + csv, cal}, wantStdout: []string{"(5 samples)"}},
		{name: "bench policy K", args: []string{"bench", "--model", cal, "--min-time", "1ms"}, wantStdout: []string{"samples           5 "}},
		{name: "predict policy K", args: []string{"predict", "--model", cal, "--input", calIn, "--json"}, wantStdout: []string{`"samples":5`}},
	})
	// --keep-f16: the fp16 members' weights kept as stored predict the same bits.
	inputs := filepath.Join(t.TempDir(), "x.csv")
	mustWrite(t, inputs, []byte("0.1,2.2\n1.3,-0.4\n2.5,0.6\n-3,7\n"))
	want := runOK(t, "predict", "--model", out, "--input", inputs, "--json")
	if got := runOK(t, "predict", "--model", out, "--input", inputs, "--json", "--keep-f16"); got != want {
		t.Errorf("predict --keep-f16 differs from predict:\n%s\n%s", got, want)
	}
	checkContains(t, "bench --keep-f16", runOK(t, "bench", "--model", out, "--min-time", "1ms", "--keep-f16"), "allocations       0.0 per prediction call")
	arch := filepath.Join(t.TempDir(), "model.txt")
	mustWrite(t, arch, []byte("Sequential(\n  (0): Linear(in_features=2, out_features=6, bias=True)\n  (1): ReLU()\n  (2): Linear(in_features=6, out_features=3, bias=True)\n)\n"))
	runCases(t, []cliCase{
		{name: "plan members", args: []string{"plan", "--arch", arch, "--classes", "3", "--members", "4"},
			wantStdout: []string{"156 (deterministic network: 39)", "4 networks (Ensemble-W), 39 parameters each", "for 4 samples"}},
	})
}
