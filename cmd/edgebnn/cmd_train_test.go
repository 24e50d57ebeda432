//go:build !device

package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
)

// TestTrainMCDropout: train --posterior mc_dropout --dropout 0.2 writes a model whose dropout
// layers convert keeps and inspect reports (text and JSON); predict samples the masks (the
// epistemic variance is positive).
func TestTrainMCDropout(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "mcd.ebnn")
	runOK(t, "train", "--arch", "mlp:1-16-16-1:tanh", "--data", "toy1d", "--task", "regression",
		"--noise-precision", "100", "--posterior", "mc_dropout", "--dropout", "0.2", "--epochs", "3", "--batch-size", "25",
		"--out", out, "--quiet", "--no-plots")
	conv := filepath.Join(dir, "conv.ebnn")
	runOK(t, "convert", "--checkpoint", out, "--out", conv)
	code, stdout, stderr := runCLI("inspect", conv)
	if code != 0 || !strings.Contains(stdout, "MC dropout: 2 layer(s) sampled at prediction time") || !strings.Contains(stdout, "2.dropout p=0.2, 4.dropout p=0.2") {
		t.Fatalf("inspect: exit %d, want the MC dropout layers\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("inspect", "--json", conv)
	var in struct {
		Dropout []struct {
			Name string  `json:"name"`
			P    float64 `json:"p"`
			MC   bool    `json:"mc"`
		} `json:"dropout"`
	}
	if code != 0 {
		t.Fatalf("inspect --json: exit %d\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &in); err != nil {
		t.Fatal(err)
	}
	if len(in.Dropout) != 2 || in.Dropout[0].P != 0.2 || !in.Dropout[0].MC || !in.Dropout[1].MC {
		t.Fatalf("inspect --json: dropout %+v", in.Dropout)
	}
	inputs := filepath.Join(dir, "x.csv")
	mustWrite(t, inputs, []byte("x\n0.5\n-1\n"))
	stdout = runOK(t, "predict", "--model", conv, "--input", inputs, "--json")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("predict: %d lines\n%s", len(lines), stdout)
	}
	for _, line := range lines {
		var p struct {
			EpistemicVar []float64 `json:"epistemic_var"`
		}
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.EpistemicVar) != 1 || !(p.EpistemicVar[0] > 0) {
			t.Errorf("predict: epistemic variance %v, want > 0", p.EpistemicVar)
		}
	}
}

// TestTrainMixture: train --mixture 2 trains two posteriors with seeds 4 and 5 and writes their
// mixture, whose sample s is member s mod 2's (its own model file, the member's seed); it refuses
// --resume, a deterministic posterior and an out-of-range M.
func TestTrainMixture(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "toy.ebnn")
	stdout := runOK(t, "train", "--preset", "paper003-toy-ffgu", "--epochs", "3", "--seed", "4",
		"--mixture", "2", "--out", out, "--quiet", "--no-plots")
	mixPath := filepath.Join(dir, "toy.model.ebnn")
	if !strings.Contains(stdout, "a mixture of 2 posteriors") {
		t.Errorf("output does not report the mixture:\n%s", stdout)
	}
	mix, err := runtime.Load(mixPath)
	if err != nil {
		t.Fatal(err)
	}
	defer mix.Close()
	if !mix.Mixture() || mix.Members() != 2 {
		t.Fatalf("%s: Mixture %v, Members %d", mixPath, mix.Mixture(), mix.Members())
	}
	x := []float32{0.3}
	const K, seed = 4, 9
	got := predictKept(t, mix, runtime.Options{Samples: K, Seed: seed, KeepSamples: true}, x)
	for k := range 2 {
		member := filepath.Join(dir, "toy.member"+string(rune('0'+k))+".model.ebnn")
		if _, err := os.Stat(filepath.Join(dir, "toy.member"+string(rune('0'+k))+".ebnn")); err != nil {
			t.Fatalf("member %d checkpoint: %v", k, err)
		}
		m, err := runtime.Load(member)
		if err != nil {
			t.Fatal(err)
		}
		want := predictKept(t, m, runtime.Options{Samples: K / 2, Seed: seed + uint64(k)*0x9e3779b97f4a7c15, KeepSamples: true}, x)
		m.Close()
		for l := range K / 2 {
			if g, w := got[2*l+k], want[l]; math.Float32bits(g) != math.Float32bits(w) {
				t.Fatalf("sample %d: %v, member %d alone %v", 2*l+k, g, k, w)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", out, "--mixture", "2"}, "exclude each other"},
		{[]string{"--preset", "paper003-toy-ffgu", "--posterior", "deterministic", "--mixture", "2", "--out", filepath.Join(dir, "d.ebnn")}, "Bayesian --posterior"},
		{[]string{"--preset", "paper003-toy-ffgu", "--mixture", "1", "--out", filepath.Join(dir, "e.ebnn")}, "want 2 to"},
	} {
		code, stdout, stderr := runCLI(append([]string{"train"}, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("train %v: exit %d, want an error mentioning %q\n%s%s", c.args, code, c.want, stdout, stderr)
		}
	}
}

// TestTrainMixtureTooLarge: --mixture M of a network whose M members would not fit in one model
// file is refused before the first member trains, naming the members and the mixture model, and
// leaves no file behind; 1024 posteriors of a 40-layer network used to train all 1024 members
// and then fail combining them with the format writer's "section count exceeds limit 65536".
func TestTrainMixtureTooLarge(t *testing.T) {
	arch := "mlp:2" + strings.Repeat("-2", 40)
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"sections, ffg_w", []string{"--posterior", "ffg_w", "--mixture", "1024"},
			[]string{"--mixture 1024", "deep.member0.ebnn", "deep.member1023.ebnn", "deep.model.ebnn", "above the model format's limit of 65536", "1024 members of 320 tensors each", "at most 204 members"}},
		{"sections, fcg_w", []string{"--posterior", "fcg_w", "--mixture", "700"},
			[]string{"--mixture 700", "above the model format's limit of 65536"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"train", "--data", "moons", "--arch", arch, "--epochs", "1",
				"--out", filepath.Join(dir, "deep.ebnn"), "--quiet", "--no-plots"}, c.args...)
			code, stdout, stderr := runCLI(args...)
			if code == 0 {
				t.Fatalf("exit 0\n%s", stdout)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stdout, "mixture member 1 of") {
				t.Errorf("a member trained:\n%s", stdout)
			}
			if ents, _ := os.ReadDir(dir); len(ents) > 0 {
				t.Errorf("left %d file(s) in %s, the first %s", len(ents), dir, ents[0].Name())
			}
		})
	}
}

// TestTrainMixtureOutputs: the mixture model (<out stem>.model.ebnn) is checked as every other
// output of train: never written over an input — the training CSV included, which it once
// replaced — and created with the directory of --out when that is new.
func TestTrainMixtureOutputs(t *testing.T) {
	dir := t.TempDir()
	trainInputs(t, dir)
	data := filepath.Join(dir, "d.model.csv")
	if err := os.Rename(filepath.Join(dir, "data.csv"), data); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"train", "--data", "csv:" + data, "--task", "regression", "--arch", "mlp:1-4-1", "--posterior", "ffg_w",
		"--epochs", "1", "--mixture", "2", "--quiet", "--no-plots"}
	code, stdout, stderr := runCLI(append(args, "--out", filepath.Join(dir, "d.csv"))...)
	if after, _ := os.ReadFile(data); code == 0 || !strings.Contains(stderr, "refusing to write over an input") || !bytes.Equal(after, before) {
		t.Errorf("--mixture with the model path on the training data: exit %d, data kept %v\n%s%s", code, bytes.Equal(after, before), stdout, stderr)
	}
	runOK(t, append(args, "--out", filepath.Join(dir, "new", "m.ebnn"))...)
	if _, err := os.Stat(filepath.Join(dir, "new", "m.model.ebnn")); err != nil {
		t.Errorf("mixture into a new directory: %v", err)
	}
}

// predictKept returns the kept outputs of one prediction of x.
func predictKept(t *testing.T, m *runtime.Model, o runtime.Options, x []float32) []float32 {
	t.Helper()
	p, err := m.NewPredictor(o)
	if err != nil {
		t.Fatal(err)
	}
	var pr runtime.Prediction
	if err := p.Predict(x, &pr); err != nil {
		t.Fatal(err)
	}
	return pr.Outputs
}

// TestTrainNumericLimits: absurd numeric config values, from flags or a config file, are
// refused before any data is loaded, naming the key.
func TestTrainNumericLimits(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	mustWrite(t, cfg, []byte(`{"data": "toy1d", "task": "regression", "arch": "mlp:1-8-1", "batch_size": 1000000000000}`))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--train-samples", "1000000000000"}, "train_samples"},
		{[]string{"--epochs", "1000000000000"}, "epochs"},
		{[]string{"--batch-size", "1000000000000"}, "batch_size"},
		{[]string{"--lr", "NaN"}, "lr"},
		{[]string{"--test-samples", "99999999"}, "test_samples"},
		{[]string{"--config", cfg}, "batch_size"},
		{[]string{"--config", dir}, dir},
	} {
		t.Run(strings.Join(c.args, "="), func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"train", "--quiet", "--no-plots", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-8-1",
				"--out", filepath.Join(dir, "m.ebnn")}, c.args...)
			if code := run(args, &out, &errb); code == 0 {
				t.Fatalf("accepted: %s", out.String())
			}
			if !strings.Contains(errb.String(), c.want) {
				t.Errorf("error does not name %s: %s", c.want, errb.String())
			}
		})
	}
}

// TestTrainResumeArchGone: a checkpoint records an architecture read from a file inline, so it
// resumes after the file has gone and from another directory, though --arch was a relative path;
// an --arch given with --resume that cannot be read is refused with an error naming it, not an
// internal error (train.Resume's error once fell through to a nil trainer).
func TestTrainResumeArchGone(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const repr = "Sequential(\n  (0): Linear(in_features=1, out_features=8, bias=True)\n  (1): Tanh()\n  (2): Linear(in_features=8, out_features=1, bias=True)\n)\n"
	if err := os.WriteFile("toy_arch.txt", []byte(repr), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "toy.ebnn")
	runOK(t, "train", "--preset", "paper003-toy-ffgu", "--arch", "toy_arch.txt", "--epochs", "2", "--out", out, "--quiet", "--no-plots")
	if err := os.Remove("toy_arch.txt"); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	runOK(t, "train", "--resume", out, "--epochs", "3", "--out", filepath.Join(dir, "toy2.ebnn"), "--quiet", "--no-plots")
	st, err := train.ReadState(filepath.Join(dir, "toy2.ebnn"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Epoch != 3 || !strings.HasPrefix(st.Config.Arch, "{") {
		t.Errorf("resumed checkpoint: epoch %d, arch %.40q; want 3 and the architecture inline", st.Epoch, st.Config.Arch)
	}
	code, stdout, stderr := runCLI("train", "--resume", out, "--arch", "gone_arch.txt", "--epochs", "3", "--out", filepath.Join(dir, "toy3.ebnn"), "--quiet", "--no-plots")
	if code == 0 || !strings.Contains(stderr, "gone_arch.txt") || strings.Contains(stderr, "internal error") {
		t.Errorf("train --resume --arch with a missing file: exit %d, want an error naming it\n%s%s", code, stdout, stderr)
	}
	// The keys that define the model are the checkpoint's: a new prior, say, was ignored by
	// training (the tensors are the checkpoint's) but written into the saved model's spec.
	// So are the dropout rate, the Bernstein flow's settings and the optimizer (whose state the
	// checkpoint holds), which were taken and written into the model (session 35's review).
	for _, kv := range [][2]string{{"--inference", `{"inference": {"Linear": {"inference": "ffg", "prior_weight_sd": 0.01}}}`},
		{"--posterior", "ffg_w"}, {"--noise-precision", "3"}, {"--dropout", "0.6"}, {"--bernstein-prior-sd", "5"},
		{"--bernstein-degree", "12"}, {"--bernstein-table", "9"}, {"--optimizer", "sgd"}} {
		code, _, stderr := runCLI("train", "--resume", out, kv[0], kv[1], "--epochs", "3", "--out", filepath.Join(dir, "toy4.ebnn"), "--quiet", "--no-plots")
		if code != 2 || !strings.Contains(stderr, kv[0]) || !strings.Contains(stderr, "keeps the checkpoint's model") {
			t.Errorf("train --resume %s: exit %d, stderr %q; want a usage error naming it", kv[0], code, stderr)
		}
	}
	// The data, the test split and the minibatch order are the checkpoint's: a new seed re-split
	// CSV and toy data (test rows became training rows) and reshuffled the epochs.
	for _, kv := range [][2]string{{"--seed", "7"}, {"--data", "toy1d:50"}, {"--test-fraction", "0.5"}, {"--classes", "0-1"}} {
		code, _, stderr := runCLI("train", "--resume", out, kv[0], kv[1], "--epochs", "3", "--out", filepath.Join(dir, "toy4.ebnn"), "--quiet", "--no-plots")
		if code != 2 || !strings.Contains(stderr, kv[0]) || !strings.Contains(stderr, "keeps the checkpoint's training data") {
			t.Errorf("train --resume %s: exit %d, stderr %q; want a usage error naming it", kv[0], code, stderr)
		}
	}
}

// TestTrainHelpDefaults: train --help gives each config flag one default: the default config's
// value, or the one its help text states (finetune_lr's 0 stands for train.DefaultFinetuneLR).
func TestTrainHelpDefaults(t *testing.T) {
	stdout := runOK(t, "train", "--help")
	// The flags' help as flag.PrintDefaults prints it: "  --name value" ("  --name" for a
	// true/false key), then "    \thelp" lines.
	help := map[string]string{}
	var name string
	for line := range strings.Lines(stdout) {
		if f, ok := strings.CutPrefix(line, "  --"); ok {
			name = strings.TrimSuffix(strings.TrimSpace(f), " value")
			continue
		}
		if text, ok := strings.CutPrefix(line, "    \t"); ok && name != "" {
			help[name] += text
		}
	}
	for _, k := range train.Keys() {
		if n := strings.Count(help[k.Flag], "default"); n != 1 {
			t.Errorf("--%s: %d defaults in %q", k.Flag, n, help[k.Flag])
		}
	}
	if train.DefaultFinetuneLR != 1e-4 {
		t.Fatalf("train.DefaultFinetuneLR is %g; update the finetune_lr help and this test", train.DefaultFinetuneLR)
	}
	for _, tc := range []struct{ flag, want string }{
		{"finetune-lr", "(default 1e-4)"},
		{"adam-eps", "default 1e-8"},
		{"csv-target", "default last"},
		{"lr", "learning rate (default 0.001)"},
		{"optimizer", "(default adam)"},
		{"data-dir", `(default "")`},
	} {
		if !strings.Contains(help[tc.flag], tc.want) {
			t.Errorf("--%s: help %q lacks %q", tc.flag, help[tc.flag], tc.want)
		}
	}
}

// TestTrainDryRun: train --dry-run checks the settings a run would use — the preset, the
// --config file, the flags — and prints them as JSON, without training or writing anything; a
// config file that is empty, not JSON, not an object, names an unknown key or holds a value out
// of range is an error naming it (scripts such as bench/fsvi_preset.sh check a --config with it
// before their runs start). A file's value out of range is refused even where a flag replaces
// it: the file is wrong whatever this run's flags, and a script that checks it must hear so.
func TestTrainDryRun(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	out := filepath.Join(dir, "runs", "toy.ebnn")
	for _, c := range []struct {
		name   string
		config string // the --config file's text
		flags  []string
		code   int
		want   []string // in stderr, or with code 0 in stdout
	}{
		{"valid", `{"epochs": 7}`, nil, 0, []string{`"epochs": 7`, `"preset": "paper003-toy-ffgu"`}},
		{"flag over the file", `{"epochs": 7}`, []string{"--epochs", "9"}, 0, []string{`"epochs": 9`}},
		{"empty", ``, nil, 1, []string{"empty.json", "empty"}},
		{"not JSON", `{"epochs": 7,`, nil, 1, []string{"not-JSON.json", "unexpected EOF"}},
		{"not an object", `[7]`, nil, 1, []string{"not-an-object.json", "cannot unmarshal array"}},
		{"unknown key", `{"epoch": 7}`, nil, 1, []string{"unknown-key.json", `unknown field "epoch"`}},
		{"out of range", `{"epochs": -1}`, nil, 2, []string{"out-of-range.json: epochs -1 outside"}},
		{"out of range under a flag", `{"lr": -1}`, []string{"--lr", "0.1"}, 2, []string{"out-of-range-under-a-flag.json: lr -1 outside"}},
		{"milestone out of range", `{"milestones": [1, -3]}`, nil, 2, []string{"milestone-out-of-range.json: milestones[1] -3 outside"}},
		{"flag out of range", `{"epochs": 7}`, []string{"--epochs", "-3"}, 2, []string{"config: epochs -3 outside"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := write(strings.ReplaceAll(c.name, " ", "-")+".json", c.config)
			args := append([]string{"train", "--dry-run", "--preset", "paper003-toy-ffgu", "--config", cfg, "--out", out}, c.flags...)
			code, stdout, stderr := runCLI(args...)
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s%s", code, c.code, stdout, stderr)
			}
			text := stderr
			if code == 0 {
				text = stdout
				var v map[string]any
				if err := json.Unmarshal([]byte(stdout), &v); err != nil {
					t.Errorf("stdout is not JSON: %v\n%s", err, stdout)
				}
			}
			for _, w := range c.want {
				if !strings.Contains(text, w) {
					t.Errorf("output does not say %q:\nstdout: %s\nstderr: %s", w, stdout, stderr)
				}
			}
			if _, err := os.Stat(filepath.Dir(out)); err == nil {
				t.Errorf("--dry-run created %s", filepath.Dir(out))
			}
		})
	}
}
