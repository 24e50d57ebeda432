package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/safetensors"
)

const demoFixture = "../../testdata/bayesianize/mlp_ffgu"

// TestDemoModelIsFresh: the built-in model is exactly what the converter makes of the fixture
// (set EDGEBNN_REGEN_DEMO=1 to rewrite demo/model.ebnn and demo/images.bin).
func TestDemoModelIsFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "model.ebnn")
	if _, err := convert.Convert(convert.Options{
		Checkpoint: filepath.Join(demoFixture, "state_dict.safetensors"),
		Config:     filepath.Join(demoFixture, "inference_config.json"),
		Arch:       filepath.Join(demoFixture, "model.txt"),
		DType:      "f16",
		Out:        out,
	}); err != nil {
		t.Fatal(err)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := safetensors.ReadFile(filepath.Join(demoFixture, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	inputs, _ := ref.Tensor("inputs")
	xs, err := inputs.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	labelT, _ := ref.Tensor("labels")
	labels, err := labelT.Int64s()
	if err != nil {
		t.Fatal(err)
	}
	var images []byte
	for i, idx := range demoImageIndex {
		if int(labels[idx]) != demoImageLabel[i] {
			t.Errorf("test image %d has label %d, the demo says %d", idx, labels[idx], demoImageLabel[i])
		}
		for _, v := range xs[idx*784 : (idx+1)*784] {
			images = append(images, byte(v*255+0.5))
		}
	}
	if os.Getenv("EDGEBNN_REGEN_DEMO") != "" {
		if err := os.WriteFile("demo/model.ebnn", fresh, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("demo/images.bin", images, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(fresh, demoModel) {
		t.Errorf("demo/model.ebnn (%d bytes) differs from a fresh conversion (%d bytes); rerun with EDGEBNN_REGEN_DEMO=1", len(demoModel), len(fresh))
	}
	if !bytes.Equal(images, demoImages) {
		t.Errorf("demo/images.bin differs from the fixture's test images; rerun with EDGEBNN_REGEN_DEMO=1")
	}
}

// TestDemo: the demo runs and abstains on the plainly out-of-distribution inputs.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"uniform noise", "test image 0, inverted", "blank (all black)", "Trouser", "mutual information"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "uniform noise") || strings.HasPrefix(line, "blank") {
			if !strings.Contains(line, "abstain") {
				t.Errorf("the demo acts on an out-of-distribution input: %s", line)
			}
		}
	}
	t.Log("\n" + s)
}

// TestDemoFlagValidation: non-finite or out-of-range thresholds and sample counts are usage
// errors naming the flag (a NaN threshold used to disable abstaining).
func TestDemoFlagValidation(t *testing.T) {
	for _, c := range []struct{ flag, value string }{
		{"--min-confidence", "NaN"},
		{"--min-confidence", "nan"},
		{"--min-confidence", "-0.1"},
		{"--min-confidence", "1.5"},
		{"--min-confidence", "+Inf"},
		{"--max-mi", "NaN"},
		{"--max-mi", "Inf"},
		{"--max-mi", "-1"},
		{"--samples", "0"},
		{"--samples", "1000000000"},
	} {
		t.Run(c.flag+"="+c.value, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{"demo", c.flag, c.value}, &out, &errb); code != 2 {
				t.Fatalf("exit %d, want 2: %s", code, errb.String())
			}
			if !strings.Contains(errb.String(), c.flag) {
				t.Errorf("error does not name %s: %s", c.flag, errb.String())
			}
			if out.Len() != 0 {
				t.Errorf("printed %q", out.String())
			}
		})
	}
}
