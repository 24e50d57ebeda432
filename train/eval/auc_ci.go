package eval

import (
	"math"
	"sort"
)

// AUROCInterval returns the AUROC of scores out (positives) against in (negatives), as AUROC,
// with DeLong's two-sided confidence interval at level (e.g. 0.95): the variance is DeLong,
// DeLong & Clarke-Pearson's (1988) from the structural components V₁₀(x_i) = P(x_i > Y) for each
// positive and V₀₁(y_j) = P(X > y_j) for each negative (ties counting one half),
// Var = s²(V₁₀)/m + s²(V₀₁)/n, and the interval is AUROC ± z·√Var clipped to [0, 1]. It returns
// NaNs when either set is empty, a score is NaN or level is not in (0, 1).
func AUROCInterval(in, out []float64, level float64) (auc, lo, hi float64) {
	m, n := len(out), len(in)
	if m == 0 || n == 0 || !(level > 0 && level < 1) || hasNaN(in) || hasNaN(out) {
		return math.NaN(), math.NaN(), math.NaN()
	}
	// Mid-ranks within the pooled set and within each group give the structural components:
	// V₁₀(x_i) = (R_pooled(x_i) − R_pos(x_i)) / n, V₀₁(y_j) = 1 − (R_pooled(y_j) − R_neg(y_j)) / m.
	pooled := append(append([]float64(nil), out...), in...)
	rp := midRanks(pooled)
	rpos, rneg := midRanks(out), midRanks(in)
	v10 := make([]float64, m)
	for i := range out {
		v10[i] = (rp[i] - rpos[i]) / float64(n)
	}
	v01 := make([]float64, n)
	for j := range in {
		v01[j] = 1 - (rp[m+j]-rneg[j])/float64(m)
	}
	auc = mean(v10)
	v := 0.0
	if m > 1 {
		v += variance(v10) / float64(m)
	}
	if n > 1 {
		v += variance(v01) / float64(n)
	}
	z := normalQuantile(0.5 + level/2)
	h := z * math.Sqrt(v)
	return auc, math.Max(0, auc-h), math.Min(1, auc+h)
}

// midRanks returns the 1-based ranks of v, ties sharing their mean rank.
func midRanks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for i := 0; i < len(idx); {
		j := i + 1 // at least one, so that a NaN (never equal to itself) cannot stall the loop
		for j < len(idx) && v[idx[j]] == v[idx[i]] {
			j++
		}
		for k := i; k < j; k++ {
			r[idx[k]] = float64(i+j+1) / 2
		}
		i = j
	}
	return r
}

// variance is the sample variance (n − 1 in the denominator).
func variance(v []float64) float64 {
	m := mean(v)
	s := 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return s / float64(len(v)-1)
}

// normalQuantile is Φ⁻¹(p) for p in (0, 1).
func normalQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }
