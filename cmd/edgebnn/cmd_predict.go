package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/runtime"
)

const predictUsage = `Usage: edgebnn predict --model FILE --input PATH [flags]

Predicts with a model file and prints, for each input, the predictive
distribution and how far to trust it: the predicted class and its probability,
the total entropy of the predictive distribution, the expected entropy
(aleatoric) and the mutual information (epistemic uncertainty). Regression
models print the predictive mean, total and epistemic variance.

Inputs: a CSV file with one input per row (floats, an optional header row), or
a tensor of shape [N, ...] in a safetensors file (--input-key, default
"inputs"). Images are channel-major (C×H×W), flattened.

With --json, one JSON object per line and input: classification keys index,
probs, pred, confidence, entropy, expected_entropy, mutual_info, std;
regression keys index, mean, var, epistemic_var.`

var predictCmd = command{
	name:    "predict",
	summary: "predict with uncertainty (entropy, mutual information)",
	usage:   predictUsage,
	run:     runPredict,
}

// predictFlags are the options shared by predict and bench.
type predictFlags struct {
	model    *string
	samples  *int
	seed     *uint64
	strategy *string
	batch    *int
	threads  *int
	// mean, when set by a command that offers --mean, predicts at the posterior mean.
	mean *bool
}

func addPredictFlags(fs interface {
	String(string, string, string) *string
	Int(string, int, string) *int
	Uint64(string, uint64, string) *uint64
}, batchDefault int) predictFlags {
	return predictFlags{
		model:    fs.String("model", "", "the model `FILE` (from edgebnn convert)"),
		samples:  fs.Int("samples", 0, "Monte Carlo samples `K` per prediction (default 32; an ensemble of M networks: M, one per member)"),
		seed:     fs.Uint64("seed", 0, "random `seed`; the same seed gives identical outputs"),
		strategy: fs.String("strategy", "auto", "sampling `strategy`: weight, local or auto"),
		batch:    fs.Int("batch", batchDefault, "inputs processed together (`B`)"),
		threads:  fs.Int("threads", 1, "goroutines drawing the samples of a prediction in parallel (`T`); results do not depend on it"),
	}
}

func (f predictFlags) open() (*runtime.Model, *runtime.Predictor, error) {
	if *f.model == "" {
		return nil, nil, usagef("--model is required")
	}
	st, err := runtime.ParseStrategy(*f.strategy)
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	if *f.samples < 0 {
		return nil, nil, usagef("--samples must be positive (0: the model's default)")
	}
	if *f.batch < 1 {
		return nil, nil, usagef("--batch must be at least 1")
	}
	if *f.threads < 1 {
		return nil, nil, usagef("--threads must be at least 1")
	}
	m, err := runtime.Load(*f.model)
	if err != nil {
		return nil, nil, err
	}
	p, err := m.NewPredictor(runtime.Options{Samples: *f.samples, Seed: *f.seed, Strategy: st, MaxBatch: *f.batch,
		Threads: *f.threads, Mean: f.mean != nil && *f.mean})
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, p, nil
}

type classJSON struct {
	Index           int       `json:"index"`
	Probs           []float32 `json:"probs"`
	Pred            int       `json:"pred"`
	Confidence      float32   `json:"confidence"`
	Entropy         float64   `json:"entropy"`
	ExpectedEntropy float64   `json:"expected_entropy"`
	MutualInfo      float64   `json:"mutual_info"`
	Std             []float32 `json:"std"`
}

type regressionJSON struct {
	Index        int       `json:"index"`
	Mean         []float32 `json:"mean"`
	Var          []float32 `json:"var"`
	EpistemicVar []float32 `json:"epistemic_var"`
}

func runPredict(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("predict")
	pf := addPredictFlags(fs, 32)
	input := fs.String("input", "", "inputs: a CSV or safetensors `PATH`")
	key := fs.String("input-key", "", "the tensor `NAME` in a safetensors input file")
	asJSON := fs.Bool("json", false, "print one JSON object per input")
	if err := parseFlags(fs, predictUsage, args, stdout); err != nil {
		return err
	}
	if err := noArgs(fs); err != nil {
		return err
	}
	if *input == "" {
		return usagef("--input is required")
	}
	m, p, err := pf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	defer p.Close()
	xs, n, err := readInputs(*input, *key, m.InputSize())
	if err != nil {
		return err
	}
	preds := make([]runtime.Prediction, n)
	if err := p.PredictBatch(xs, preds); err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		for i := range preds {
			var v any
			if m.Task() == runtime.Regression {
				v = regressionJSON{i, preds[i].Mean, preds[i].Var, preds[i].EpistemicVar}
			} else {
				pr := &preds[i]
				v = classJSON{i, pr.Probs, pr.Class, pr.Confidence, pr.Entropy, pr.ExpectedEntropy, pr.MutualInfo, pr.Std}
			}
			if err := enc.Encode(v); err != nil {
				return fmt.Errorf("writing JSON: %w", err)
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	if m.Task() == runtime.Regression {
		fmt.Fprintln(tw, "INPUT\tMEAN\tSTD\tEPISTEMIC STD\t")
		for i := range preds {
			for j := range preds[i].Mean {
				fmt.Fprintf(tw, "%d\t%.5g\t%.4g\t%.4g\t\n", i, preds[i].Mean[j], sqrt32(preds[i].Var[j]), sqrt32(preds[i].EpistemicVar[j]))
			}
		}
	} else {
		fmt.Fprintln(tw, "INPUT\tCLASS\tCONFIDENCE\tENTROPY\tEXPECTED ENTROPY\tMUTUAL INFO\t")
		for i := range preds {
			pr := &preds[i]
			fmt.Fprintf(tw, "%d\t%d\t%.4f\t%.4f\t%.4f\t%.4f\t\n", i, pr.Class, pr.Confidence, pr.Entropy, pr.ExpectedEntropy, pr.MutualInfo)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

func sqrt32(v float32) float64 { return math.Sqrt(float64(v)) }
