package main

import (
	"context"
	_ "embed"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"text/tabwriter"

	"github.com/klauspost/compress/zstd"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// The demo's model is a mean-field Gaussian MLP (784-48-48-10) trained on Fashion-MNIST with
// function-space VI in the reference code's form (paper 004; --fsvi-kl last_layer, docs/FSVI.md),
// converted to fp16 and calibrated on the Fashion-MNIST test set (risk ≤ 5 % on confidence and
// mutual information, 256 samples, the default 50/50 split with seed 42, docs/CALIBRATE.md). It
// replaced bayesianize's FFG-U fixture in session 14 (docs/RESULTS.md, "FSVI as the demo's
// model"): more accurate (86.4 % against about 78 %), and it abstains on the four inputs that are
// not clothing. cmd/edgebnn/testdata/demo_source.ebnn is what training wrote (amd64):
//
//	edgebnn train --arch mlp:784-48-48-10 --data fmnist --posterior ffg_w --objective fsvi \
//	  --fsvi-kl last_layer --context random-monochrome --context-size 32 --epochs 3 \
//	  --batch-size 100 --optimizer adam --lr 3e-3 --milestones 2 --gamma 0.1 --test-samples 8 \
//	  --seed 1 --out demo_source.ebnn        # the model file is demo_source.model.ebnn
//	edgebnn convert --checkpoint cmd/edgebnn/testdata/demo_source.ebnn --dtype f16 --out converted.ebnn
//	edgebnn calibrate --model converted.ebnn --data fmnist --target-risk 0.05 --on both \
//	  --samples 256 --seed 42 --out cmd/edgebnn/demo/model.ebnn
//
// TestDemoModelIsFresh checks that the file is that conversion plus a policy section, and (when
// the Fashion-MNIST files are installed, without -short) that the calibration reproduces it.
//
// The binary carries it compressed, as demo/model.ebnn.zst (TestBuiltinModelIsDemoFile checks
// it decodes to demo/model.ebnn; EDGEBNN_REGEN_DEMO rewrites both): the file's even-numbered bytes,
// then its odd-numbered ones — the fp16 weights' low and high bytes, which compress far better
// apart — as one zstd frame, about 105 KiB instead of 165. The lean board binary embeds it,
// and TestDeviceBuildDeps bounds that binary at 4 MB: stored plain, the file costs it a 64 KiB
// page more.
//
//go:embed demo/model.ebnn.zst
var demoModelZst []byte

// builtinModel returns demo/model.ebnn, decompressed from demoModelZst.
func builtinModel() ([]byte, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	defer dec.Close()
	split, err := dec.DecodeAll(demoModelZst, nil)
	if err != nil {
		return nil, err
	}
	return interleaveHalves(split), nil
}

// interleaveHalves undoes the byte split of demoModelZst: b holds a file's even-numbered bytes,
// then its odd-numbered ones.
func interleaveHalves(b []byte) []byte {
	out := make([]byte, len(b))
	even, odd := b[:(len(b)+1)/2], b[(len(b)+1)/2:]
	for i, c := range even {
		out[2*i] = c
	}
	for i, c := range odd {
		out[2*i+1] = c
	}
	return out
}

// demoImages holds Fashion-MNIST test images as 784 bytes each (pixel·255); demoImageIndex and
// demoImageLabel say which test images they are. A string, it stays in the binary's read-only
// data: the writable data segment has less room to spare (TestDeviceBuildDeps).
//
//go:embed demo/images.bin
var demoImages string

var (
	demoImageIndex = []int{0, 1, 2, 4, 8, 9}
	demoImageLabel = []int{9, 2, 1, 6, 5, 7}
)

// fashionClasses are Fashion-MNIST's class names.
var fashionClasses = []string{"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"}

const demoUsage = `Usage: edgebnn demo [--samples K] [--seed S] [--min-confidence P] [--max-mi M]

Runs a small Bayesian network that is built into the binary — an MLP
(784-48-48-10) with mean-field Gaussian weights, trained on Fashion-MNIST by
function-space variational inference and converted to a 165 KiB fp16 model
file — on a handful of inputs, also built in: six
Fashion-MNIST test images and four inputs that are plainly not clothing
(uniform noise, an inverted image, a blank and a white image). For each it
prints the predicted class, its probability, the predictive entropy and the
mutual information (epistemic uncertainty), and whether a device should act
on the prediction or abstain (defer to a person, a bigger model, a retry):
it abstains when the confidence is below --min-confidence or the mutual
information is above --max-mi. Their defaults are the decision policy stored
in the model file, fitted by edgebnn calibrate for an error rate of at most
5% among the inputs it acts on: on 5000 held-out Fashion-MNIST test images the
model acts on 76.5% and is wrong on 5.2% of those (14.2% if it had to answer
every one). On the first 256 test images it acts on 204 and is right on
96% of them (88% if it had to answer every one).

Needs no files and no network.`

type demoInput struct {
	what  string
	label int // -1: out of distribution
	x     []float32
}

func demoInputs() ([]demoInput, error) {
	if len(demoImages) != 784*len(demoImageIndex) {
		return nil, fmt.Errorf("built-in images have %d bytes, want %d", len(demoImages), 784*len(demoImageIndex))
	}
	var in []demoInput
	for i, idx := range demoImageIndex {
		x := make([]float32, 784)
		for j := range x {
			x[j] = float32(demoImages[i*784+j]) / 255
		}
		in = append(in, demoInput{fmt.Sprintf("test image %d (%s)", idx, fashionClasses[demoImageLabel[i]]), demoImageLabel[i], x})
	}
	rng := rand.New(rand.NewPCG(2026, 11))
	noise := make([]float32, 784)
	for j := range noise {
		noise[j] = rng.Float32()
	}
	inverted := make([]float32, 784)
	for j, v := range in[0].x {
		inverted[j] = 1 - v
	}
	white := make([]float32, 784)
	for j := range white {
		white[j] = 1
	}
	return append(in,
		demoInput{"uniform noise", -1, noise},
		demoInput{"test image 0, inverted", -1, inverted},
		demoInput{"blank (all black)", -1, make([]float32, 784)},
		demoInput{"all white", -1, white},
	), nil
}

// validateDemoFlags checks demo's numeric flags: --samples in [1, maxSamplesFlag],
// --min-confidence a probability and --max-mi a finite, non-negative number of nats (a NaN
// threshold would compare false and silently disable abstaining). Errors name the flag.
func validateDemoFlags(samples int, minConf, maxMI float64) error {
	switch {
	case samples < 1 || samples > maxSamplesFlag:
		return usagef("--samples %d outside [1, %d]", samples, maxSamplesFlag)
	case math.IsNaN(minConf) || minConf < 0 || minConf > 1:
		return usagef("--min-confidence %g is not a probability in [0, 1]", minConf)
	case math.IsNaN(maxMI) || math.IsInf(maxMI, 0) || maxMI < 0:
		return usagef("--max-mi %g must be a finite number of nats ≥ 0", maxMI)
	}
	return nil
}

// demoDefaults are the demo's sample count and thresholds: the built-in model's policy, or, for
// a model without one, 256 samples and the thresholds the demo used before it had a policy.
func demoDefaults(m *runtime.Model) (samples int, seed uint64, minConf, maxMI float64) {
	samples, minConf, maxMI = 256, 0.5, 0.0008
	if p := m.Policy(); p != nil {
		if p.Samples > 0 {
			samples = p.Samples
		}
		if p.Seed != nil {
			seed = *p.Seed
		}
		if p.MinConfidence != nil {
			minConf = *p.MinConfidence
		}
		if p.MaxMutualInfo != nil {
			maxMI = *p.MaxMutualInfo
		}
	}
	return samples, seed, minConf, maxMI
}

func runDemo(_ context.Context, args []string, stdout, _ io.Writer) error {
	demoModel, err := builtinModel()
	if err != nil {
		return fmt.Errorf("built-in model: %w", err)
	}
	f, err := format.Decode(demoModel)
	if err != nil {
		return fmt.Errorf("built-in model: %w", err)
	}
	m, err := runtime.FromFile(f)
	if err != nil {
		return fmt.Errorf("built-in model: %w", err)
	}
	defSamples, defSeed, defConf, defMI := demoDefaults(m)
	fs := newFlagSet("demo")
	samples := fs.Int("samples", defSamples, "Monte Carlo samples `K` per prediction (default: the model's policy's)")
	seed := fs.Uint64("seed", defSeed, "random `seed` (default: the model's policy's)")
	minConf := fs.Float64("min-confidence", defConf, "abstain below this predicted-class probability `P` (default: the model's policy)")
	maxMI := fs.Float64("max-mi", defMI, "abstain above this mutual information `M` in nats (default: the model's policy)")
	if err := parseFlagsOnly(fs, demoUsage, args, stdout); err != nil {
		return err
	}
	if err := validateDemoFlags(*samples, *minConf, *maxMI); err != nil {
		return err
	}
	pol := &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: minConf, MaxMutualInfo: maxMI}
	p, err := m.NewPredictor(runtime.Options{Samples: *samples, Seed: *seed})
	if err != nil {
		return err
	}
	inputs, err := demoInputs()
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "A Bayesian MLP (784-48-48-10, mean-field Gaussian weights trained by function-space VI,\n")
	fmt.Fprintf(stdout, "%d-byte fp16 model file) predicts %d inputs with %d posterior samples each.\n", len(demoModel), len(inputs), *samples)
	fmt.Fprintf(stdout, "It abstains when confidence < %.4f or mutual information > %.4g nats.\n\n", *minConf, *maxMI)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INPUT\tPREDICTED\tCONFIDENCE\tENTROPY\tMUTUAL INFO\tDECISION")
	var pred runtime.Prediction
	correct, acted, ood, oodAbstained := 0, 0, 0, 0
	for _, in := range inputs {
		if err := p.Predict(in.x, &pred); err != nil {
			return err
		}
		decision := "act"
		switch pol.Decide(&pred).Reason {
		case runtime.ReasonLowConfidenceHighMutualInfo:
			decision = "abstain (low confidence, high MI)"
		case runtime.ReasonLowConfidence:
			decision = "abstain (low confidence)"
		case runtime.ReasonHighMutualInfo:
			decision = "abstain (high MI)"
		}
		if in.label < 0 {
			ood++
			if decision != "act" {
				oodAbstained++
			}
		} else if decision == "act" {
			acted++
			if pred.Class == in.label {
				correct++
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%.4f\t%.3f\t%.5f\t%s\n", in.what, fashionClasses[pred.Class], pred.Confidence, pred.Entropy, pred.MutualInfo, decision)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	fmt.Fprintf(stdout, "\nActed on %d of %d test images (%d correct); abstained on %d of %d inputs that are not clothing.\n",
		acted, len(inputs)-ood, correct, oodAbstained, ood)
	return nil
}
