package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// demoFixture holds the reference inputs: the first 256 Fashion-MNIST test images.
const demoFixture = "../../testdata/bayesianize/mlp_ffgu"

// demoSource is the trained model the built-in one is converted from (f32, as edgebnn train wrote
// it; cmd_demo.go has the command).
const demoSource = "testdata/demo_source.ebnn"

// demoModel is the built-in model as the binary has it: demoModelZst decompressed.
var demoModel = func() []byte {
	b, err := builtinModel()
	if err != nil {
		panic(fmt.Sprintf("the built-in model (demo/model.ebnn.zst) does not decompress: %v", err))
	}
	return b
}()

// compressDemoModel returns model in demoModelZst's form: its even-numbered bytes, then its
// odd-numbered ones, as one zstd frame at the encoder's best compression.
func compressDemoModel(t *testing.T, model []byte) []byte {
	t.Helper()
	split := make([]byte, 0, len(model))
	for i := 0; i < len(model); i += 2 {
		split = append(split, model[i])
	}
	for i := 1; i < len(model); i += 2 {
		split = append(split, model[i])
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(split, nil)
}

// TestBuiltinModelIsDemoFile: the compressed model the binary embeds decodes to exactly
// demo/model.ebnn, the file the other packages' tests and examples load. With
// EDGEBNN_REGEN_DEMO=1 it rewrites demo/model.ebnn.zst from demo/model.ebnn.
func TestBuiltinModelIsDemoFile(t *testing.T) {
	file, err := os.ReadFile("demo/model.ebnn")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("EDGEBNN_REGEN_DEMO") != "" {
		mustWrite(t, "demo/model.ebnn.zst", compressDemoModel(t, file))
		return
	}
	if !bytes.Equal(demoModel, file) {
		t.Errorf("demo/model.ebnn.zst decodes to %d bytes that are not demo/model.ebnn (%d bytes); rerun with EDGEBNN_REGEN_DEMO=1", len(demoModel), len(file))
	}
	if got := interleaveHalves(nil); len(got) != 0 {
		t.Errorf("interleaveHalves(nil) = %v", got)
	}
	odd := []byte{0, 2, 4, 1, 3} // 0..4 split into even- and odd-numbered bytes
	if got := interleaveHalves(odd); !bytes.Equal(got, []byte{0, 1, 2, 3, 4}) {
		t.Errorf("interleaveHalves(%v) = %v, want [0 1 2 3 4]", odd, got)
	}
}

// referenceImages returns the mlp_ffgu fixture's reference inputs (the first 256 Fashion-MNIST
// test images, 784 values each) and their labels.
func referenceImages(t *testing.T) ([]float32, []int64) {
	t.Helper()
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
	return xs, labels
}

// TestDemoModelIsFresh: the built-in model is exactly what the converter makes of demoSource
// plus the built-in policy section, and (without -short, when the Fashion-MNIST files are
// installed) that policy is exactly what edgebnn calibrate fits with the settings it records.
// Set EDGEBNN_REGEN_DEMO=1 to rewrite demo/model.ebnn (convert and calibrate; needs the data),
// the compressed copy the binary embeds, demo/model.ebnn.zst, and demo/images.bin.
func TestDemoModelIsFresh(t *testing.T) {
	out := filepath.Join(t.TempDir(), "model.ebnn")
	if _, err := convert.Convert(convert.Options{Checkpoint: demoSource, DType: "f16", Out: out}); err != nil {
		t.Fatal(err)
	}
	fresh, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	xs, labels := referenceImages(t)
	var images []byte
	for i, idx := range demoImageIndex {
		if int(labels[idx]) != demoImageLabel[i] {
			t.Errorf("test image %d has label %d, the demo says %d", idx, labels[idx], demoImageLabel[i])
		}
		for _, v := range xs[idx*784 : (idx+1)*784] {
			images = append(images, byte(v*255+0.5))
		}
	}
	regen := os.Getenv("EDGEBNN_REGEN_DEMO") != ""
	if regen {
		mustWrite(t, "demo/images.bin", images)
		calibrated := calibrateDemo(t, out, 0.05, "both", 256, 42)
		mustWrite(t, "demo/model.ebnn", calibrated)
		mustWrite(t, "demo/model.ebnn.zst", compressDemoModel(t, calibrated))
		return
	}
	// The sections other than the policy: the fresh conversion with the built-in policy added
	// must be the built-in file.
	builtin, err := format.Decode(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := builtin.Blob(runtime.PolicyBlob)
	if err != nil {
		t.Fatalf("the built-in model has no policy: %v", err)
	}
	ff, err := format.Decode(fresh)
	if err != nil {
		t.Fatal(err)
	}
	w, err := withPolicyBlob(ff, pol)
	if err != nil {
		t.Fatal(err)
	}
	var rebuilt bytes.Buffer
	if _, err := w.WriteTo(&rebuilt); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(rebuilt.Bytes(), demoModel) {
		t.Errorf("demo/model.ebnn (%d bytes) differs from a fresh conversion with its policy (%d bytes); rerun with EDGEBNN_REGEN_DEMO=1", len(demoModel), rebuilt.Len())
	}
	// The policy: calibrate again with the recorded settings.
	p, err := runtime.ParsePolicy(pol, runtime.Classification)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Calibration
	if c == nil || c.Data != "fashion-mnist test set" {
		t.Fatalf("the built-in policy's calibration record is %+v", c)
	}
	if testing.Short() {
		t.Log("-short: not recalibrating the built-in model")
	} else if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "t10k-labels-idx1-ubyte.gz")); err != nil {
		t.Logf("not recalibrating the built-in model: no Fashion-MNIST files (%v)", err)
	} else if got := calibrateDemo(t, out, c.Value, c.On, p.Samples, c.Seed); !bytes.Equal(got, demoModel) {
		// The thresholds are predictions' confidences and mutual informations, whose last bits
		// depend on the kernels (assembly or purego): equal up to rounding, and the same
		// calibration results, is the same policy.
		gf, err := format.Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		gb, _ := gf.Blob(runtime.PolicyBlob)
		fresh, err := runtime.ParsePolicy(gb, runtime.Classification)
		if err != nil {
			t.Fatal(err)
		}
		near := func(a, b *float64) bool {
			return (a == nil) == (b == nil) && (a == nil || math.Abs(*a-*b) <= 1e-5*math.Abs(*a))
		}
		if !near(p.MinConfidence, fresh.MinConfidence) || !near(p.MaxMutualInfo, fresh.MaxMutualInfo) ||
			fresh.Calibration == nil || *fresh.Calibration != *p.Calibration || fresh.Samples != p.Samples {
			t.Errorf("calibrating a fresh conversion gives another policy; rerun with EDGEBNN_REGEN_DEMO=1\nbuilt in: %s\nfresh:    %s", pol, gb)
		}
	}
	if string(images) != demoImages {
		t.Errorf("demo/images.bin differs from the fixture's test images; rerun with EDGEBNN_REGEN_DEMO=1")
	}
}

// calibrateDemo runs edgebnn calibrate on the converted model at path with the demo's settings
// and returns the calibrated file.
func calibrateDemo(t *testing.T, path string, risk float64, on string, samples int, seed uint64) []byte {
	t.Helper()
	out := filepath.Join(t.TempDir(), "calibrated.ebnn")
	stdout := runHostOK(t, "calibrate", "--model", path, "--data", "fmnist", "--target-risk", fmt.Sprint(risk),
		"--on", on, "--samples", fmt.Sprint(samples), "--seed", fmt.Sprint(seed), "--out", out)
	t.Log("\n" + stdout)
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDemoUsageNumbers: the usage text's figures for the first 256 Fashion-MNIST test images (the
// fixture's reference inputs) are what the demo's defaults give.
func TestDemoUsageNumbers(t *testing.T) {
	xs, labels := referenceImages(t)
	m, err := runtime.LoadBytes(demoModel)
	if err != nil {
		t.Fatal(err)
	}
	samples, seed, _, _ := demoDefaults(m)
	p, err := m.NewPredictor(runtime.Options{Samples: samples, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	var pred runtime.Prediction
	acted, right, all := 0, 0, 0
	for i, y := range labels {
		if err := p.Predict(xs[i*784:(i+1)*784], &pred); err != nil {
			t.Fatal(err)
		}
		ok := pred.Class == int(y)
		if ok {
			all++
		}
		if m.Decide(&pred).Act {
			acted++
			if ok {
				right++
			}
		}
	}
	want := fmt.Sprintf("acts on %d and is right on\n%.0f%% of them (%.0f%% if it had to answer every one)", acted,
		100*float64(right)/float64(acted), 100*float64(all)/float64(len(labels)))
	if !strings.Contains(demoUsage, want) {
		t.Errorf("the usage text does not say %q", want)
	}
}

// TestDemo: the demo runs and abstains on the plainly out-of-distribution inputs.
func TestDemo(t *testing.T) {
	s := runOK(t, "demo")
	checkContains(t, "output", s, "uniform noise", "test image 0, inverted", "blank (all black)", "Trouser", "mutual information")
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
