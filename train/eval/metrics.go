package eval

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
)

// Num is a metric value that may be undefined — an AUROC of a set holding one class only — as
// NaN. It encodes NaN and infinities as JSON null (encoding/json refuses them) and decodes null
// as NaN.
type Num float64

// MarshalJSON encodes x as a JSON number, or null when it is NaN or infinite.
func (x Num) MarshalJSON() ([]byte, error) {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON decodes a JSON number, or null as NaN.
func (x *Num) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*x = Num(math.NaN())
		return nil
	}
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("eval: metric value %s: %w", b, err)
	}
	*x = Num(f)
	return nil
}

// How precision, recall, F1 and the classification AUROC are averaged (Classification.Averaging).
const (
	// AverageBinary: two classes; the metrics are those of the positive class 1, and the AUROC
	// ranks the inputs by p̄(y = 1).
	AverageBinary = "binary"
	// AverageMacro: more classes; precision, recall and F1 are unweighted means over the classes
	// that occur among the labels or the predictions (scikit-learn's average="macro"; F1 is the
	// mean of the per-class F1, not the F1 of the mean precision and recall), and the AUROC is
	// the unweighted mean of the one-vs-rest AUROCs of p̄_c over the classes c for which the set
	// holds both inputs of class c and others (scikit-learn's multi_class="ovr", average="macro").
	AverageMacro = "macro"
)

// Averaging returns AverageBinary for two classes and AverageMacro otherwise.
func Averaging(classes int) string {
	if classes == 2 {
		return AverageBinary
	}
	return AverageMacro
}

// argmaxRows returns, for each row of probs (rows × classes), the index of its largest value, the
// first on ties (as Classify's accuracy counts).
func argmaxRows(probs []float32, classes int) []int {
	n := len(probs) / classes
	out := make([]int, n)
	for i := range out {
		p := probs[i*classes : (i+1)*classes]
		best := 0
		for c := range p {
			if p[c] > p[best] {
				best = c
			}
		}
		out[i] = best
	}
	return out
}

// PrecisionRecallF1 returns the precision, recall and F1 score of the predicted classes pred
// against labels (both in [0, classes)), averaged as Averaging(classes) says: for two classes
// those of class 1, else their macro averages. A precision or recall whose denominator is 0
// (a class never predicted, or absent from the labels) counts as 0, as does F1 when precision
// and recall are both 0 (scikit-learn's zero_division=0).
func PrecisionRecallF1(pred, labels []int, classes int) (precision, recall, f1 float64, err error) {
	if len(pred) != len(labels) {
		return 0, 0, 0, fmt.Errorf("eval: %d predictions for %d labels", len(pred), len(labels))
	}
	if len(labels) == 0 {
		return 0, 0, 0, fmt.Errorf("eval: precision and recall of no inputs")
	}
	tp := make([]float64, classes)
	fp := make([]float64, classes)
	fn := make([]float64, classes)
	for i, y := range labels {
		p := pred[i]
		if y < 0 || y >= classes || p < 0 || p >= classes {
			return 0, 0, 0, fmt.Errorf("eval: input %d: label %d, prediction %d outside [0, %d)", i, y, p, classes)
		}
		if p == y {
			tp[y]++
		} else {
			fp[p]++
			fn[y]++
		}
	}
	prf := func(c int) (p, r, f float64) {
		if d := tp[c] + fp[c]; d > 0 {
			p = tp[c] / d
		}
		if d := tp[c] + fn[c]; d > 0 {
			r = tp[c] / d
		}
		if p+r > 0 {
			f = 2 * p * r / (p + r)
		}
		return p, r, f
	}
	if classes == 2 {
		p, r, f := prf(1)
		return p, r, f, nil
	}
	k := 0.0
	for c := 0; c < classes; c++ {
		if tp[c]+fp[c]+fn[c] == 0 {
			continue // neither a label nor a prediction
		}
		p, r, f := prf(c)
		precision, recall, f1 = precision+p, recall+r, f1+f
		k++
	}
	return precision / k, recall / k, f1 / k, nil
}

// ClassAUROC returns the area under the ROC curve of the predictive probabilities probs
// (n × classes) as scores of the labels: for two classes that of p̄(y = 1) with class 1 the
// positives; for more, the macro average of the one-vs-rest AUROCs (AverageMacro). It is NaN
// when no class has both positives and negatives among the labels.
func ClassAUROC(probs []float32, classes int, labels []int) float64 {
	if classes < 1 || len(probs) != len(labels)*classes {
		return math.NaN()
	}
	return classAUROCRows(probs, classes, labels, nil)
}

// classAUROCRows is ClassAUROC of the rows rows of probs (n × classes) and labels (nil: every
// row), read in place: the selective metrics call it on many subsets, which as copies held
// rows × classes values each.
func classAUROCRows(probs []float32, classes int, labels []int, rows []int) float64 {
	n := len(labels)
	if rows != nil {
		n = len(rows)
	}
	row := func(k int) int {
		if rows == nil {
			return k
		}
		return rows[k]
	}
	// A class no row (or every row) has is NaN without a pass over the rows.
	count := make([]int, classes)
	for k := 0; k < n; k++ {
		if y := labels[row(k)]; y >= 0 && y < classes {
			count[y]++
		}
	}
	neg, pos := make([]float64, 0, n), make([]float64, 0, n)
	auc := func(c int) float64 {
		if count[c] == 0 || count[c] == n {
			return math.NaN() // AUROC(neg, pos) with no positives or no negatives
		}
		neg, pos = neg[:0], pos[:0]
		for k := 0; k < n; k++ {
			i := row(k)
			if v := float64(probs[i*classes+c]); labels[i] == c {
				pos = append(pos, v)
			} else {
				neg = append(neg, v)
			}
		}
		return AUROC(neg, pos)
	}
	if classes == 2 {
		return auc(1)
	}
	sum, k := 0.0, 0.0
	for c := 0; c < classes; c++ {
		if a := auc(c); !math.IsNaN(a) {
			sum += a
			k++
		}
	}
	if k == 0 {
		return math.NaN()
	}
	return sum / k
}

// MixtureLogLik returns paper 000's sampled predictive log-likelihood of a regression target
// (App. E, Eq. 57), log((1/L) Σ_l N(y; f_l, v·I)), for the L = len(f)/len(y) per-sample outputs
// f (L × len(y), row-major, as runtime.Prediction.Outputs) and noise variance v = β⁻¹. The sum
// is taken in the log domain (log-sum-exp about the largest term), so that it stays finite when
// every density underflows.
func MixtureLogLik(f, y []float32, noiseVar float64) (float64, error) {
	J := len(y)
	if J == 0 || len(f) == 0 || len(f)%J != 0 {
		return 0, fmt.Errorf("eval: %d sample outputs for %d targets", len(f), J)
	}
	if !(noiseVar > 0) || math.IsInf(noiseVar, 0) {
		return 0, fmt.Errorf("eval: noise variance %g is not positive and finite", noiseVar)
	}
	L := len(f) / J
	c := -0.5 * float64(J) * math.Log(2*math.Pi*noiseVar)
	lp := make([]float64, L)
	best := math.Inf(-1)
	for l := range lp {
		ss := 0.0
		for j, t := range y {
			d := float64(t) - float64(f[l*J+j])
			ss += d * d
		}
		lp[l] = c - ss/(2*noiseVar)
		best = math.Max(best, lp[l])
	}
	if math.IsInf(best, 0) || math.IsNaN(best) {
		return best, nil
	}
	sum := 0.0
	for _, v := range lp {
		sum += math.Exp(v - best)
	}
	return best + math.Log(sum) - math.Log(float64(L)), nil
}

// SelectiveBy returns, for each fraction f, metric(idx) where idx holds the indices of the
// ⌈f·n⌉ inputs (at least one) with the lowest uncertainty, ties broken by input order — the
// selective-prediction protocol of Selective with any metric. It is NaN for every fraction when
// there are no inputs or an uncertainty is NaN.
func SelectiveBy(uncertainty []float64, fractions []float64, metric func(idx []int) float64) []float64 {
	n := len(uncertainty)
	out := make([]float64, len(fractions))
	if n == 0 || hasNaN(uncertainty) {
		for k := range out {
			out[k] = math.NaN()
		}
		return out
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return uncertainty[idx[a]] < uncertainty[idx[b]] })
	for k, f := range fractions {
		m := min(max(int(math.Ceil(f*float64(n))), 1), n)
		out[k] = metric(idx[:m])
	}
	return out
}

// pick returns v[idx] (labels or predicted classes of a subset of the inputs).
func pick(v []int, idx []int) []int {
	out := make([]int, len(idx))
	for k, i := range idx {
		out[k] = v[i]
	}
	return out
}

// SelectiveF1 returns the F1 score (PrecisionRecallF1, predictions the most probable classes) on
// the most certain fractions of the inputs by uncertainty (paper 000's Table 12).
func SelectiveF1(uncertainty []float64, probs []float32, classes int, labels []int, fractions []float64) []float64 {
	if classes < 1 || len(probs) != len(labels)*classes || len(uncertainty) > len(labels) {
		return nanSlice(len(fractions))
	}
	pred := argmaxRows(probs, classes)
	return SelectiveBy(uncertainty, fractions, func(idx []int) float64 {
		_, _, f1, err := PrecisionRecallF1(pick(pred, idx), pick(labels, idx), classes)
		if err != nil {
			return math.NaN()
		}
		return f1
	})
}

// SelectiveAUROC returns the classification AUROC (ClassAUROC) on the most certain fractions of
// the inputs by uncertainty (paper 000's Table 13); NaN where the subset holds one class only.
func SelectiveAUROC(uncertainty []float64, probs []float32, classes int, labels []int, fractions []float64) []float64 {
	if classes < 1 || len(probs) != len(labels)*classes || len(uncertainty) > len(labels) {
		return nanSlice(len(fractions))
	}
	return SelectiveBy(uncertainty, fractions, func(idx []int) float64 {
		return classAUROCRows(probs, classes, labels, idx)
	})
}

// nanSlice returns n NaNs.
func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for k := range out {
		out[k] = math.NaN()
	}
	return out
}

// nums converts v to Nums.
func nums(v []float64) []Num {
	out := make([]Num, len(v))
	for i, x := range v {
		out[i] = Num(x)
	}
	return out
}
