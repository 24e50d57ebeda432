// Package eval computes the trainer's evaluation metrics: accuracy, negative log-likelihood,
// expected calibration error (15 equal-width bins, as bayesianize's calibration.py), Brier
// score, precision, recall, F1 and classification AUROC (paper 000's Table 2; binary or macro),
// out-of-distribution detection (AUROC and AUPR) from any uncertainty score (1 − max
// probability, entropy, mutual information, model disagreement MD²), selective prediction
// (accuracy, F1 and AUROC on the most certain inputs, paper 000's Tables 3, 12 and 13) and
// regression error (RMSE, moment-matched Gaussian NLL and the sampled mixture NLL of paper
// 000's Eq. 57), plus Predict, which runs a runtime.Model over a data set so that evaluation
// uses the deployed inference path.
package eval

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// Classification holds the metrics of probabilistic classifications.
type Classification struct {
	N        int     `json:"n"`
	Accuracy float64 `json:"accuracy"`
	// NLL is the mean −log p̄(y); probabilities are floored at 1e-12.
	NLL float64 `json:"nll"`
	// ECE is the expected calibration error over ECEBins equal-width confidence bins.
	ECE float64 `json:"ece"`
	// Brier is the mean over inputs of Σ_c (p̄_c − 1[y = c])².
	Brier float64 `json:"brier"`
	// Precision, Recall and F1 of the most probable class (paper 000's Table 2), and AUROC of
	// the predictive probabilities as scores of the labels, averaged as Averaging says:
	// "binary" (two classes: of class 1, AUROC of p̄(y = 1)) or "macro" (AverageMacro). AUROC
	// is null in JSON when undefined (one class only).
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	AUROC     Num     `json:"auroc"`
	Averaging string  `json:"averaging"`
}

// ECEBins is the number of confidence bins of ECE (bayesianize's calibration.py uses 15).
const ECEBins = 15

// Bin is one bin of a reliability diagram.
type Bin struct {
	Lo         float64 `json:"lo"` // the bin holds confidences in (Lo, Hi]; the first also 0
	Hi         float64 `json:"hi"`
	Count      int     `json:"count"`
	Confidence float64 `json:"confidence"` // mean confidence of the inputs in the bin
	Accuracy   float64 `json:"accuracy"`   // their accuracy
}

// Classify computes Classification metrics for n inputs with predictive probabilities probs
// (n × classes, row-major) and labels.
func Classify(probs []float32, classes int, labels []int) (Classification, error) {
	n := len(labels)
	if classes < 1 || len(probs) != n*classes {
		return Classification{}, fmt.Errorf("eval: %d probabilities for %d inputs of %d classes", len(probs), n, classes)
	}
	if n == 0 {
		return Classification{}, errors.New("eval: no inputs")
	}
	conf := make([]float64, n)
	correct := make([]bool, n)
	var acc, nll, brier float64
	for i, y := range labels {
		if y < 0 || y >= classes {
			return Classification{}, fmt.Errorf("eval: label %d of input %d outside [0, %d)", y, i, classes)
		}
		p := probs[i*classes : (i+1)*classes]
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
			t := 0.0
			if c == y {
				t = 1
			}
			d := float64(p[c]) - t
			brier += d * d
		}
		conf[i] = float64(p[best])
		correct[i] = best == y
		if correct[i] {
			acc++
		}
		nll -= math.Log(math.Max(float64(p[y]), 1e-12))
	}
	ece, _ := ECE(conf, correct, ECEBins)
	prec, rec, f1, err := PrecisionRecallF1(argmaxRows(probs, classes), labels, classes)
	if err != nil {
		return Classification{}, err
	}
	fn := float64(n)
	return Classification{N: n, Accuracy: acc / fn, NLL: nll / fn, ECE: ece, Brier: brier / fn,
		Precision: prec, Recall: rec, F1: f1, AUROC: Num(ClassAUROC(probs, classes, labels)),
		Averaging: Averaging(classes)}, nil
}

// ECE returns the expected calibration error Σ_b (n_b/n)·|acc_b − conf_b| over bins equal-width
// bins of confidence in [0, 1] (a confidence c falls in bin ⌈c·bins⌉−1, i.e. bins are (lo, hi]
// and 0 goes to the first), and the bins for a reliability diagram.
func ECE(conf []float64, correct []bool, bins int) (float64, []Bin) {
	bs := make([]Bin, bins)
	for b := range bs {
		bs[b].Lo, bs[b].Hi = float64(b)/float64(bins), float64(b+1)/float64(bins)
	}
	for i, c := range conf {
		b := int(math.Ceil(c*float64(bins))) - 1
		b = min(max(b, 0), bins-1)
		bs[b].Count++
		bs[b].Confidence += c
		if correct[i] {
			bs[b].Accuracy++
		}
	}
	ece := 0.0
	for b := range bs {
		if bs[b].Count == 0 {
			continue
		}
		k := float64(bs[b].Count)
		bs[b].Confidence /= k
		bs[b].Accuracy /= k
		ece += k / float64(len(conf)) * math.Abs(bs[b].Accuracy-bs[b].Confidence)
	}
	return ece, bs
}

// score is one detection score; pos marks an out-of-distribution input.
type score struct {
	v   float64
	pos bool
}

// scored lists in's scores (negatives) and out's (positives) together.
func scored(in, out []float64) []score {
	all := make([]score, 0, len(in)+len(out))
	for _, v := range in {
		all = append(all, score{v, false})
	}
	for _, v := range out {
		all = append(all, score{v, true})
	}
	return all
}

// AUROC returns the area under the ROC curve for telling out-of-distribution inputs (positives,
// scores out) from in-distribution ones (scores in), where a higher score means "more likely
// out of distribution": the probability that a random positive scores above a random negative,
// ties counting one half. It is NaN when either set is empty or a score is NaN (no order).
func AUROC(in, out []float64) float64 {
	if len(in) == 0 || len(out) == 0 || hasNaN(in) || hasNaN(out) {
		return math.NaN()
	}
	all := scored(in, out)
	sort.Slice(all, func(i, j int) bool { return all[i].v < all[j].v })
	// Mann–Whitney U with average ranks for ties.
	rankSum := 0.0
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			j++
		}
		avg := float64(i+j+1) / 2 // ranks i+1 .. j
		for k := i; k < j; k++ {
			if all[k].pos {
				rankSum += avg
			}
		}
		i = j
	}
	np, nn := float64(len(out)), float64(len(in))
	return (rankSum - np*(np+1)/2) / (np * nn)
}

// AUPR returns the area under the precision–recall curve with out-of-distribution inputs as
// positives (average precision: Σ over thresholds of (R_k − R_{k−1})·P_k, scores descending,
// tied scores forming one threshold). It is NaN when either set is empty or a score is NaN.
func AUPR(in, out []float64) float64 {
	if len(in) == 0 || len(out) == 0 || hasNaN(in) || hasNaN(out) {
		return math.NaN()
	}
	all := scored(in, out)
	sort.Slice(all, func(i, j int) bool { return all[i].v > all[j].v })
	tp, fp := 0.0, 0.0
	prevR, ap := 0.0, 0.0
	np := float64(len(out))
	for i := 0; i < len(all); {
		j := i
		for j < len(all) && all[j].v == all[i].v {
			if all[j].pos {
				tp++
			} else {
				fp++
			}
			j++
		}
		r := tp / np
		ap += (r - prevR) * tp / (tp + fp)
		prevR = r
		i = j
	}
	return ap
}

// SelectiveFractions are the retained fractions of paper 000's Table 3.
var SelectiveFractions = []float64{0.9, 0.8, 0.7, 0.6, 0.5}

// hasNaN reports whether v holds a NaN: scores with one have no order, and the metrics that
// sort them are NaN.
func hasNaN(v []float64) bool {
	for _, x := range v {
		if x != x {
			return true
		}
	}
	return false
}

// Selective returns, for each fraction f, the accuracy on the ⌈f·n⌉ inputs with the lowest
// uncertainty (ties broken by input order); NaN for every fraction when there are no inputs or
// an uncertainty is NaN (as SelectiveBy).
func Selective(uncertainty []float64, correct []bool, fractions []float64) []float64 {
	n := len(uncertainty)
	if n == 0 || hasNaN(uncertainty) {
		return nanSlice(len(fractions))
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return uncertainty[idx[a]] < uncertainty[idx[b]] })
	out := make([]float64, len(fractions))
	for k, f := range fractions {
		m := int(math.Ceil(f * float64(n)))
		m = min(max(m, 1), n)
		c := 0
		for _, i := range idx[:m] {
			if correct[i] {
				c++
			}
		}
		out[k] = float64(c) / float64(m)
	}
	return out
}

// Regression holds regression metrics.
type Regression struct {
	N int `json:"n"`
	// RMSE is the root mean squared error of the mean prediction (1/L) Σ_l f(x; θ_l) (paper
	// 000's Eq. 58), over every target value.
	RMSE float64 `json:"rmse"`
	// NLL is the mean moment-matched Gaussian negative log-likelihood of the target values under
	// N(mean, var), var the predictive variance (epistemic variance of the samples + noise).
	NLL float64 `json:"nll"`
	// MixtureNLL is the sampled predictive negative log-likelihood of paper 000's Eq. 57,
	// −Σ_i log((1/L) Σ_l N(y_i; f(x_i; θ_l), β⁻¹ I)) / (N · outputs), β⁻¹ the model's noise
	// variance and L = MixtureSamples: the negative log density of the mixture of the L samples'
	// Gaussians rather than of one Gaussian matched to its moments, per target value as NLL
	// (with several outputs each input's term is the joint density of its outputs). Absent when
	// the per-sample outputs were not kept.
	MixtureNLL *float64 `json:"mixture_nll,omitempty"`
	// MixtureSamples is L, the number of posterior samples per input (with adaptive sampling,
	// the largest; every input's term uses its own).
	MixtureSamples int `json:"mixture_samples,omitempty"`
}

// Regress computes Regression metrics from predictive means and variances.
func Regress(mean, variance, targets []float32) (Regression, error) {
	n := len(targets)
	if len(mean) != n || len(variance) != n || n == 0 {
		return Regression{}, fmt.Errorf("eval: %d means, %d variances, %d targets", len(mean), len(variance), n)
	}
	var se, nll float64
	for i := range targets {
		d := float64(targets[i]) - float64(mean[i])
		v := math.Max(float64(variance[i]), 1e-12)
		se += d * d
		nll += 0.5 * (math.Log(2*math.Pi*v) + d*d/v)
	}
	return Regression{N: n, RMSE: math.Sqrt(se / float64(n)), NLL: nll / float64(n)}, nil
}

// MeanSE returns the mean of x and its standard error, the sample standard deviation (n − 1 in
// the denominator) over √n — how every table of repeated runs reports "mean ± standard error".
// One value has standard error 0; no values give NaN for both.
func MeanSE(x []float64) (mean, se float64) {
	if len(x) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	if len(x) < 2 {
		return mean, 0
	}
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	return mean, math.Sqrt(ss / float64(len(x)-1) / float64(len(x)))
}

// FormatMeanSE formats x as a cell of a table of repeated runs: the mean in verb (a fmt verb such
// as "%.2f"), then " ± " and the standard error in verb when x has two or more values; "—" when
// it has none.
func FormatMeanSE(x []float64, verb string) string {
	if len(x) == 0 {
		return "—"
	}
	mean, se := MeanSE(x)
	if len(x) == 1 {
		return fmt.Sprintf(verb, mean)
	}
	return fmt.Sprintf(verb+" ± "+verb, mean, se)
}
