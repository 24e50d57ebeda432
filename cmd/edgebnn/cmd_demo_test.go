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
	above := 0
	for _, v := range mi {
		if v > demoMaxMI {
			above++
		}
	}
	sorted := slices.Clone(mi)
	slices.Sort(sorted)
	for _, q := range []float64{0.5, 0.7, 0.75, 0.8, 0.85, 0.9} {
		t.Logf("MI percentile %2.0f: %.6g nats", 100*q, sorted[int(q*float64(len(sorted)-1)+0.5)])
	}
	share := float64(above) / float64(test.N)
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
