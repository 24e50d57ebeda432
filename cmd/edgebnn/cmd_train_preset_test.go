//go:build !device

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// TestTrainPresetList: --preset list (and help) prints every preset with its summary and trains
// nothing.
func TestTrainPresetList(t *testing.T) {
	for _, arg := range []string{"list", "help"} {
		stdout := runOK(t, "train", "--preset", arg)
		for _, p := range train.Presets() {
			if !strings.Contains(stdout, p.Name+" ") || !strings.Contains(stdout, p.Summary) {
				t.Errorf("--preset %s: %s or its summary missing:\n%s", arg, p.Name, stdout)
			}
		}
	}
}

// TestTrainPresetOverride: flags override the preset wherever they stand on the command line, a
// --config file's keys override it too, and the checkpoint records the preset with the keys the
// run used.
func TestTrainPresetOverride(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "toy.ebnn")
	// --epochs before --preset still wins: the preset is applied first, whatever the order.
	stdout := runOK(t, "train", "--epochs", "3", "--preset", "paper003-toy-fcgu", "--train-samples", "2",
		"--out", out, "--quiet", "--no-plots")
	if !strings.Contains(stdout, "preset paper003-toy-fcgu") {
		t.Errorf("the run does not name its preset:\n%s", stdout)
	}
	st, err := train.ReadState(out)
	if err != nil {
		t.Fatal(err)
	}
	c := st.Config
	if c.Preset != "paper003-toy-fcgu" || c.Epochs != 3 || c.TrainSamples != 2 {
		t.Errorf("checkpoint: preset %q epochs %d train_samples %d; want the preset with the flags' epochs 3, train_samples 2",
			c.Preset, c.Epochs, c.TrainSamples)
	}
	if c.LR != 0.001 || c.Data != "toy1d" || c.Arch != "mlp:1-50-1:tanh" || !strings.Contains(c.Inference.JSON, `"full"`) {
		t.Errorf("checkpoint lost the preset's keys: lr %g data %s arch %s inference %s", c.LR, c.Data, c.Arch, c.Inference.JSON)
	}

	cfgPath := filepath.Join(dir, "c.json")
	mustWrite(t, cfgPath, []byte(`{"preset": "paper003-toy-ffgw", "epochs": 2, "lr": 0.01}`))
	out2 := filepath.Join(dir, "toy2.ebnn")
	runOK(t, "train", "--config", cfgPath, "--seed", "5", "--out", out2, "--quiet", "--no-plots")
	if st, err = train.ReadState(out2); err != nil {
		t.Fatal(err)
	}
	if c := st.Config; c.Preset != "paper003-toy-ffgw" || c.Epochs != 2 || c.LR != 0.01 || c.Seed != 5 || c.TrainSamples != 32 || c.Posterior != "ffg_w" {
		t.Errorf("--config over its preset: preset %q epochs %d lr %g seed %d train_samples %d posterior %s",
			c.Preset, c.Epochs, c.LR, c.Seed, c.TrainSamples, c.Posterior)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--preset", "paper003-toy-nope"}, "paper003-toy-nope"},
		{[]string{"--preset", "paper003-toy-ffgu", "--config", cfgPath}, "differ"},
		{[]string{"--preset", "paper003-toy-ffgu", "--resume", out}, "--resume"},
		{[]string{"--preset", "paper000-table4"}, "paper000-table4 does not choose the data set"},
		// A true/false key's flag stands alone (--fa-clip-per-parameter is =true) or takes =false.
		{[]string{"--preset", "paper000-table4", "--data", "csv:x.csv", "--clip", "0", "--fa-clip-per-parameter=false", "--fa-clip-per-parameter"}, "fa_clip_per_parameter clips each gradient to norm clip, which is 0"},
		{[]string{"--preset", "paper000-table4", "--data", "csv:x.csv", "--fa-init-mean", "ones"}, `fa_init_mean "ones" is not network or zeros`},
		{[]string{"--preset", "paper000-table4", "--data", "csv:x.csv", "--init-from", "d.ebnn"}, "fa_init_mean zeros would discard init_from d.ebnn"},
	} {
		code, _, stderr := runCLI(append(append([]string{"train"}, tc.args...), "--out", filepath.Join(dir, "x.ebnn"), "--quiet")...)
		if code == 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error containing %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestTrainPresetPaper000: `edgebnn train --preset paper000-table4 --data csv:…` on paper 000
// §4.1's data (Go-generated, seed 0) beats Table 4's three distances, as
// TestFALinearRegressionCLI does with the flags spelled out. The full 5000 epochs take about
// 2 s, so -short runs them too.
func TestTrainPresetPaper000(t *testing.T) {
	csv, x, y := linregCSV(t, 0, 1000)
	trainLinreg(t, x, y, filepath.Join(t.TempDir(), "linreg.ebnn"), "--preset", "paper000-table4", "--data", "csv:"+csv, "--seed", "0")
}
