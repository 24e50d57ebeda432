// Package f64 holds the float64 scalar and slice functions the host packages (trainer, benchmarks)
// share. The device runtime keeps its own: it imports only the standard library and the card's
// modules.
package f64

import "math"

// Sigmoid returns 1/(1 + e^−x) without overflow.
func Sigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// LogBeta returns log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b).
func LogBeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// From returns v converted to float64.
func From[T ~float32 | ~float64](v []T) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}
