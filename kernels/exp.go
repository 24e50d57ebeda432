package kernels

import (
	"fmt"
	"math"
)

// ExpShift replaces each x[i] by e^(x[i] − shift) and returns Σ e^(x[i] − shift) and
// Σ e^(x[i] − shift)·max(x[i] − shift, −87): the two sums a softmax with its entropy needs, with
// shift the maximum of x (H = log sum − dot/sum). Each exponent must be at most 0 (shift at least
// every x[i]); below −87 the value is 0 (e^−87 ≈ 1.6e-38, the bottom of float32's normal range),
// and the values are within a few float32 ulps of e^(x[i] − shift). A NaN exponent gives NaN
// there and in both sums.
func ExpShift(x []float32, shift float32) (sum, dot float32) { return expShift(x, shift) }

// ExpMax is ExpShift with shift the maximum of x, which it returns as mx: a NaN in x makes mx NaN
// (and every value), a +Inf makes mx +Inf; an empty x gives −Inf, 0, 0. Padding x with −Inf to a
// multiple of four values (which become 0 and add nothing to the sums) lets the assembly versions
// do it in one call.
func ExpMax(x []float32) (mx, sum, dot float32) { return expMax(x) }

// expMaxGeneric is ExpMax in Go: the maximum, then expShiftGeneric.
func expMaxGeneric(x []float32) (mx, sum, dot float32) {
	mx = float32(math.Inf(-1))
	for _, v := range x {
		if v > mx || v != v { // once NaN, mx stays NaN
			mx = v
		}
	}
	sum, dot = expShiftGeneric(x, mx)
	return mx, sum, dot
}

// expShiftMin is the smallest exponent ExpShift evaluates; below it the value is 0.
const expShiftMin = -87

// expShiftGeneric is ExpShift in Go, the twin of the assembly versions: d = x − shift clamped to
// −87, k = round(d·log₂e), r = (d − k·ln2Hi) − k·ln2Lo with ln 2 in two parts (k·ln2Hi is exact
// for |k| ≤ 126), e^r from its degree-7 Taylor polynomial (truncation error below 6e-9 for
// |r| ≤ ln 2 / 2) and 2^k from its bits.
func expShiftGeneric(x []float32, shift float32) (sum, dot float32) {
	const (
		log2e = 1.44269504088896340736
		ln2Hi = 0.693359375
		ln2Lo = -2.12194440054690582e-4
	)
	for i, v := range x {
		d := v - shift
		// max(d, expShiftMin) with NaN staying NaN, written as a comparison: the builtin max is
		// a runtime call on 32-bit ARM (runtime.fmax32, 2.5 % of a local prediction).
		dc := d
		if d < expShiftMin {
			dc = expShiftMin
		}
		// k = round(dc·log₂e) for dc ≤ 0: the conversion truncates the positive 0.5 − dc·log₂e
		// (NaN converts to an unspecified integer; the polynomial is NaN anyway).
		k := -float32(int32(0.5 - dc*log2e))
		r := (dc - k*ln2Hi) - k*ln2Lo
		p := 1 + r*(1+r*(1.0/2+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
		e := p * math.Float32frombits(uint32(int32(k)+127)<<23)
		if d < expShiftMin {
			e = 0
		}
		x[i] = e
		sum += e
		dot += e * dc
	}
	return sum, dot
}

// SoftmaxMoments turns each of rows rows of x (n values each, leading dimension ldx) into its
// softmax in p (leading dimension ldp; p may be x itself with ldp = ldx), as ExpMax then a
// multiplication by 1/Σ e do: sum[r] and dot[r] get row r's two ExpMax sums (its entropy is
// log sum[r] − dot[r]/sum[r]), and the probabilities and their squares are added, row after row,
// to s and s2 (n values each, float64), as AccumulateMoments does. This is a prediction's
// summary of a block of samples of one input in one call. n = 0 sets the sums to 0. It panics
// on negative sizes or slices too short for them.
func SoftmaxMoments(rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	const fn = "kernels.SoftmaxMoments"
	checkMatrix(fn, "x", rows, n, x, ldx)
	checkMatrix(fn, "p", rows, n, p, ldp)
	if len(sum) < rows || len(dot) < rows {
		panic(fmt.Sprintf("%s: sum and dot have %d and %d values, need %d", fn, len(sum), len(dot), rows))
	}
	if len(s) < n || len(s2) < n {
		panic(fmt.Sprintf("%s: s and s2 have %d and %d values, need %d", fn, len(s), len(s2), n))
	}
	if rows == 0 {
		return
	}
	if n == 0 {
		clear(sum[:rows])
		clear(dot[:rows])
		return
	}
	softmaxMoments(rows, n, x, ldx, p, ldp, sum, dot, s, s2)
}

// softmaxMomentsGeneric is SoftmaxMoments in Go, the twin of the assembly version, for rows,
// n ≥ 1: row by row, expMaxGeneric on the row copied to p, then accMomentsGeneric with
// 1/Σ e.
func softmaxMomentsGeneric(rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	softmaxMomentsBy(expMaxGeneric, accMomentsGeneric, rows, n, x, ldx, p, ldp, sum, dot, s, s2)
}

// softmaxMomentsBy is softmaxMomentsGeneric with the row kernels expMax and accMoments given.
func softmaxMomentsBy(expMax func([]float32) (float32, float32, float32), accMoments func([]float32, float32, []float64, []float64),
	rows, n int, x []float32, ldx int, p []float32, ldp int, sum, dot []float32, s, s2 []float64) {
	for r := 0; r < rows; r++ {
		pr := p[r*ldp : r*ldp+n]
		copy(pr, x[r*ldx:r*ldx+n])
		_, sum[r], dot[r] = expMax(pr)
		accMoments(pr, 1/sum[r], s, s2)
	}
}
