package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestConvertPreprocessAndPredictRaw: convert stores the transformation its flags describe,
// inspect's model reads it back, and predict on raw inputs (pixel values 0–255) gives exactly
// what predict --normalized gives on the inputs transformed by hand; JSON lines carry the class
// name, the decision and the samples.
func TestConvertPreprocessAndPredictRaw(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.ebnn")
	names := "T-shirt/top,Trouser,Pullover,Dress,Coat,Sandal,Shirt,Sneaker,Bag,Ankle boot"
	convertDemo(t, model, "--input-scale", "0.00392156862745098", "--input-mean", "0.25", "--input-std", "0.5", "--class-names", names)
	m, err := runtime.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	pre := m.Preprocessing()
	m.Close()
	if pre == nil || pre.Scale != 1.0/255 || pre.Mean[0] != 0.25 || pre.Std[0] != 0.5 || len(pre.ClassNames) != 10 {
		t.Fatalf("stored preprocess %+v", pre)
	}
	// inspect shows it, in text and JSON.
	if code, stdout, stderr := runCLI("inspect", model); code != 0 || !strings.Contains(stdout, "preprocess: x = (raw · 0.00392157 − mean) / std, mean [0.25], std [0.5], layout chw; 10 classes") {
		t.Errorf("inspect: exit %d: %s%s", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI("inspect", "--json", model); code != 0 || (!strings.Contains(stdout, `"preprocess": {`) || !strings.Contains(stdout, `"Ankle boot"`)) {
		t.Errorf("inspect --json: exit %d: %s", code, stdout)
	}
	// Two raw inputs (integers 0–255) and the same inputs transformed by hand.
	var raw, norm strings.Builder
	for i := 0; i < 2; i++ {
		for j := 0; j < 784; j++ {
			v := (j*7 + i*31) % 256
			sep := ","
			if j == 783 {
				sep = "\n"
			}
			fmt.Fprintf(&raw, "%d%s", v, sep)
			fmt.Fprintf(&norm, "%.9g%s", (float64(v)/255-0.25)/0.5, sep)
		}
	}
	rawPath, normPath := filepath.Join(dir, "raw.csv"), filepath.Join(dir, "norm.csv")
	mustWrite(t, rawPath, []byte(raw.String()))
	mustWrite(t, normPath, []byte(norm.String()))
	predict := func(args ...string) []classJSON {
		t.Helper()
		stdout := runOK(t, append([]string{"predict", "--model", model, "--json", "--samples", "16", "--seed", "4"}, args...)...)
		var out []classJSON
		sc := bufio.NewScanner(strings.NewReader(stdout))
		for sc.Scan() {
			var p classJSON
			if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
			out = append(out, p)
		}
		return out
	}
	a, b := predict("--input", rawPath), predict("--input", normPath, "--normalized")
	if len(a) != 2 || len(b) != 2 {
		t.Fatalf("%d and %d predictions", len(a), len(b))
	}
	for i := range a {
		if len(a[i].Probs) == 0 || len(a[i].Probs) != len(b[i].Probs) {
			t.Fatalf("input %d: %d and %d class probabilities", i, len(a[i].Probs), len(b[i].Probs))
		}
		for j := range a[i].Probs {
			if !(math.Abs(float64(a[i].Probs[j]-b[i].Probs[j])) <= 1e-5) {
				t.Fatalf("input %d class %d: raw %v, normalised by hand %v", i, j, a[i].Probs[j], b[i].Probs[j])
			}
		}
		if want := strings.Split(names, ",")[a[i].Pred]; a[i].ClassName != want {
			t.Errorf("input %d: class_name %q, want %q", i, a[i].ClassName, want)
		}
		if a[i].Decision != "act" || a[i].Reason != "no_policy" || a[i].Samples != 16 {
			t.Errorf("input %d: decision %q (%q), %d samples", i, a[i].Decision, a[i].Reason, a[i].Samples)
		}
	}
	// --adaptive needs a policy.
	if code, _, stderr := runCLI("predict", "--model", model, "--input", rawPath, "--adaptive"); code != 2 || !strings.Contains(stderr, "needs a model with a decision policy") {
		t.Errorf("--adaptive without a policy: exit %d: %s", code, stderr)
	}
}

func TestConvertPreprocessErrors(t *testing.T) {
	skipAbsent(t, "convert")
	dir := t.TempDir()
	side := filepath.Join(dir, "pre.json")
	mustWrite(t, side, []byte(`{"version":1,"scale":2,"colour":"red"}`))
	base := []string{"convert", "--checkpoint", filepath.Join(demoFixture, "state_dict.safetensors"),
		"--config", filepath.Join(demoFixture, "inference_config.json"), "--arch", filepath.Join(demoFixture, "model.txt"),
		"--out", filepath.Join(dir, "m.ebnn")}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--input-scale", "NaN"}, `--input-scale "NaN"`},
		{[]string{"--input-mean", "0.1,x"}, `--input-mean: value 2 ("x")`},
		{[]string{"--input-std", "0.5,0.5"}, "std has 2 values; want 1 or one per feature (784)"},
		{[]string{"--input-std", "-1"}, "std[0] = -1"},
		{[]string{"--input-layout", "hwc"}, `layout "hwc" needs an image input`},
		{[]string{"--class-names", "a,b"}, "2 class_names for a model with 10 outputs"},
		{[]string{"--preprocess", side}, `unknown field "colour"`},
		{[]string{"--preprocess", filepath.Join(dir, "missing.json")}, "missing.json"},
	} {
		code, _, stderr := runCLI(append(base, c.args...)...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want an error containing %q", c.args, code, stderr, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "m.ebnn")); err == nil {
			t.Fatalf("%v: the output was written", c.args)
		}
	}
}

// TestConvertKeepsClassNames: convert's preprocessing flags replace a checkpoint's input
// preprocessing but keep the class names it recorded from a CSV of named labels, so that eval
// of the converted model still matches that CSV's labels by name (without them it is an error).
func TestConvertKeepsClassNames(t *testing.T) {
	skipAbsent(t, "train", "convert", "eval")
	dir := t.TempDir()
	csv := filepath.Join(dir, "named.csv")
	var b strings.Builder
	b.WriteString("a,b,label\n")
	names := []string{"emu", "cat", "dog"}
	for i := range 60 {
		fmt.Fprintf(&b, "%d.%d,%d,%s\n", i%3, i%7, i%5, names[i%3])
	}
	mustWrite(t, csv, []byte(b.String()))
	ckpt := filepath.Join(dir, "named.ckpt")
	runOK(t, "train", "--data", "csv:"+csv, "--arch", "mlp:2-8-3", "--posterior", "deterministic", "--epochs", "1", "--out", ckpt)
	model := filepath.Join(dir, "named.ebnn")
	runOK(t, "convert", "--checkpoint", ckpt, "--out", model, "--input-scale", "0.5")
	m, err := runtime.Load(model)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pre := m.Preprocessing()
	if pre == nil || pre.Scale != 0.5 || !slices.Equal(pre.ClassNames, []string{"cat", "dog", "emu"}) {
		t.Fatalf("preprocessing %+v, want scale 0.5 and the checkpoint's class names", pre)
	}
	runOK(t, "eval", "--data", "csv:"+csv, model)
}

// convertDemo converts the demo fixture to model with the extra convert flags, or fails the test.
func convertDemo(t *testing.T, model string, extra ...string) {
	t.Helper()
	runHostOK(t, append([]string{"convert", "--checkpoint", filepath.Join(demoFixture, "state_dict.safetensors"),
		"--config", filepath.Join(demoFixture, "inference_config.json"), "--arch", filepath.Join(demoFixture, "model.txt"),
		"--out", model}, extra...)...)
}
