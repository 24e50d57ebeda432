package train

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestConfigBounds sets every bounded key just past its limits, as a flag would (Set), and
// expects Validate to refuse it naming the key.
func TestConfigBounds(t *testing.T) {
	base := DefaultConfig()
	if err := base.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	cases := []struct{ key, value string }{
		{"train_samples", "1000000000000"},
		{"epochs", "1000000000000"},
		{"batch_size", "1000000000000"},
		{"test_samples", "1000000"},
		{"mc_samples", "99999999"},
		{"train_limit", "-1"},
		{"test_limit", "99999999999"},
		{"ensemble_size", "100000"},
		{"latent_dim", "1000000"},
		{"fa_every", "-3"},
		{"fa_warmup", "99999999999"},
		{"ml_epochs", "99999999999"},
		{"annealing_epochs", "-1"},
		{"finetune_epochs", "99999999999"},
		{"eval_every", "-1"},
		{"checkpoint_every", "99999999999"},
		{"fa_mean_only_epochs", "99999999999"},
		{"fa_start_epoch", "-2"},
		{"lr", "NaN"},
		{"lr", "+Inf"},
		{"lr", "1e300"},
		{"noise_precision", "NaN"},
		{"prior_precision", "Inf"},
		{"fa_init_log_var", "NaN"},
		{"fa_init_log_var", "1e9"},
		{"fa_lr", "-Inf"},
		{"lr_factors", "NaN"},
		{"momentum", "NaN"},
		{"momentum", "5"},
		{"weight_decay", "Inf"},
		{"gamma", "NaN"},
		{"clip", "Inf"},
		{"clip", "NaN"},
		{"test_fraction", "NaN"},
		{"finetune_lr", "NaN"},
		{"fa_weighting", "NaN"},
		{"milestones", "1,99999999999"},
		{"sd_lr", "-1"},
		{"sd_lr", "NaN"},
		{"sd_lr", "Inf"},
		{"sd_lr", "1e300"},
		{"adam_eps", "0"},
		{"adam_eps", "-1e-8"},
		{"adam_eps", "NaN"},
		{"adam_eps", "2"},
	}
	for _, tc := range cases {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			c := base
			err := c.Set(tc.key, tc.value)
			if err == nil {
				err = c.Validate()
			} else if strconv.IntSize != 32 {
				// Where int has 64 bits every value here parses and Validate must refuse it;
				// on 32-bit platforms the largest do not parse, which refuses them too.
				t.Fatalf("Set: %v", err)
			}
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q does not name %s", err, tc.key)
			}
		})
	}
}

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name, json, want string // want "": no error
	}{
		{"ok", `{"epochs": 3, "batch_size": 10}`, ""},
		{"unknown key", `{"epoch": 3}`, "unknown field"},
		{"trailing text", `{"epochs": 3} {"epochs": 4}`, "after"},
		{"not an object", `[1]`, "config x"},
		{"empty", ``, "EOF"},
		// A value out of its key's range names the file and the key; an int this large parses
		// where int has 64 bits (and is out of range), not where it has 32.
		{"huge int", `{"train_samples": 1000000000000}`, "train_samples"},
		{"out of range", `{"epochs": -1}`, "config x: epochs -1 outside"},
		{"NaN-like string", `{"lr": "NaN"}`, "config x"},
		{"milestone", `{"milestones": [2, 1000001]}`, "config x: milestones[1] 1000001 outside"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			err := c.ParseConfig([]byte(tc.json), "x")
			testutil.WantError(t, err, tc.want)
		})
	}
	c := DefaultConfig()
	err := c.ParseConfig([]byte(`{"epochs": -1}`), "x")
	var re *RangeError
	if !errors.As(err, &re) || re.Key != "epochs" {
		t.Fatalf("epochs -1: %v, want a *RangeError for epochs", err)
	}
}

// FuzzParseConfig: any bytes decode to an error or a config; Validate never panics and a valid
// config respects every bound.
func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(`{"epochs": 3, "batch_size": 10, "lr": 0.01}`))
	f.Add([]byte(`{"posterior": "vifa", "latent_dim": 2, "weight_decay": 0}`))
	f.Add([]byte(`{"milestones": [1, 2, 3], "gamma": 0.5}`))
	f.Add([]byte(`{"inference": {"inference": {"Linear": {"inference": "ffg"}}}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c := DefaultConfig()
		if err := c.ParseConfig(b, "fuzz"); err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			return
		}
		if c.Epochs > MaxEpochs || c.BatchSize > MaxBatchSize || c.TrainSamples > MaxSamples || c.TestSamples > MaxSamples {
			t.Fatalf("valid config out of bounds: %+v", c)
		}
	})
}

// TestInferenceConfigErrorNames: an inference config that bnnconfig refuses is named in the
// error — by its file, or as the inline one — never as "inference config : " with an empty name.
func TestInferenceConfigErrorNames(t *testing.T) {
	const bad = `{"inference": "ffg", "bogus": 1}`
	path := filepath.Join(t.TempDir(), "inf.json")
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ value, want string }{
		{bad, "the inline inference config: bnnconfig"},
		{path, "inference config " + path + ": bnnconfig"},
	} {
		c := toyConfig(t, "ffg_w", "")
		if err := c.Inference.Set(tc.value); err != nil {
			t.Fatal(err)
		}
		_, err := New(c)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "config : ") {
			t.Errorf("inference %.40s: New = %v, want an error saying %q", tc.value, err, tc.want)
		}
	}
}

// TestConfigStringLengths: every string key (arch: when it names a file) is at most
// MaxStringBytes long — a path can be no longer — and a longer one is refused by Validate naming
// the key, in an error of bounded size: a 900 KB data path in a config file made a 900 KB error
// message. An inference config value that is neither inline JSON nor a path is refused by Set
// without being opened.
func TestConfigStringLengths(t *testing.T) {
	for _, k := range Keys() {
		c := DefaultConfig()
		f, _ := c.field(k.Name)
		if f.Kind() != reflect.String || k.Name == "preset" {
			continue // preset: Set applies it
		}
		for _, n := range []int{MaxStringBytes, MaxStringBytes + 1, 900000} {
			f.SetString("csv:" + strings.Repeat("a", n-4))
			err := c.Validate()
			if n == MaxStringBytes {
				if err != nil && strings.Contains(err.Error(), "bytes, the most") {
					t.Errorf("%s of %d bytes: %v", k.Name, n, err)
				}
				continue
			}
			if err == nil || !strings.Contains(err.Error(), "config: "+k.Name+" ") || !strings.Contains(err.Error(), fmt.Sprintf("(%d bytes) is longer than %d bytes", n, MaxStringBytes)) {
				t.Errorf("%s of %d bytes: Validate = %v, want a refusal naming the key and the length", k.Name, n, err)
			}
			if err != nil && len(err.Error()) > 512 {
				t.Errorf("%s of %d bytes: an error of %d bytes", k.Name, n, len(err.Error()))
			}
			if err := c.ValidateData(); err == nil || !strings.Contains(err.Error(), "longer than") {
				t.Errorf("%s of %d bytes: ValidateData = %v", k.Name, n, err)
			}
		}
	}
	// Inline JSON architectures are bounded by the config file's size instead.
	c := DefaultConfig()
	c.Arch = `{"layers": [` + strings.Repeat(" ", 2*MaxStringBytes) + `]}`
	if err := c.Validate(); err != nil {
		t.Errorf("inline arch of %d bytes: %v", len(c.Arch), err)
	}

	var in Inference
	long := filepath.Join(t.TempDir(), strings.Repeat("b/", MaxStringBytes))
	if err := in.Set(long); err == nil || !strings.Contains(err.Error(), "neither inline JSON") || len(err.Error()) > 512 {
		t.Errorf("inference of %d bytes: Set = %v", len(long), err)
	}
}

// TestEveryFloatKeyBounded: every float key is in configBounds, so that Validate refuses NaN and
// ±Inf whatever the posterior: bernstein_prior_sd, checked only for posterior bernstein_last,
// took NaN with any other, and the run trained to its end and then failed to write every
// checkpoint ("state: json: unsupported value: NaN").
func TestEveryFloatKeyBounded(t *testing.T) {
	bounded := map[string]bool{}
	for _, b := range configBounds {
		bounded[b.key] = true
	}
	for _, k := range Keys() {
		c := DefaultConfig()
		f, _ := c.field(k.Name)
		if f.Kind() != reflect.Float64 {
			continue
		}
		if !bounded[k.Name] {
			t.Errorf("float key %s is not in configBounds", k.Name)
		}
		for _, v := range []string{"NaN", "Inf", "-Inf"} {
			c := DefaultConfig()
			if err := c.Set(k.Name, v); err != nil {
				t.Fatal(err)
			}
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), k.Name) {
				t.Errorf("%s %s: Validate = %v, want a refusal naming the key", k.Name, v, err)
			}
		}
	}
	c := toyConfig(t, "ffg_w", "")
	c.BernsteinPriorSD = math.NaN()
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "bernstein_prior_sd NaN is not a finite number") {
		t.Errorf("posterior ffg_w, bernstein_prior_sd NaN: New = %v", err)
	}
}
