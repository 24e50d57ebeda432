package train

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// TestPresetFiles: every listed preset has its file, every file is listed, names are unique,
// summaries are one line, and no preset file names another preset (presets do not nest).
func TestPresetFiles(t *testing.T) {
	files, err := fs.Glob(presetFS, "presets/*.json")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, p := range Presets() {
		if listed[p.Name] {
			t.Errorf("preset %s listed twice", p.Name)
		}
		listed[p.Name] = true
		if p.Summary == "" || strings.Contains(p.Summary, "\n") {
			t.Errorf("preset %s: summary %q is not one line", p.Name, p.Summary)
		}
	}
	for _, f := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(f, "presets/"), ".json")
		if !listed[name] {
			t.Errorf("preset file %s is not in the list", f)
		}
		delete(listed, name)
		b, _ := presetFS.ReadFile(f)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		if _, ok := m["preset"]; ok {
			t.Errorf("%s names a preset itself", f)
		}
		if _, ok := m["out"]; ok {
			t.Errorf("%s sets out (a preset should not choose the output path)", f)
		}
	}
	for name := range listed {
		t.Errorf("preset %s has no file presets/%s.json", name, name)
	}
}

// fmnistLikeCSV writes a small classification CSV with 784 features and labels 0–9, a stand-in
// for Fashion-MNIST with which the fmnist presets' networks are built.
func fmnistLikeCSV(t *testing.T) string {
	var b strings.Builder
	for i := 0; i < 784; i++ {
		fmt.Fprintf(&b, "p%d,", i)
	}
	b.WriteString("label\n")
	for r := 0; r < 20; r++ {
		for i := 0; i < 784; i++ {
			fmt.Fprintf(&b, "%g,", float64((r*31+i*7)%256)/255)
		}
		fmt.Fprintf(&b, "%d\n", r%10)
	}
	p := filepath.Join(t.TempDir(), "fm.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPresetValidates: every preset parses and validates, and its network builds (New) — the
// fmnist ones on a 784-feature stand-in CSV, paper000-table4 on linear-regression data, which it
// refuses to guess: without --data it names the preset.
func TestPresetValidates(t *testing.T) {
	dir := t.TempDir()
	lin := filepath.Join(dir, "lin.csv")
	var b strings.Builder
	b.WriteString("x1,x2,y\n")
	for i := 0; i < 50; i++ {
		x1, x2 := math.Sin(float64(i)), math.Cos(float64(3*i))
		fmt.Fprintf(&b, "%g,%g,%g\n", x1, x2, 2*x1-x2)
	}
	if err := os.WriteFile(lin, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	fm := fmnistLikeCSV(t)
	for _, p := range Presets() {
		t.Run(p.Name, func(t *testing.T) {
			c := DefaultConfig()
			if err := c.ApplyPreset(p.Name); err != nil {
				t.Fatal(err)
			}
			if c.Preset != p.Name {
				t.Fatalf("Preset %q after ApplyPreset(%q)", c.Preset, p.Name)
			}
			switch {
			case p.Name == "paper000-table4":
				if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "data is empty") || !strings.Contains(err.Error(), p.Name) {
					t.Fatalf("no --data: %v, want an error naming the preset", err)
				}
				c.Data = "csv:" + lin
			case c.Data == "fmnist" && strings.HasPrefix(c.Arch, "{"):
				// A convolutional network needs images: the real data set, cut short.
				if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")); err != nil {
					t.Skipf("Fashion-MNIST not installed: %v", err)
				}
				c.TrainLimit, c.TestLimit = 256, 64
			case c.Data == "fmnist":
				c.Data = "csv:" + fm
			}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			c.Out = filepath.Join(t.TempDir(), "m.ebnn")
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			if tr.Config.Preset != p.Name {
				t.Errorf("trainer config preset %q", tr.Config.Preset)
			}
		})
	}
	c := DefaultConfig()
	if err := c.ApplyPreset("paper003-toy-fcgx"); err == nil || !strings.Contains(err.Error(), "paper003-toy-fcgx") || !strings.Contains(err.Error(), "paper003-toy-ffgw") {
		t.Fatalf("unknown preset: %v, want an error naming it and the known ones", err)
	}
}

// inferenceValue returns the value at a dotted path ("inference.1.inducing_rows") of the
// config's inference JSON, formatted with %v.
func inferenceValue(t *testing.T, c *Config, path string) string {
	var v any
	if err := json.Unmarshal([]byte(c.Inference.JSON), &v); err != nil {
		t.Fatalf("inference config: %v", err)
	}
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "<missing>"
		}
		if v, ok = m[k]; !ok {
			return "<missing>"
		}
	}
	return fmt.Sprint(v)
}

// TestPresetValues checks the settings docs/PRESETS.md quotes, typed here from the papers' text
// (paper 000 §4.1 / bench/fa_linreg_cli.sh; paper 003 App. J.1 and J.2) and from
// docs/RESULTS.md for ours, not read from the preset files. Keys are config keys (Get) or
// "inference:" paths into the inference config.
func TestPresetValues(t *testing.T) {
	toy := map[string]string{
		"arch": "mlp:1-50-1:tanh", "data": "toy1d", "task": "regression",
		"noise_precision": "100",                        // y ~ N(cos(4x+0.8), 0.01): variance 0.01
		"epochs":          "20000", "batch_size": "100", // 20,000 updates, full batch (100 points)
		"optimizer": "adam", "lr": "0.001", "train_samples": "32",
		"inference:prior_sd": "4", "inference:sqrt_width_scaling": "true", // sd 4/√d_in
		"inference:inference.1.inducing_rows": "25", "inference:inference.1.inducing_cols": "2",
		"inference:inference.3.inducing_rows": "1", "inference:inference.3.inducing_cols": "25",
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			if kv[i+1] == "" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	fm := map[string]string{
		"arch": "mlp:784-256-256-10", "data": "fmnist", "posterior": "inducing",
		"optimizer": "adam", "lr": "0.001", "epochs": "300", "milestones": "200", "gamma": "0.1",
		"ml_epochs": "100", "annealing_epochs": "50", "train_samples": "1", "test_samples": "20",
		"batch_size":         "100",
		"inference:prior_sd": "1", "inference:sqrt_width_scaling": "true", // N(0, 1/d_in)
		"inference:inference.5.inducing_rows": "10", // M_out = 10 in the last layer
	}
	ours := map[string]string{
		"arch": "mlp:784-256-256-10", "data": "fmnist", "posterior": "inducing", "optimizer": "adam",
		"lr": "0.003", "ml_epochs": "1", "annealing_epochs": "2", "batch_size": "100", "seed": "1",
		"inference:prior_sd": "8", "inference:sqrt_width_scaling": "true",
		"inference:inference.Linear.inducing_rows": "32", "inference:inference.Linear.inducing_cols": "32",
	}
	want := map[string]map[string]string{
		"paper000-table4": {
			"data": "", "task": "regression", "posterior": "vifa", "latent_dim": "1",
			"prior_precision": "0.01", "noise_precision": "0.1", "mc_samples": "10", "batch_size": "100",
			"epochs": "5000", "optimizer": "sgd", "lr": "0.01", "lr_factors": "0.0001", "lr_log_var": "0.01",
			"clip": "10", "fa_clip_per_parameter": "true", "fa_init_mean": "zeros",
			"fa_average_epochs": "2500", "fa_decay_epochs": "0", "test_fraction": "0",
		},
		"paper003-toy-ffgw": with(toy, "posterior", "ffg_w", "milestones", "",
			"inference:prior_sd", "", "inference:inference.1.inducing_rows", "", "inference:inference.1.inducing_cols", "",
			"inference:inference.3.inducing_rows", "", "inference:inference.3.inducing_cols", "",
			"inference:inference", "ffg", "inference:prior_weight_sd", "4", "inference:prior_bias_sd", "4"),
		// FCG-W: bayesianize's FCGMixin has no width scaling; the per-layer sds are 4/√d_in with
		// d_in = 1 + 1 (bias) and 50 + 1.
		"paper003-toy-fcgw": with(toy, "posterior", "fcg_w", "milestones", "",
			"inference:prior_sd", "", "inference:sqrt_width_scaling", "",
			"inference:inference.1.inducing_rows", "", "inference:inference.1.inducing_cols", "",
			"inference:inference.3.inducing_rows", "", "inference:inference.3.inducing_cols", "",
			"inference:inference.1.inference", "fcg", "inference:inference.3.inference", "fcg",
			"inference:inference.1.prior_weight_sd", fmt.Sprint(4/math.Sqrt(2)), "inference:inference.1.prior_bias_sd", fmt.Sprint(4/math.Sqrt(2)),
			"inference:inference.3.prior_weight_sd", fmt.Sprint(4/math.Sqrt(51)), "inference:inference.3.prior_bias_sd", fmt.Sprint(4/math.Sqrt(51))),
		// J.1's NUTS: 25,000 samples, the first 5,000 discarded, 1,000 kept for prediction (here
		// over 4 chains); the likelihood's noise is fixed at the data's variance 0.01.
		"paper003-toy-hmc": with(toy, "posterior", "hmc", "epochs", "", "batch_size", "", "optimizer", "", "lr", "", "train_samples", "",
			"inference:prior_sd", "", "inference:inference.1.inducing_rows", "", "inference:inference.1.inducing_cols", "",
			"inference:inference.3.inducing_rows", "", "inference:inference.3.inducing_cols", "",
			"inference:inference", "ffg", "inference:prior_weight_sd", "4", "inference:prior_bias_sd", "4",
			"hmc_chains", "4", "hmc_warmup", "1250", "hmc_draws", "5000", "hmc_samples", "1000"),
		"paper003-toy-ffgu":      with(toy, "posterior", "inducing", "milestones", "", "inference:q_inducing", "diagonal"),
		"paper003-toy-fcgu":      with(toy, "posterior", "inducing", "milestones", "10000", "gamma", "0.1", "inference:q_inducing", "full"),
		"paper003-toy-ensembleu": with(toy, "posterior", "inducing", "milestones", "10000", "gamma", "0.1", "inference:q_inducing", "ensemble", "inference:ensemble_size", "8"),
		"paper003-fmnist-ffgu": with(fm, "init_sd_u", fmt.Sprint(math.Sqrt(1e-3)), "inference:q_inducing", "diagonal",
			"inference:max_sd_u", "0.1", "inference:max_lamda", "0.03"),
		"paper003-fmnist-ensembleu": with(fm, "init_sd_u", "0", "inference:q_inducing", "ensemble",
			"inference:ensemble_size", "5", "inference:max_lamda", "0.1"),
		// timrudner/FSVI configs/fsvi-cnn-fmnist.json: --prior_var 1 --num_epochs 200
		// --optimizer_name sgd --learning_rate 0.005 --alpha 0.005 --batch_size 128
		// --context_batch_size 32 --momentum 0.9 --context_points train --context_transform True
		// --mc_samples_llk 1 --mc_samples_eval 10 --weight_decay 0 --init_logvar -20
		// --init_final_layer_bias_logvar -8 --prior_feature_logvar -20; optax.clip(1.0).
		// Standard deviations e^(logvar/2), correctly rounded: e⁻¹⁰ and e⁻⁴ (math.Exp on arm64 is
		// one ulp off e⁻¹⁰).
		"paper004-fmnist-fsvi": {
			"data": "fmnist", "posterior": "ffg_w", "objective": "fsvi", "fsvi_kl": "last_layer",
			"context": "corrupted", "context_size": "32", "fsvi_jitter": "1e-06", "temperature": "1",
			"epochs": "200", "batch_size": "128", "optimizer": "sgd", "lr": "0.005", "momentum": "0.9",
			"lr_schedule": "cosine", "lr_min_factor": "0.005", "milestones": "", "clip_value": "1",
			"weight_decay": "0", "train_samples": "1", "test_samples": "10",
			"inference:inference.Conv2d.init_sd":         "4.5399929762484854e-05",
			"inference:inference.Conv2d.prior_weight_sd": "4.5399929762484854e-05",
			"inference:inference.7.init_sd":              "4.5399929762484854e-05",
			"inference:inference.7.prior_weight_sd":      "4.5399929762484854e-05",
			"inference:inference.9.init_sd":              "0.01831563888873418",
			"inference:inference.9.prior_weight_sd":      "1", "inference:inference.9.prior_bias_sd": "1",
			"inference:inference.Conv2d.local_reparameterization": "false",
			"inference:inference.7.local_reparameterization":      "false",
			"inference:inference.9.local_reparameterization":      "false",
		},
		"edgebnn-fmnist-ffgu": with(ours, "epochs", "12", "milestones", "8", "inference:q_inducing", "diagonal",
			"inference:max_lamda", "0.03", "inference:max_sd_u", "0.1", "test_samples", "8"),
		// bench/fsvi_table1.sh's FSVI row: its common recipe (Adam 3e-3 ×0.1 after ⌊2E/3⌋, batch
		// 100, 8 test samples) at E = 10 with the reference code's KL and the paper's context.
		"edgebnn-fmnist-fsvi": {
			"arch": "mlp:784-256-256-10", "data": "fmnist", "posterior": "ffg_w", "objective": "fsvi",
			"fsvi_kl": "last_layer", "context": "random-monochrome", "context_size": "32",
			"epochs": "10", "milestones": "6", "gamma": "0.1", "batch_size": "100", "optimizer": "adam",
			"lr": "0.003", "train_samples": "1", "test_samples": "8",
			"inference:inference": "ffg", "inference:init_sd": "0.0001",
			"inference:prior_weight_sd": "1", "inference:prior_bias_sd": "1",
		},
		"edgebnn-fmnist-ensembleu": with(ours, "epochs", "24", "milestones", "16", "inference:q_inducing", "ensemble",
			"inference:ensemble_size", "8", "inference:max_lamda", "0.03", "test_samples", "8"),
	}
	if len(want) != len(Presets()) {
		t.Errorf("%d presets, %d with expected values", len(Presets()), len(want))
	}
	for name, kv := range want {
		c := DefaultConfig()
		if err := c.ApplyPreset(name); err != nil {
			t.Fatal(err)
		}
		for k, v := range kv {
			got := ""
			if p, ok := strings.CutPrefix(k, "inference:"); ok {
				got = inferenceValue(t, &c, p)
			} else {
				got = c.Get(k)
			}
			if got != v {
				t.Errorf("preset %s: %s = %q, want %q", name, k, got, v)
			}
		}
	}
}

// TestPresetOverride: keys given with a preset (a config file's, Set after it) override it, the
// others keep the preset's values, and unknown names are errors naming the preset.
func TestPresetOverride(t *testing.T) {
	c := DefaultConfig()
	if err := c.ParseConfig([]byte(`{"seed": 7, "preset": "paper003-toy-ffgu", "epochs": 10}`), "x.json"); err != nil {
		t.Fatal(err)
	}
	if c.Preset != "paper003-toy-ffgu" || c.Seed != 7 || c.Epochs != 10 || c.TrainSamples != 32 || c.Data != "toy1d" {
		t.Fatalf("preset %q seed %d epochs %d train_samples %d data %q; want the file's seed and epochs over the preset",
			c.Preset, c.Seed, c.Epochs, c.TrainSamples, c.Data)
	}
	c = DefaultConfig()
	for _, kv := range [][2]string{{"preset", "paper000-table4"}, {"lr", "0.5"}, {"optimizer", "adam"}} {
		if err := c.Set(kv[0], kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if c.LR != 0.5 || c.Optimizer != "adam" || c.LRFactors != 1e-4 || c.Posterior != "vifa" {
		t.Fatalf("lr %g optimizer %s lr_factors %g posterior %s", c.LR, c.Optimizer, c.LRFactors, c.Posterior)
	}
	if err := c.Set("preset", "nope"); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("Set preset nope: %v", err)
	}
	c = DefaultConfig()
	if err := c.ParseConfig([]byte(`{"preset": "nope"}`), "x.json"); err == nil || !strings.Contains(err.Error(), "x.json") || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("config file with preset nope: %v, want an error naming the file and the preset", err)
	}
}

// TestInitSDU: init_sd_u sets the initial q(U) scale of diagonal and full q(U) (softplus of the
// stored parameter), is refused for an ensemble q(U) and for non-inducing posteriors.
func TestInitSDU(t *testing.T) {
	for _, tc := range []struct {
		preset, tensor string
		diag           func(i, n int) bool // which entries of the tensor are the sd
	}{
		{"paper003-toy-ffgu", "_inducing_sd", func(int, int) bool { return true }},
		{"paper003-toy-fcgu", "_inducing_scale_tril", func(i, n int) bool { return i < n }},
	} {
		for _, sd := range []float64{0, math.Sqrt(1e-3)} {
			c := DefaultConfig()
			if err := c.ApplyPreset(tc.preset); err != nil {
				t.Fatal(err)
			}
			c.InitSDU, c.Out = sd, filepath.Join(t.TempDir(), "m.ebnn")
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			want := sd
			if sd == 0 {
				want = 1e-3 // bayesianize's
			}
			found := 0
			for _, p := range tr.Nets[0].Params() {
				if !strings.HasSuffix(p.Name, tc.tensor) {
					continue
				}
				found++
				n := len(p.Value) // full: the d diagonal entries come first, d(d+1)/2 in all
				if tc.tensor == "_inducing_scale_tril" {
					n = int((math.Sqrt(float64(8*len(p.Value)+1)) - 1) / 2)
				}
				for i, v := range p.Value {
					if !tc.diag(i, n) {
						continue
					}
					if got := math.Log1p(math.Exp(float64(v))); !(math.Abs(got-want) <= 1e-6*want+1e-9) {
						t.Fatalf("%s init_sd_u %g: %s[%d] softplus %g, want %g", tc.preset, sd, p.Name, i, got, want)
					}
				}
			}
			if found != 2 {
				t.Fatalf("%s: %d %s tensors, want 2", tc.preset, found, tc.tensor)
			}
		}
	}
	c := DefaultConfig()
	if err := c.ApplyPreset("paper003-toy-ensembleu"); err != nil {
		t.Fatal(err)
	}
	c.InitSDU, c.Out = 0.03, filepath.Join(t.TempDir(), "m.ebnn")
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "init_sd_u") {
		t.Fatalf("ensemble q(U) with init_sd_u: %v", err)
	}
	c = DefaultConfig()
	c.Posterior, c.InitSDU = "ffg_w", 0.03
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "init_sd_u") {
		t.Fatalf("ffg_w with init_sd_u: %v", err)
	}
}
