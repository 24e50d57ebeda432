// Package f64 holds the float64 scalar and slice functions the host packages (trainer, benchmarks)
// share. It imports only the standard library, so the device runtime may use it too (it does for
// LogBinomials, the Bernstein flow's coefficients); the runtime's own softplus stays its own, as
// its thresholds follow bayesianize's float32 numerics.
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

// Softplus returns log(1 + eˣ) without overflow, as max(x, 0) + log1p(e^−|x|).
func Softplus(x float64) float64 { return max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }

// Softplus32 returns float32(Softplus(float64(x))) — the same bits for every float32 x, checked
// exhaustively on amd64 (TestSoftplus32 checks a sample on every target) — in about half the
// time where |x| ≥ 7: there
// e^−|x| ≤ 9.2·10⁻⁴, and log1p(e) is its series to e⁵ (the rest is below 2⁻⁵³ of the sum).
func Softplus32(x float32) float32 {
	xf := float64(x)
	a := math.Abs(xf)
	if !(a >= 7) { // NaN too
		return float32(max(xf, 0) + math.Log1p(math.Exp(-a)))
	}
	e := math.Exp(-a)
	// Every product converted explicitly: the compiler must not fuse a multiply and an add
	// (arm64 would), whose single rounding could change a bit of the result.
	p := 0.25 - float64(e*0.2)
	p = 1.0/3 - float64(e*p)
	p = 0.5 - float64(e*p)
	p = 1 - float64(e*p)
	return float32(max(xf, 0) + float64(e*p))
}

// SoftplusSigmoid32 returns Softplus32(x) and Sigmoid(float64(x)) — the same bits as the two
// calls for every float32 x (TestSoftplusSigmoid32) — with one exponential where the two
// calls take two: both are functions of e^−|x| (Sigmoid's exp(−x) for x ≥ 0 and exp(x) for x < 0).
func SoftplusSigmoid32(x float32) (float32, float64) {
	xf := float64(x)
	a := math.Abs(xf)
	if a != a { // NaN: the two calls, whatever NaN they give
		return Softplus32(x), Sigmoid(xf)
	}
	e := math.Exp(-a)
	var sig float64
	if xf >= 0 {
		sig = 1 / (1 + e)
	} else {
		sig = e / (1 + e)
	}
	if !(a >= 7) {
		return float32(max(xf, 0) + math.Log1p(e)), sig
	}
	// Softplus32's series, with its explicit conversions.
	p := 0.25 - float64(e*0.2)
	p = 1.0/3 - float64(e*p)
	p = 0.5 - float64(e*p)
	p = 1 - float64(e*p)
	return float32(max(xf, 0) + float64(e*p)), sig
}

// SoftplusInv returns the inverse of Softplus for y > 0, as y + log(−expm1(−y)), which stays
// finite where log(expm1(y)) overflows (y > 709) and keeps its precision for small y.
func SoftplusInv(y float64) float64 { return y + math.Log(-math.Expm1(-y)) }

// LogBeta returns log B(a, b) = log Γ(a) + log Γ(b) − log Γ(a + b).
func LogBeta(a, b float64) float64 {
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	return la + lb - lab
}

// LogBinomials returns log C(n, i) for i = 0 … n (nil for n < 0): the log binomial coefficients
// of a degree-n Bernstein polynomial.
func LogBinomials(n int) []float64 {
	if n < 0 {
		return nil
	}
	out := make([]float64, n+1)
	ln, _ := math.Lgamma(float64(n + 1))
	for i := 0; i <= n; i++ {
		a, _ := math.Lgamma(float64(i + 1))
		b, _ := math.Lgamma(float64(n - i + 1))
		out[i] = ln - a - b
	}
	return out
}

// From returns v converted to float64.
func From[T ~float32 | ~float64](v []T) []float64 { return Into(nil, v) }

// Into returns v converted to float64 in dst's memory when it has the capacity (a new slice
// otherwise), so a loop converting same-sized vectors allocates once.
func Into[T ~float32 | ~float64](dst []float64, v []T) []float64 {
	if cap(dst) < len(v) {
		dst = make([]float64, len(v))
	}
	dst = dst[:len(v)]
	for i, x := range v {
		dst[i] = float64(x)
	}
	return dst
}

// Dot returns Σ a_i b_i over a (b at least as long), with four partial sums (the order of
// kernels' float32 dot product).
func Dot(a, b []float64) float64 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
