package kernels

import "math"

// ReLU computes x = max(x, 0) in place (NaN stays NaN).
func ReLU(x []float32) { relu(x) }

// reluGeneric is ReLU in Go, the twin of the assembly versions.
func reluGeneric(x []float32) {
	if !branchFreeMax {
		for i, v := range x {
			if v < 0 {
				x[i] = 0
			}
		}
		return
	}
	for i, v := range x {
		// Branch-free where max is an instruction: the signs of activations are close to
		// random, and a mispredicted branch per element costs more than the select.
		x[i] = max(v, 0)
	}
}

// Tanh computes x = tanh(x) in place.
func Tanh(x []float32) {
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v)))
	}
}

// Sigmoid computes x = 1/(1+exp(−x)) in place, without overflow for large |x|.
func Sigmoid(x []float32) {
	for i, v := range x {
		x[i] = sigmoid(float64(v))
	}
}

// sigmoid evaluates the logistic function in the branch that never overflows.
func sigmoid(v float64) float32 {
	if v >= 0 {
		return float32(1 / (1 + math.Exp(-v)))
	}
	e := math.Exp(v)
	return float32(e / (1 + e))
}

// GELU computes x = x·Φ(x) in place, the exact erf form used by torch.nn.GELU()
// (x/2·(1+erf(x/√2)), evaluated as x/2·erfc(−x/√2) to stay accurate for negative x).
func GELU(x []float32) {
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * math.Erfc(-f*(1/math.Sqrt2)))
	}
}

// Softmax writes softmax(x) into dst (len(dst) must equal len(x); dst may alias x), subtracting
// the maximum first so that large inputs cannot overflow. As in PyTorch, an input whose maximum is
// ±Inf or NaN yields NaNs. It panics if the lengths differ.
func Softmax(dst, x []float32) {
	if len(dst) != len(x) {
		panic("kernels.Softmax: len(dst) != len(x)")
	}
	if len(x) == 0 {
		return
	}
	mx := maxOf(x)
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v) - mx)
		dst[i] = float32(e)
		sum += e
	}
	inv := 1 / sum
	for i := range dst {
		dst[i] = float32(float64(dst[i]) * inv)
	}
}

// LogSoftmax writes log(softmax(x)) into dst (len(dst) must equal len(x); dst may alias x) and
// returns logsumexp(x), computed stably around the maximum. An empty x returns −Inf. It panics if
// the lengths differ.
func LogSoftmax(dst, x []float32) float32 {
	if len(dst) != len(x) {
		panic("kernels.LogSoftmax: len(dst) != len(x)")
	}
	if len(x) == 0 {
		return float32(math.Inf(-1))
	}
	mx := maxOf(x)
	var sum float64
	for _, v := range x {
		sum += math.Exp(float64(v) - mx)
	}
	lse := mx + math.Log(sum)
	for i, v := range x {
		dst[i] = float32(float64(v) - lse)
	}
	return float32(lse)
}

// maxOf returns the maximum of a non-empty x as float64 (NaN if any element is NaN).
func maxOf(x []float32) float64 {
	mx := x[0]
	for _, v := range x[1:] {
		if v > mx || v != v {
			mx = v
		}
	}
	return float64(mx)
}
