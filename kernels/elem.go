package kernels

import "math"

// MulAdd computes dst[i] = a[i] + x[i]·y[i] for i < len(dst) (a, x and y at least as long; dst
// may be a). Where the build has an assembly version the product and sum are one fused
// multiply-add.
func MulAdd(dst, a, x, y []float32) {
	if len(dst) == 0 {
		return
	}
	_, _, _ = a[len(dst)-1], x[len(dst)-1], y[len(dst)-1]
	mulAdd(dst, a, x, y)
}

// mulAddGeneric is MulAdd in Go, the twin of the assembly versions.
func mulAddGeneric(dst, a, x, y []float32) {
	a, x, y = a[:len(dst)], x[:len(dst)], y[:len(dst)]
	for i := range dst {
		dst[i] = a[i] + x[i]*y[i]
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
