package kernels

import (
	"fmt"
	"math"
)

// MulAddRows computes dst[r*ldd+i] = a[r*lda+i] + x[r*ldx+i]·y[r*ldy+i] for r < rows and i < n:
// rows of matrices, any of lda, ldx and ldy 0 for one row used by every row. Where the build has
// an assembly version the product and sum are one fused multiply-add. A row of dst may be a row of
// a at the same position (dst = a, ldd = lda); ldd must be at least n (or rows at most 1). It panics
// on negative sizes or slices too short.
func MulAddRows(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	if rows < 0 || n < 0 || lda < 0 || ldx < 0 || ldy < 0 || (rows > 1 && ldd < n) {
		panic(fmt.Sprintf("kernels.MulAddRows: rows=%d n=%d lda=%d ldx=%d ldy=%d ldd=%d", rows, n, lda, ldx, ldy, ldd))
	}
	if rows == 0 || n == 0 {
		return
	}
	last := n - 1
	_, _, _, _ = a[(rows-1)*lda+last], x[(rows-1)*ldx+last], y[(rows-1)*ldy+last], dst[(rows-1)*ldd+last]
	mulAddRows(rows, n, a, lda, x, ldx, y, ldy, dst, ldd)
}

// mulAddRowsGeneric is MulAddRows (without its checks) in Go, the twin of the assembly versions.
func mulAddRowsGeneric(rows, n int, a []float32, lda int, x []float32, ldx int, y []float32, ldy int, dst []float32, ldd int) {
	for r := 0; r < rows; r++ {
		d := dst[r*ldd : r*ldd+n]
		ar, xr, yr := a[r*lda:r*lda+n], x[r*ldx:r*ldx+n], y[r*ldy:r*ldy+n]
		for i := range d {
			d[i] = ar[i] + xr[i]*yr[i]
		}
	}
}

// Mul computes dst[i] = x[i]·y[i] for i < len(dst) (x and y at least as long; dst may be x or y).
func Mul(dst, x, y []float32) {
	if len(dst) == 0 {
		return
	}
	_, _ = x[len(dst)-1], y[len(dst)-1]
	mul(dst, x, y)
}

// mulGeneric is Mul in Go, the twin of the assembly versions.
func mulGeneric(dst, x, y []float32) {
	x, y = x[:len(dst)], y[:len(dst)]
	for i := range dst {
		dst[i] = x[i] * y[i]
	}
}

// SqrtPos computes x[i] = √max(x[i], 0) in place, correctly rounded (NaN stays NaN): the square
// root of a value that rounding may have left slightly negative.
func SqrtPos(x []float32) { sqrtPos(x) }

// sqrtPosGeneric is SqrtPos in Go, the twin of the assembly versions (float64's square root
// rounded to float32 is float32's correctly rounded one).
func sqrtPosGeneric(x []float32) {
	for i, v := range x {
		x[i] = float32(math.Sqrt(float64(max(v, 0))))
	}
}

// AccumulateMoments multiplies x by scale in place and adds the products to s and their squares
// to s2 in float64: x[i] *= scale, s[i] += x[i], s2[i] += x[i]² for i < len(x) (s and s2 at
// least as long) — a sample's probabilities normalised and added to the running sums of p and
// p². The results are the same bits as those of the plain loop (x[i]² is exact in float64).
func AccumulateMoments(x []float32, scale float32, s, s2 []float64) {
	if len(x) == 0 {
		return
	}
	_, _ = s[len(x)-1], s2[len(x)-1]
	accMoments(x, scale, s, s2)
}

// accMomentsGeneric is AccumulateMoments in Go, the twin of the assembly versions.
func accMomentsGeneric(x []float32, scale float32, s, s2 []float64) {
	s, s2 = s[:len(x)], s2[:len(x)]
	for i, v := range x {
		q := v * scale
		x[i] = q
		qv := float64(q)
		s[i] += qv
		s2[i] += qv * qv
	}
}
