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
	// uncertainty score (Scores: maxprob, entropy, mi, md2).
	Selective map[string][]float64 `json:"selective,omitempty"`
	// SelectiveFractions are the retained fractions of the Selective* lists.
	SelectiveFractions []float64 `json:"selective_fractions,omitempty"`
	// SelectiveF1 and SelectiveAUROC are the F1 score and the classification AUROC (averaged as
	// Classification.Averaging) on the same most certain inputs, by uncertainty score (paper
	// 000's Tables 12 and 13); an AUROC is null where the retained inputs hold one class only.
	SelectiveF1    map[string][]float64 `json:"selective_f1,omitempty"`
	SelectiveAUROC map[string][]Num     `json:"selective_auroc,omitempty"`
	// OOD holds detection quality by uncertainty score (maxprob, entropy, mi, md2).
	OOD map[string]OODScore `json:"ood,omitempty"`
	// MeanMI and MeanEntropy are averages over the test set (and OODMeanMI over the OOD set);
	// nil where not computed (a regression report, no OOD set), so that a 0 — a deterministic
	// classifier's mutual information — is still written.
	MeanEntropy *float64 `json:"mean_entropy,omitempty"`
	MeanMI      *float64 `json:"mean_mi,omitempty"`
	OODMeanMI   *float64 `json:"ood_mean_mi,omitempty"`
	// MeanMD2 and OODMeanMD2 average the model-disagreement score (Predictions.MD2) over the
	// test and the OOD set.
	MeanMD2    *float64 `json:"mean_md2,omitempty"`
	OODMeanMD2 *float64 `json:"ood_mean_md2,omitempty"`
	// Definitions says in words what the report's metrics are (Describe fills it in; the
	// trainer's per-epoch reports leave it out).
	Definitions map[string]string `json:"definitions,omitempty"`
}

// Scores are the uncertainty scores evaluation reports: 1 − max probability, predictive
// entropy, mutual information and model disagreement (MD², paper 000's Eq. 60).
var Scores = []string{"maxprob", "entropy", "mi", "md2"}

// Describe sets r.Definitions to the definitions of the metrics r holds.
func (r *Report) Describe() {
	d := map[string]string{}
	if c := r.Classification; c != nil {
		d["nll"] = "mean −log p̄(y), p̄ the mean over samples of the class probabilities (floored at 1e-12)"
		d["ece"] = fmt.Sprintf("expected calibration error over %d equal-width confidence bins", ECEBins)
		avg := "macro averages over the classes among the labels or predictions (F1: mean of the per-class F1); AUROC: mean of the one-vs-rest AUROCs of p̄_c over the classes with positives and negatives"
		if c.Averaging == AverageBinary {
			avg = "of the positive class 1; AUROC: of p̄(y = 1) as the score of class 1"
		}
		d["precision/recall/f1/auroc"] = "of the most probable class (paper 000 Table 2), " + avg
		d["scores"] = "uncertainty scores: maxprob = 1 − max_c p̄_c; entropy = H[p̄]; mi = H[p̄] − mean_s H[p_s] (mutual information); md2 = Σ_c (1/S) Σ_s (p_c(θ_s) − p̄_c)² (model disagreement, paper 000 Eq. 60, population variance over the S samples)"
		d["selective"] = "accuracy on the most certain fraction (selective_fractions) of the test inputs by each score, ties by input order"
		d["selective_f1/selective_auroc"] = "F1 and AUROC (as above) on the same most certain inputs (paper 000 Tables 12–13); null where they hold one class only"
		if r.OOD != nil {
			d["ood"] = "detection of the OOD inputs as positives by each score: AUROC and AUPR (average precision)"
		}
	}
	if g := r.Regression; g != nil {
		d["rmse"] = "root mean squared error of the mean prediction (1/L) Σ_l f(x; θ_l) (paper 000 Eq. 58)"
		d["nll"] = "moment-matched Gaussian NLL: mean −log N(y; mean, epistemic variance + noise variance) per target value"
		if g.MixtureNLL != nil {
			d["mixture_nll"] = fmt.Sprintf("sampled predictive NLL of paper 000 Eq. 57: mean −log((1/L) Σ_l N(y; f(x; θ_l), β⁻¹)) with L = mixture_samples = %d and β⁻¹ the model's noise variance, by log-sum-exp, per target value", g.MixtureSamples)
		}
	}
	r.Definitions = d
}

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
		if len(p.LogLik) == p.N && p.N > 0 {
			ll := 0.0
			for _, v := range p.LogLik {
				ll += v
			}
			nll := -ll / float64(p.N*p.Outputs)
			reg.MixtureNLL = &nll
			reg.MixtureSamples = 0
			for _, k := range p.Samples {
				reg.MixtureSamples = max(reg.MixtureSamples, k)
			}
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
	r.SelectiveF1 = map[string][]float64{}
	r.SelectiveAUROC = map[string][]Num{}
	r.SelectiveFractions = append([]float64(nil), SelectiveFractions...)
	for _, s := range Scores {
		u, err := p.Uncertainty(s)
		if err != nil {
			continue // a score these predictions lack (md2 of hand-made predictions)
		}
		r.Selective[s] = Selective(u, correct, SelectiveFractions)
		r.SelectiveF1[s] = SelectiveF1(u, p.Probs, p.Classes, test.Labels, SelectiveFractions)
		r.SelectiveAUROC[s] = nums(SelectiveAUROC(u, p.Probs, p.Classes, test.Labels, SelectiveFractions))
	}
	r.MeanEntropy, r.MeanMI = ptr(mean(p.Entropy)), ptr(mean(p.MutualInfo))
	if len(p.MD2) == p.N {
		r.MeanMD2 = ptr(mean(p.MD2))
	}
	if ood != nil {
		r.OOD = map[string]OODScore{}
		for _, s := range Scores {
			in, err := p.Uncertainty(s)
			if err != nil {
				continue
			}
			out, err := ood.Uncertainty(s)
			if err != nil {
				continue
			}
			r.OOD[s] = OODScore{AUROC: AUROC(in, out), AUPR: AUPR(in, out)}
		}
		r.OODMeanMI = ptr(mean(ood.MutualInfo))
		if len(ood.MD2) == ood.N {
			r.OODMeanMD2 = ptr(mean(ood.MD2))
		}
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
	withinMD2 := true
	for _, m := range members {
		if m.N != n || m.Classes != c {
			return nil, fmt.Errorf("eval: ensemble members predict different shapes")
		}
		withinMD2 = withinMD2 && len(m.MD2) == n
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
	// MD²: the spread of the members' probabilities about p̄, plus the mean of the members'
	// own MD² when every member has one (the law of total variance: exact for members with as
	// many samples each).
	out.MD2 = make([]float64, n)
	for _, m := range members {
		for i := 0; i < n; i++ {
			s := 0.0
			if withinMD2 {
				s = m.MD2[i]
			}
			for j := 0; j < c; j++ {
				d := float64(m.Probs[i*c+j]) - float64(out.Probs[i*c+j])
				s += d * d
			}
			out.MD2[i] += s / k
		}
	}
	return out, nil
}

// ptr returns a pointer to a copy of v.
func ptr(v float64) *float64 { return &v }
