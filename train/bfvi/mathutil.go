package bfvi

import (
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

const (
	log2Pi     = 1.8378770664093453 // log(2π)
	halfLog2Pi = 0.9189385332046727 // ½·log(2π)
)

// logSoftplus returns log(softplus(x)), accurate for very negative x where softplus underflows.
func logSoftplus(x float64) float64 {
	if x < -30 {
		// softplus(x) = eˣ(1 − eˣ/2 + …); the correction is below 1e-13 relative.
		return x - math.Exp(x)/2
	}
	return math.Log(f64.Softplus(x))
}

// logNormal01 is the standard normal log density.
func logNormal01(z float64) float64 { return -0.5*z*z - halfLog2Pi }

// logNormal is the N(mu, sd²) log density.
func logNormal(x, mu, sd float64) float64 {
	d := (x - mu) / sd
	return -0.5*d*d - math.Log(sd) - halfLog2Pi
}

func allFinite(x []float64) bool {
	for _, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// simpsonWeight is composite Simpson's rule's weight (before h/3) of node i of 0..n, n even:
// 1 at the ends, 4 at odd nodes, 2 at the other even ones.
func simpsonWeight(i, n int) float64 {
	switch {
	case i == 0 || i == n:
		return 1
	case i%2 == 1:
		return 4
	}
	return 2
}

// logPriorGrad is Σ_j log N(x_j; 0, sd²), the independent Gaussian prior; when grad is not nil
// it sets grad[j] = −x_j/sd², the prior's gradient.
func logPriorGrad(x, grad []float64, sd float64) float64 {
	v := sd * sd
	lp := 0.0
	for j, w := range x {
		lp += logNormal(w, 0, sd)
		if grad != nil {
			grad[j] = -w / v
		}
	}
	return lp
}
