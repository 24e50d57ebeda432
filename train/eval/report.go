package eval

import (
	"fmt"
	"math"

	rt "github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// OODScore is out-of-distribution detection quality for one uncertainty score.
type OODScore struct {
	AUROC float64 `json:"auroc"`
	AUPR  float64 `json:"aupr"`
}

// Report is everything evaluation measures on a test set (and an optional OOD set).
type Report struct {
	Classification *Classification `json:"classification,omitempty"`
	Regression     *Regression     `json:"regression,omitempty"`
	// Reliability holds the ECE bins (for the reliability diagram).
	Reliability []Bin `json:"reliability,omitempty"`
	// Selective holds the accuracy on the SelectiveFractions most certain test inputs, by
	// uncertainty score (maxprob, entropy, mi).
	Selective map[string][]float64 `json:"selective,omitempty"`
	// OOD holds detection quality by uncertainty score (maxprob, entropy, mi).
	OOD map[string]OODScore `json:"ood,omitempty"`
	// MeanMI and MeanEntropy are averages over the test set (and OODMeanMI over the OOD set).
	MeanEntropy float64 `json:"mean_entropy,omitempty"`
	MeanMI      float64 `json:"mean_mi,omitempty"`
	OODMeanMI   float64 `json:"ood_mean_mi,omitempty"`
}

// Scores are the uncertainty scores evaluation reports.
var Scores = []string{"maxprob", "entropy", "mi"}

// Evaluate predicts test (and ood, if not nil) with m and computes a Report.
func Evaluate(m *rt.Model, test, ood *data.Dataset, opt rt.Options) (*Report, error) {
	p, err := Predict(m, test, opt, 0)
	if err != nil {
		return nil, err
	}
	var po *Predictions
	if ood != nil && ood.N > 0 {
		if po, err = Predict(m, ood, opt, 0); err != nil {
			return nil, err
		}
	}
	return FromPredictions(p, test, po)
}

// FromPredictions computes a Report from predictions of test (and of an OOD set, or nil).
func FromPredictions(p *Predictions, test *data.Dataset, ood *Predictions) (*Report, error) {
	r := &Report{}
	if p.Classes == 0 {
		if test.Targets == nil || p.Outputs != test.Outputs {
			return nil, fmt.Errorf("eval: regression predictions for %s, which has no matching targets", test.Name)
		}
		reg, err := Regress(p.Mean, p.Var, test.Targets)
		if err != nil {
			return nil, err
		}
		r.Regression = &reg
		return r, nil
	}
	if test.Labels == nil {
		return nil, fmt.Errorf("eval: classification predictions for %s, which has no labels", test.Name)
	}
	if p.Classes < test.Classes {
		return nil, fmt.Errorf("eval: the model has %d outputs but %s has %d classes", p.Classes, test.Name, test.Classes)
	}
	c, err := Classify(p.Probs, p.Classes, test.Labels)
	if err != nil {
		return nil, err
	}
	r.Classification = &c
	correct := p.Correct(test.Labels)
	_, r.Reliability = ECE(p.Confidence, correct, ECEBins)
	r.Selective = map[string][]float64{}
	for _, s := range Scores {
		u, _ := p.Uncertainty(s)
		r.Selective[s] = Selective(u, correct, SelectiveFractions)
	}
	r.MeanEntropy, r.MeanMI = mean(p.Entropy), mean(p.MutualInfo)
	if ood != nil {
		r.OOD = map[string]OODScore{}
		for _, s := range Scores {
			in, _ := p.Uncertainty(s)
			out, _ := ood.Uncertainty(s)
			r.OOD[s] = OODScore{AUROC: AUROC(in, out), AUPR: AUPR(in, out)}
		}
		r.OODMeanMI = mean(ood.MutualInfo)
	}
	return r, nil
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// Combine averages the predictive distributions of ensemble members (each predicted with one
// deterministic pass, or any number of samples) into one: p̄ = mean of the members' p̄, with
// total entropy H[p̄], expected entropy the mean of the members' entropies and mutual
// information their difference (MATH.md §3 with the members as samples).
func Combine(members []*Predictions) (*Predictions, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("eval: no ensemble members")
	}
	m0 := members[0]
	if m0.Classes == 0 {
		return nil, fmt.Errorf("eval: Combine supports classification only")
	}
	n, c := m0.N, m0.Classes
	out := &Predictions{N: n, Classes: c, Probs: make([]float32, n*c), Class: make([]int, n),
		Confidence: make([]float64, n), Entropy: make([]float64, n), ExpectedEntropy: make([]float64, n),
		MutualInfo: make([]float64, n)}
	k := float64(len(members))
	for _, m := range members {
		if m.N != n || m.Classes != c {
			return nil, fmt.Errorf("eval: ensemble members predict different shapes")
		}
		for i := 0; i < n; i++ {
			out.ExpectedEntropy[i] += m.Entropy[i] / k
			for j := 0; j < c; j++ {
				out.Probs[i*c+j] += m.Probs[i*c+j] / float32(k)
			}
		}
	}
	for i := 0; i < n; i++ {
		p := out.Probs[i*c : (i+1)*c]
		h := 0.0
		best := 0
		for j, v := range p {
			if v > 0 {
				h -= float64(v) * math.Log(float64(v))
			}
			if v > p[best] {
				best = j
			}
		}
		out.Entropy[i] = h
		out.MutualInfo[i] = math.Max(0, h-out.ExpectedEntropy[i])
		out.Class[i], out.Confidence[i] = best, float64(p[best])
	}
	return out, nil
}
