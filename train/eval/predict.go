package eval

import (
	"fmt"
	"math"
	"runtime"
	"sync"

	rt "github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// Predictions are a model's predictive summaries for every input of a data set.
type Predictions struct {
	N int
	// Classification: Probs (N × Classes), and per input the predicted class, its probability,
	// total entropy, expected entropy and mutual information (MATH.md §3).
	Classes                              int
	Probs                                []float32
	Class                                []int
	Confidence                           []float64
	Entropy, ExpectedEntropy, MutualInfo []float64
	// MD2 is, per input, paper 000's model-disagreement score (App. F, Eq. 60), the variance of
	// the class probabilities over the samples summed over the classes,
	// Σ_c (1/S) Σ_s (p_c(θ_s) − p̄_c)² (population variance, 1/S), i.e. Σ_c Std_c² of
	// runtime.Prediction. Nil when not computed (Uncertainty then refuses "md2").
	MD2 []float64
	// Regression: predictive mean, total and epistemic variance (N × Outputs).
	Outputs                 int
	Mean, Var, EpistemicVar []float32
	// NoiseVar is the model's noise variance β⁻¹ (runtime.Spec.NoiseVar).
	NoiseVar float64
	// LogLik is, per input, the sampled predictive log-likelihood of its targets (MixtureLogLik,
	// paper 000's Eq. 57) over the prediction's samples; nil when the data set has no targets.
	LogLik []float64
	// Samples is the number of posterior samples each prediction used (fewer than
	// Options.Samples with Options.Adaptive), Act whether the policy acts on it.
	Samples []int
	Act     []bool
}

// Evaluation's memory per input: BytesPerOutput for each of the model's outputs (Predict's
// float32 summaries — classification: Probs; regression: Mean, Var and EpistemicVar — and a
// copy of a row's values as the metrics work on them) and BytesPerInput for the per-input
// scores (class, confidence, entropies, MD², samples, …).
const (
	BytesPerOutput = 16
	BytesPerInput  = 96
)

// MemoryNeed returns about how many bytes Predict and the report's metrics hold for n inputs of
// a model with outputs outputs, or −1 when that overflows an int64.
func MemoryNeed(n, outputs int) int64 {
	if n < 0 || outputs < 0 {
		return -1
	}
	per := int64(outputs)
	if per > (math.MaxInt64-BytesPerInput)/BytesPerOutput {
		return -1
	}
	per = per*BytesPerOutput + BytesPerInput
	if n > 0 && per > math.MaxInt64/int64(n) {
		return -1
	}
	return int64(n) * per
}

// CheckMemory refuses, before anything is allocated, an evaluation of n inputs (what names them)
// by a model with outputs outputs whose predictions would not fit in limit bytes (MemoryNeed):
// every input's prediction holds a value per output, so 40 000 test rows of a CSV with 200 000
// class names asked for 32 GB.
func CheckMemory(what string, n, outputs int, limit int64) error {
	if need := MemoryNeed(n, outputs); need >= 0 && need <= limit {
		return nil
	}
	need := float64(n) * (float64(outputs)*BytesPerOutput + BytesPerInput)
	return fmt.Errorf("eval: %s: predicting %d inputs × %d outputs holds about %.1f GiB, above the memory available (%.1f GiB): evaluate fewer inputs (--test-limit) or a model with fewer outputs",
		what, n, outputs, need/(1<<30), float64(limit)/(1<<30))
}

// memoryLimit is the budget Predict checks CheckMemory against (a variable for tests).
var memoryLimit = rt.DefaultMaxMemory

// Predict runs m over every input of d with the given predictor options, splitting the data
// over workers goroutines (≤ 0: GOMAXPROCS), each with its own Predictor, once CheckMemory has
// found that the predictions fit in the machine's memory. When the model records an input
// transformation (Model.Preprocessing), d's values are taken back to the values stored in its
// file (dividing by d.Scale, which its loader applied) and transformed as the model says, so
// that a model whose preprocessing differs from the loader's still gets the inputs it expects.
func Predict(m *rt.Model, d *data.Dataset, opt rt.Options, workers int) (*Predictions, error) {
	if m.InputSize() != d.Dim {
		return nil, fmt.Errorf("eval: model takes %d inputs, data set %s has %d", m.InputSize(), d.Name, d.Dim)
	}
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	if opt.MaxBatch <= 0 {
		opt.MaxBatch = 64
	}
	out := m.OutputSize()
	if err := CheckMemory(d.Name, d.N, out, memoryLimit()); err != nil {
		return nil, err
	}
	p := &Predictions{N: d.N}
	if m.Task() == rt.Classification {
		p.Classes = out
		p.Probs = make([]float32, d.N*out)
		p.Class = make([]int, d.N)
		p.Confidence = make([]float64, d.N)
		p.Entropy = make([]float64, d.N)
		p.ExpectedEntropy = make([]float64, d.N)
		p.MutualInfo = make([]float64, d.N)
		p.MD2 = make([]float64, d.N)
	} else {
		p.Outputs = out
		p.Mean = make([]float32, d.N*out)
		p.Var = make([]float32, d.N*out)
		p.EpistemicVar = make([]float32, d.N*out)
		p.NoiseVar = m.Spec().NoiseVar
		if d.Targets != nil && len(d.Targets) == d.N*out {
			// The mixture log-likelihood needs every sample's outputs.
			opt.KeepSamples = true
			p.LogLik = make([]float64, d.N)
		}
	}
	p.Samples, p.Act = make([]int, d.N), make([]bool, d.N)
	rawScale := float32(1)
	if d.Scale != 0 {
		rawScale = float32(1 / d.Scale)
	}
	pre := m.Preprocessing() != nil
	norm := m // the model whose Normalize turns d's values back into network inputs
	if pp := m.Preprocessing(); pp != nil && pp.Layout == rt.LayoutHWC {
		// d holds channel-major inputs (as every loader makes them): keep the scale and
		// statistics, drop the reordering.
		pp.Layout = rt.LayoutCHW
		var err error
		if norm, err = m.WithDeployment(pp, nil); err != nil {
			return nil, err
		}
	}
	chunk := (d.N + workers - 1) / workers
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		lo, hi := w*chunk, min((w+1)*chunk, d.N)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func(w, lo, hi int) {
			defer wg.Done()
			opt := opt
			// NewPredictor warms up on a full batch: no larger than this worker's share.
			opt.MaxBatch = min(opt.MaxBatch, hi-lo)
			pr, err := m.NewPredictor(opt)
			if err != nil {
				errs[w] = err
				return
			}
			preds := make([]rt.Prediction, opt.MaxBatch)
			var buf []float32
			if pre {
				buf = make([]float32, opt.MaxBatch*d.Dim)
			}
			for s := lo; s < hi; s += opt.MaxBatch {
				e := min(s+opt.MaxBatch, hi)
				x := d.X[s*d.Dim : e*d.Dim]
				if pre {
					raw := buf[:len(x)]
					for i, v := range x {
						raw[i] = v * rawScale
					}
					if err := norm.Normalize(raw, raw); err != nil {
						errs[w] = fmt.Errorf("eval: inputs %d–%d of %s: %w", s, e-1, d.Name, err)
						return
					}
					x = raw
				}
				if err := pr.PredictBatch(x, preds[:e-s]); err != nil {
					errs[w] = fmt.Errorf("eval: inputs %d–%d of %s: %w", s, e-1, d.Name, err)
					return
				}
				for i := s; i < e; i++ {
					q := &preds[i-s]
					p.Samples[i], p.Act[i] = q.Samples, q.Decision.Act
					if p.Classes > 0 {
						copy(p.Probs[i*out:(i+1)*out], q.Probs)
						p.Class[i], p.Confidence[i] = q.Class, float64(q.Confidence)
						p.Entropy[i], p.ExpectedEntropy[i], p.MutualInfo[i] = q.Entropy, q.ExpectedEntropy, q.MutualInfo
						md := 0.0
						for _, sd := range q.Std {
							md += float64(sd) * float64(sd)
						}
						p.MD2[i] = md
					} else {
						copy(p.Mean[i*out:(i+1)*out], q.Mean)
						copy(p.Var[i*out:(i+1)*out], q.Var)
						copy(p.EpistemicVar[i*out:(i+1)*out], q.EpistemicVar)
						if p.LogLik != nil {
							ll, err := MixtureLogLik(q.Outputs, d.Targets[i*out:(i+1)*out], p.NoiseVar)
							if err != nil {
								errs[w] = fmt.Errorf("eval: input %d of %s: mixture log-likelihood: %w", i, d.Name, err)
								return
							}
							p.LogLik[i] = ll
						}
					}
				}
			}
		}(w, lo, hi)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Correct reports, per input, whether the predicted class equals the label.
func (p *Predictions) Correct(labels []int) []bool {
	out := make([]bool, len(labels))
	for i, y := range labels {
		out[i] = i < len(p.Class) && p.Class[i] == y
	}
	return out
}

// Uncertainty returns a per-input uncertainty score by name: "maxprob" (1 − max probability),
// "entropy" (total predictive entropy), "mi" (mutual information) or "md2" (model
// disagreement, MD2).
func (p *Predictions) Uncertainty(score string) ([]float64, error) {
	out := make([]float64, p.N)
	switch score {
	case "maxprob":
		for i, c := range p.Confidence {
			out[i] = 1 - c
		}
	case "entropy":
		copy(out, p.Entropy)
	case "mi":
		copy(out, p.MutualInfo)
	case "md2":
		if len(p.MD2) != p.N {
			return nil, fmt.Errorf("eval: uncertainty score md2: the predictions carry no model-disagreement scores")
		}
		copy(out, p.MD2)
	default:
		return nil, fmt.Errorf("eval: uncertainty score %q is not maxprob, entropy, mi or md2", score)
	}
	return out, nil
}
