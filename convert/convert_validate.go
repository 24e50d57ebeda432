package convert

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// ECEBins is the number of equal-width confidence bins of the expected calibration error.
const ECEBins = 15

// Metrics are a classifier's scores on a labelled data set.
type Metrics struct {
	// Accuracy is the share of inputs whose most probable class is the label.
	Accuracy float64 `json:"accuracy"`
	// NLL is the mean negative log predictive probability of the label (nats).
	NLL float64 `json:"nll"`
	// ECE is the expected calibration error over ECEBins equal-width bins of the confidence
	// (the largest predictive probability): Σ_b (n_b / N) |accuracy_b − confidence_b|.
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

// Score computes Metrics from predictive probabilities (N × classes, row-major) and labels.
func Score(probs []float32, classes int, labels []int) (Metrics, error) {
	n := len(labels)
	if classes < 1 || len(probs) != n*classes {
		return Metrics{}, fmt.Errorf("convert: %d probabilities for %d inputs × %d classes", len(probs), n, classes)
	}
	if n == 0 {
		return Metrics{}, fmt.Errorf("convert: no inputs to score")
	}
	var correct int
	var nll float64
	var binN [ECEBins]int
	var binAcc, binConf [ECEBins]float64
	for i, y := range labels {
		if y < 0 || y >= classes {
			return Metrics{}, fmt.Errorf("convert: label %d of input %d is not a class index (0 to %d)", y, i, classes-1)
		}
		p := probs[i*classes : (i+1)*classes]
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
		}
		hit := 0.0
		if best == y {
			correct++
			hit = 1
		}
		nll -= math.Log(math.Max(float64(p[y]), 1e-12))
		conf := float64(p[best])
		b := min(int(conf*ECEBins), ECEBins-1)
		b = max(b, 0)
		binN[b]++
		binAcc[b] += hit
		binConf[b] += conf
	}
	m := Metrics{Accuracy: float64(correct) / float64(n), NLL: nll / float64(n)}
	for b := 0; b < ECEBins; b++ {
		if binN[b] > 0 {
			m.ECE += math.Abs(binAcc[b]-binConf[b]) / float64(n)
		}
	}
	return m, nil
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

// validate scores the unpruned f32 model and the written file on the validation data.
func validate(m *model, opts Options) (*Validation, error) {
	ref, err := m.runtimeModel()
	if err != nil {
		return nil, err
	}
	ff, err := format.Open(opts.Out)
	if err != nil {
		return nil, fmt.Errorf("convert: opening the written file: %w", err)
	}
	defer ff.Close()
	file, err := runtime.FromFile(ff)
	if err != nil {
		return nil, fmt.Errorf("convert: loading the written file: %w", err)
	}
	x, labels, err := loadData(opts.Validate, ref.InputSize())
	if err != nil {
		return nil, err
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
