package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

const (
	// demoSource is the trained model the built-in one is converted from.
	demoSource = "../../testdata/trained/fmnist_ffgu/model.ebnn"
	// demoFixture holds the Fashion-MNIST test images the demo shows (reference.safetensors).
	demoFixture = "../../testdata/bayesianize/mlp_ffgu"
)

// TestDemoModelIsFresh: the built-in model is exactly what the converter makes of the trained
// model with the options the comment above demoModel gives, and the built-in images are the
// fixture's test images (set EDGEBNN_REGEN_DEMO=1 to rewrite demo/model.ebnn and demo/images.bin).
func TestDemoModelIsFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "model.ebnn")
	if _, err := convert.Convert(convert.Options{
		Checkpoint: demoSource,
		DType:      "f16",
		F16Policy:  "compact",
		Prune:      0.5,
		Compress:   "zstd",
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

// TestDemo: the demo runs with its defaults, shows every input and classifies the six test
// images as their labels say; with thresholds nothing can meet it abstains on everything.
func TestDemo(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"demo"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	s := out.String()
	for _, want := range []string{"uniform noise", "test image 0, inverted", "blank (all black)", "all white",
		"mutual information", fmt.Sprintf("%d-byte fp16 model file", len(demoModel)), "Acted on"} {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q:\n%s", want, s)
		}
	}
	for i, idx := range demoImageIndex {
		row := fmt.Sprintf("test image %d (%s)", idx, fashionClasses[demoImageLabel[i]])
		found := false
		for _, line := range strings.Split(s, "\n") {
			if rest, ok := strings.CutPrefix(line, row); ok {
				found = true
				if f := strings.Fields(rest); len(f) == 0 || !strings.HasPrefix(fashionClasses[demoImageLabel[i]], f[0]) {
					t.Errorf("the built-in model misclassifies %s: %s", row, line)
				}
			}
		}
		if !found {
			t.Errorf("output lacks a row for %s:\n%s", row, s)
		}
	}
	t.Log("\n" + s)

	out.Reset()
	if code := run([]string{"demo", "--samples", "8", "--min-confidence", "2", "--max-mi", "-1"}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "Acted on 0 of 6 test images (0 correct); abstained on 4 of 4 inputs that are not clothing."; !strings.Contains(out.String(), want) {
		t.Errorf("with unreachable thresholds the output lacks %q:\n%s", want, out.String())
	}
}

// TestDemoDecision: the act/abstain rule at and around both thresholds.
func TestDemoDecision(t *testing.T) {
	for _, tc := range []struct {
		conf float32
		mi   float64
		want string
	}{
		{0.9, 0.01, "act"},
		{0.5, 0.02, "act"}, // both thresholds are inclusive
		{0.49, 0.01, "abstain (low confidence)"},
		{0.9, 0.021, "abstain (high MI)"},
		{0.3, 0.5, "abstain (low confidence, high MI)"},
	} {
		pred := runtime.Prediction{Confidence: tc.conf, MutualInfo: tc.mi}
		if got := demoDecision(&pred, 0.5, 0.02); got != tc.want {
			t.Errorf("confidence %g, MI %g: %q, want %q", tc.conf, tc.mi, got, tc.want)
		}
	}
}

// TestDemoThresholds derives the demo's --max-mi default and checks the numbers the usage text
// quotes. It predicts all 10,000 Fashion-MNIST test images with 256 samples (minutes on a PC),
// so it runs only with EDGEBNN_DEMO_THRESHOLDS=1 (and the data in data.DefaultFashionMNISTDir or
// EDGEBNN_FMNIST_DIR).
func TestDemoThresholds(t *testing.T) {
	if os.Getenv("EDGEBNN_DEMO_THRESHOLDS") == "" {
		t.Skip("set EDGEBNN_DEMO_THRESHOLDS=1 to derive the demo's thresholds from the test set")
	}
	dir := os.Getenv("EDGEBNN_FMNIST_DIR")
	if dir == "" {
		dir = data.DefaultFashionMNISTDir
	}
	test, err := data.FashionMNIST(dir, "test")
	if err != nil {
		t.Fatal(err)
	}
	f, err := format.Decode(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// Threads do not change the results (runtime.Options), only the wall time.
	p, err := m.NewPredictor(runtime.Options{Samples: demoSamples, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const head = 256
	mi := make([]float64, test.N)
	var pred runtime.Prediction
	acted, actedRight, right := 0, 0, 0
	for i := range test.N {
		if err := p.Predict(test.Row(i), &pred); err != nil {
			t.Fatalf("test image %d: %v", i, err)
		}
		mi[i] = pred.MutualInfo
		if i < head {
			ok := pred.Class == test.Labels[i]
			if ok {
				right++
			}
			if demoDecision(&pred, demoMinConfidence, demoMaxMI) == "act" {
				acted++
				if ok {
					actedRight++
				}
			}
		}
	}
	above := func(m float64) int {
		n := 0
		for _, v := range mi {
			if v > m {
				n++
			}
		}
		return n
	}
	for _, m := range []float64{0.01, 0.015, 0.02, 0.025, 0.03} {
		t.Logf("MI > %g: %.2f%% of the test images", m, 100*float64(above(m))/float64(test.N))
	}
	sorted := slices.Clone(mi)
	slices.Sort(sorted)
	for _, q := range []float64{0.5, 0.7, 0.75, 0.8, 0.85, 0.9} {
		t.Logf("MI percentile %2.0f: %.6g nats", 100*q, sorted[int(q*float64(len(sorted)-1)+0.5)])
	}
	share := float64(above(demoMaxMI)) / float64(test.N)
	t.Logf("%.1f%% of the test images have MI > %g", 100*share, demoMaxMI)
	if share < 0.18 || share > 0.22 {
		t.Errorf("%.1f%% of the test images exceed --max-mi %g, the usage text says 20%%", 100*share, demoMaxMI)
	}
	claim := fmt.Sprintf("acts on %d of the first %d Fashion-MNIST test images and is right on %.0f%% of them\n(%.0f%% if it had to answer every one)",
		acted, head, 100*float64(actedRight)/float64(acted), 100*float64(right)/head)
	t.Log(claim)
	if !strings.Contains(strings.Join(strings.Fields(demoUsage), " "), strings.Join(strings.Fields(claim), " ")) {
		t.Errorf("the usage text should say %q", claim)
	}
}
