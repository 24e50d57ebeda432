package convert

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/convert/torchpt"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestPosteriorValues: a checkpoint whose posterior statistics are NaN,
// infinite or absurdly large is refused with an error naming the tensor
// and the first bad element, in f32 and in f16; a value beyond the fp16
// range is refused for f16 unless AllowClamp is set.
func TestPosteriorValues(t *testing.T) {
	f := fixtureFile(t, "mlp_ffgu", "state_dict")
	dir := t.TempDir()
	// edit returns the fixture with element i of tensor name set to v.
	edit := func(name string, i int, v float32) string {
		var ts []safetensors.Tensor
		for _, tn := range f.Tensors {
			if tn.Name == name {
				vals, err := tn.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				f32 := make([]float32, len(vals))
				for k, x := range vals {
					f32[k] = float32(x)
				}
				f32[i] = v
				if tn, err = safetensors.NewF32(name, tn.Shape, f32); err != nil {
					t.Fatal(err)
				}
			}
			ts = append(ts, tn)
		}
		p := filepath.Join(dir, "sd.safetensors")
		writeSafetensors(t, p, ts)
		return p
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name       string
		tensor     string
		index      int
		value      float32
		dtype      string
		allowClamp bool
		want       []string // empty: must convert
	}{
		{"lamda NaN", "1._lamda", 0, nan, "f32", false, []string{`"1._lamda"`, "element 0", "NaN"}},
		{"lamda NaN f16", "3._lamda", 0, nan, "f16", false, []string{`"3._lamda"`, "element 0", "NaN"}},
		{"inducing sd NaN", "3._inducing_sd", 17, nan, "f32", false, []string{`"3._inducing_sd"`, "element 17", "NaN"}},
		{"inducing sd -Inf", "1._inducing_sd", 5, -inf, "f32", false, []string{`"1._inducing_sd"`, "element 5", "-Inf"}},
		{"mean 3e38", "1.inducing_mean", 7, 3e38, "f32", false, []string{`"1.inducing_mean"`, "element 7", "3e+38"}},
		{"mean 3e38 f16", "1.inducing_mean", 7, 3e38, "f16", true, []string{`"1.inducing_mean"`, "element 7"}},
		{"z_row Inf", "1.z_row", 100, inf, "f32", false, []string{`"1.z_row"`, "element 100", "+Inf"}},
		{"d_col huge", "3._d_col", 3, -1e20, "f32", false, []string{`"3._d_col"`, "element 3"}},
		{"z_col beyond fp16", "3.z_col", 9, 7e4, "f16", false, []string{`"3.z_col"`, "element 9", "fp16"}},
		{"z_col beyond fp16 clamped", "3.z_col", 9, 7e4, "f16", true, nil},
		{"z_col beyond fp16 in f32", "3.z_col", 9, 7e4, "f32", false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, "out.ebnn"))
			o.Checkpoint = edit(tc.tensor, tc.index, tc.value)
			o.DType, o.AllowClamp = tc.dtype, tc.allowClamp
			_, err := Convert(o)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			testutil.ErrorContains(t, err, tc.want...)
		})
	}
}

// TestCheckValues covers the scale rules for tensors no fixture has.
func TestCheckValues(t *testing.T) {
	tests := []struct {
		name string
		v    []float32
		want string // "" for valid
	}{
		{"0.prior_weight_sd", []float32{1, 0.5}, ""},
		{"0.prior_weight_sd", []float32{1, 0}, "element 1 is 0, but a standard deviation must be positive"},
		{"0.prior_bias_sd", []float32{-1}, "element 0 is -1"},
		{"bn.running_var", []float32{0, 2}, ""},
		{"bn.running_var", []float32{0, -2}, "element 1 is -2, but a variance"},
		{"fa.psi", []float32{-1e-3}, "variance"},
		{"0._weight_sd", []float32{-7}, ""},
		{"0.weight_mean", []float32{1, float32(math.NaN())}, "element 1 is NaN"},
		{strings.Repeat("k", 1<<20), []float32{float32(math.NaN())}, "… (1048576 bytes)"},
	}
	for _, tc := range tests {
		err := checkValues(tc.name, tc.v)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%.20s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%.20s: err = %v, want %q", tc.name, err, tc.want)
		case err != nil && len(err.Error()) > 512:
			t.Errorf("%.20s: error of %d bytes", tc.name, len(err.Error()))
		}
	}
}

// TestConfigValues: a config with a non-finite, huge or negative scale
// or clamp is refused before anything is converted.
func TestConfigValues(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ key, old, new string }{
		{"prior_sd", `"prior_sd": 1.0`, `"prior_sd": 1e308`},
		{"max_sd_u", `"max_sd_u": 0.1`, `"max_sd_u": -0.1`},
		{"max_lamda", `"max_lamda": 0.03`, `"max_lamda": -0.03`},
		{"init_lamda", `"init_lamda": 0.001`, `"init_lamda": 0`},
	}
	for _, tc := range tests {
		t.Run(tc.key, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(fixtureDir, "mlp_ffgu", "inference_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			s := strings.Replace(string(b), tc.old, tc.new, 1)
			if s == string(b) {
				t.Fatalf("fixture lacks %s", tc.old)
			}
			p := filepath.Join(dir, tc.key+".json")
			if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
				t.Fatal(err)
			}
			o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, "out.ebnn"))
			o.Config = p
			_, err = Convert(o)
			if err == nil || !strings.Contains(err.Error(), `"`+tc.key+`"`) {
				t.Fatalf("err = %v, want mention of %q", err, tc.key)
			}
		})
	}
}

// TestLongNamesClipped: tensors with megabyte names in a checkpoint give
// an error quoting only short prefixes of them.
func TestLongNamesClipped(t *testing.T) {
	f := fixtureFile(t, "mlp_ffgu", "state_dict")
	ts := append([]safetensors.Tensor(nil), f.Tensors...)
	for _, c := range "abc" {
		x, _ := safetensors.NewF32(strings.Repeat(string(c), 1<<20), []int{1}, []float32{1})
		ts = append(ts, x)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "sd.safetensors")
	writeSafetensors(t, p, ts)
	o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, "out.ebnn"))
	o.Checkpoint = p
	_, err := Convert(o)
	if err == nil {
		t.Fatal("converted")
	}
	if len(err.Error()) > 1024 || !strings.Contains(err.Error(), "… (1048576 bytes)") || !strings.Contains(err.Error(), "2 more") {
		t.Fatalf("error of %d bytes: %.300s", len(err.Error()), err)
	}
}

// TestOptionsLimits: Options.Limits reaches the state_dict readers.
func TestOptionsLimits(t *testing.T) {
	for _, ext := range []string{".pt", ".safetensors"} {
		o := fixtureOpts("mlp_ffgu", ext, filepath.Join(t.TempDir(), "out.ebnn"))
		o.Limits.Torch.MaxRank = 1
		o.Limits.Safetensors.MaxRank = 1
		_, err := Convert(o)
		if err == nil || !strings.Contains(err.Error(), "1") {
			t.Fatalf("%s: err = %v", ext, err)
		}
		if ext == ".pt" && !errors.Is(err, torchpt.ErrLimit) {
			t.Fatalf("%s: err = %v, want torchpt.ErrLimit", ext, err)
		}
	}
}
