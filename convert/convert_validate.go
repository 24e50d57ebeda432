package convert

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/eval"
)

// Metrics are a classifier's scores on a labelled data set.
type Metrics struct {
	// Accuracy is the share of inputs whose most probable class is the label.
	Accuracy float64 `json:"accuracy"`
	// NLL is the mean negative log predictive probability of the label (nats).
	NLL float64 `json:"nll"`
	// ECE is the expected calibration error over eval.ECEBins equal-width bins of the
	// confidence (the largest predictive probability): Σ_b (n_b / N) |accuracy_b − confidence_b|.
	ECE float64 `json:"ece"`
}

// Validation compares the unpruned float32 model with the written file.
type Validation struct {
	Data    string  `json:"data"`
	N       int     `json:"n"`
	Samples int     `json:"samples"`
	F32     Metrics `json:"f32"`
	File    Metrics `json:"file"`
	// MaxProbDiff is the largest |p_file − p_f32| over all inputs and classes (same seed).
	MaxProbDiff float64 `json:"max_prob_diff"`
}

// Score computes Metrics from predictive probabilities (N × classes, row-major) and labels with
// the trainer's metrics (train/eval.Classify), so that convert --validate and eval print the same
// numbers for the same predictions.
func Score(probs []float32, classes int, labels []int) (Metrics, error) {
	c, err := eval.Classify(probs, classes, labels)
	if err != nil {
		return Metrics{}, fmt.Errorf("convert: %w", err)
	}
	return Metrics{Accuracy: c.Accuracy, NLL: c.NLL, ECE: c.ECE}, nil
}

// loadData reads a validation set: "inputs" (N × features, any float type) and "labels" (N).
func loadData(path string, inputSize int) ([]float32, []int, error) {
	f, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("convert: validation data: %w", err)
	}
	it, ok := f.Tensor("inputs")
	if !ok {
		return nil, nil, fmt.Errorf("convert: validation data %s has no tensor \"inputs\"", path)
	}
	lt, ok := f.Tensor("labels")
	if !ok {
		return nil, nil, fmt.Errorf("convert: validation data %s has no tensor \"labels\"", path)
	}
	x, err := it.Float32s()
	if err != nil {
		return nil, nil, fmt.Errorf("convert: validation data %s: inputs: %w", path, err)
	}
	lf, err := lt.Float64s()
	if err != nil {
		return nil, nil, fmt.Errorf("convert: validation data %s: labels: %w", path, err)
	}
	n := len(lf)
	if n == 0 || len(x) != n*inputSize {
		return nil, nil, fmt.Errorf("convert: validation data %s: inputs have %d values, want %d labels × %d features",
			path, len(x), n, inputSize)
	}
	labels := make([]int, n)
	for i, v := range lf {
		if v != math.Trunc(v) || v < 0 || v > 1<<30 {
			return nil, nil, fmt.Errorf("convert: validation data %s: label %d is %v", path, i, v)
		}
		labels[i] = int(v)
	}
	return x, labels, nil
}

// predictProbs runs a predictor over all inputs and returns the predictive probabilities.
func predictProbs(m *runtime.Model, x []float32, n, samples int, seed uint64) ([]float32, error) {
	if m.Task() != runtime.Classification {
		return nil, fmt.Errorf("convert: validation needs a classification model")
	}
	p, err := m.NewPredictor(runtime.Options{Samples: samples, Seed: seed, Strategy: runtime.Weight, MaxBatch: 64})
	if err != nil {
		return nil, err
	}
	out := make([]runtime.Prediction, n)
	if err := p.PredictBatch(x, out); err != nil {
		return nil, err
	}
	c := m.OutputSize()
	probs := make([]float32, 0, n*c)
	for i := range out {
		probs = append(probs, out[i].Probs...)
	}
	return probs, nil
}

// validate scores the unpruned f32 model and the written file (file, as checkWritten loaded
// it) on the validation data.
func validate(m *model, file *runtime.Model, opts Options) (*Validation, error) {
	ref, err := m.runtimeModel(runtime.NewLoadBudget(opts.loadLimits))
	if err != nil {
		return nil, err
	}
	x, labels, err := loadData(opts.Validate, ref.InputSize())
	if err != nil {
		return nil, err
	}
	if file.Preprocessing() != nil {
		// The validation inputs are raw, as predict's, eval's and serve's are: the model's
		// preprocessing applies (skipping it scored a function other than the one deployed, so
		// a wrong --input-scale passed validation).
		norm := make([]float32, len(x))
		if err := file.Normalize(norm, x); err != nil {
			return nil, fmt.Errorf("convert: --validate %s: %w", opts.Validate, err)
		}
		x = norm
	}
	k := opts.ValidateSamples
	if k == 0 {
		k = 64
	}
	v := &Validation{Data: opts.Validate, N: len(labels), Samples: k}
	pa, err := predictProbs(ref, x, len(labels), k, opts.Seed)
	if err != nil {
		return nil, err
	}
	pb, err := predictProbs(file, x, len(labels), k, opts.Seed)
	if err != nil {
		return nil, err
	}
	if v.F32, err = Score(pa, ref.OutputSize(), labels); err != nil {
		return nil, err
	}
	if v.File, err = Score(pb, ref.OutputSize(), labels); err != nil {
		return nil, err
	}
	for i := range pa {
		v.MaxProbDiff = math.Max(v.MaxProbDiff, math.Abs(float64(pa[i])-float64(pb[i])))
	}
	return v, nil
}
