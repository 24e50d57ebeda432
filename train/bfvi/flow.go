package bfvi

import (
	"errors"
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// MaxDegree is the largest Bernstein degree NewFlow accepts.
const MaxDegree = 1000

// ErrOutsideSupport is returned by Flow.Inverse for a θ outside the (bounded) support of q.
var ErrOutsideSupport = errors.New("outside the support of the flow")

// ErrParamRange is wrapped by Flow.SetParams's errors for parameters that are not finite or
// whose scales a₁ = softplus(a₁′), a₂ = softplus(a₂′) underflow to 0 (a₁′ or a₂′ below about
// −745): what a learning rate too large for the flows leaves after an update.
var ErrParamRange = errors.New("flow parameters out of range")

// NumFlowParams returns the length of a degree-M flow's parameter vector, M + 5:
// (a₁′, b₁, ϑ₀, δ₁, …, δ_M, a₂′, b₂).
func NumFlowParams(m int) int { return m + 5 }

// Flow is a 1-D Bernstein flow of degree M (see the package documentation for the map).
// A Flow caches values derived from its parameters, so it is not safe for concurrent use;
// Clone it for other goroutines.
type Flow struct {
	m      int
	p      []float64 // raw parameters, length m+5
	lbM    []float64 // log C(M, i)
	lbM1   []float64 // log C(M−1, i)
	lbM2   []float64 // log C(M−2, i) (nil for M = 1)
	logM   float64
	mm1    float64 // M(M−1)
	a1     float64
	logA1  float64
	sA1A1  float64 // σ(a₁′)/a₁ = d log a₁ / d a₁′
	sA1    float64 // σ(a₁′) = d a₁ / d a₁′
	a2     float64
	logA2  float64
	sA2A2  float64
	sA2    float64
	delta  []float64 // Δ_j = softplus(δ_j), j = 1..M at index j−1
	logDel []float64 // log Δ_j
	sDel   []float64 // σ(δ_j)
	logSD  []float64 // log σ(δ_j)
	thetaM float64   // ϑ_M
}

// FlowParamsLinear returns parameters of a degree-M flow whose map is θ = lo + (hi − lo)·σ(z):
// a₁ = a₂ = 1, b₁ = b₂ = 0 and equally spaced coefficients from ϑ₀ = lo to ϑ_M = hi (a Bernstein
// polynomial with equally spaced coefficients is linear). It is the default initialisation.
func FlowParamsLinear(m int, lo, hi float64) ([]float64, error) {
	if m < 1 || m > MaxDegree {
		return nil, fmt.Errorf("bfvi: flow degree %d out of range [1, %d]", m, MaxDegree)
	}
	if !(hi > lo) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return nil, fmt.Errorf("bfvi: flow initial range (%g, %g) must be finite and increasing", lo, hi)
	}
	p := make([]float64, NumFlowParams(m))
	one := f64.SoftplusInv(1)
	d := f64.SoftplusInv((hi - lo) / float64(m))
	if math.IsInf(d, 0) || math.IsNaN(d) {
		return nil, fmt.Errorf("bfvi: flow initial range (%g, %g) too narrow for degree %d", lo, hi, m)
	}
	p[0], p[1], p[2] = one, 0, lo
	for j := 1; j <= m; j++ {
		p[2+j] = d
	}
	p[m+3], p[m+4] = one, 0
	return p, nil
}

// NewFlow returns a degree-m flow with the given raw parameters (copied; length NumFlowParams(m),
// all finite).
func NewFlow(m int, params []float64) (*Flow, error) {
	if m < 1 || m > MaxDegree {
		return nil, fmt.Errorf("bfvi: flow degree %d out of range [1, %d]", m, MaxDegree)
	}
	f := &Flow{m: m, p: make([]float64, NumFlowParams(m)),
		lbM: f64.LogBinomials(m), lbM1: f64.LogBinomials(m - 1), lbM2: f64.LogBinomials(m - 2),
		logM: math.Log(float64(m)), mm1: float64(m) * float64(m-1),
		delta: make([]float64, m), logDel: make([]float64, m), sDel: make([]float64, m),
		logSD: make([]float64, m)}
	if err := f.SetParams(params); err != nil {
		return nil, err
	}
	return f, nil
}

// Degree returns M.
func (f *Flow) Degree() int { return f.m }

// NumParams returns M + 5.
func (f *Flow) NumParams() int { return len(f.p) }

// Params returns a copy of the raw parameters.
func (f *Flow) Params() []float64 { return append([]float64(nil), f.p...) }

// Clone returns an independent copy.
func (f *Flow) Clone() Marginal {
	g, _ := NewFlow(f.m, f.p) // f's parameters were validated already
	return g
}

// SetParams replaces the raw parameters (length NumParams, all finite) and refreshes the cache.
func (f *Flow) SetParams(p []float64) error {
	if len(p) != len(f.p) {
		return fmt.Errorf("bfvi: degree-%d flow needs %d parameters, got %d", f.m, len(f.p), len(p))
	}
	if !allFinite(p) {
		return fmt.Errorf("bfvi: %w: not finite", ErrParamRange)
	}
	m := f.m
	a1, a2 := f64.Softplus(p[0]), f64.Softplus(p[m+3])
	if !(a1 > 0) || !(a2 > 0) {
		return fmt.Errorf("bfvi: %w: scale parameters a₁′ = %g, a₂′ = %g underflow", ErrParamRange, p[0], p[m+3])
	}
	copy(f.p, p)
	f.a1, f.logA1, f.sA1 = a1, logSoftplus(p[0]), f64.Sigmoid(p[0])
	f.sA1A1 = math.Exp(-f64.Softplus(-p[0]) - f.logA1)
	f.a2, f.logA2, f.sA2 = a2, logSoftplus(p[m+3]), f64.Sigmoid(p[m+3])
	f.sA2A2 = math.Exp(-f64.Softplus(-p[m+3]) - f.logA2)
	th := p[2]
	for j := 0; j < m; j++ {
		d := p[3+j]
		f.delta[j] = f64.Softplus(d)
		f.logDel[j] = logSoftplus(d)
		f.sDel[j] = f64.Sigmoid(d)
		f.logSD[j] = -f64.Softplus(-d)
		th += f.delta[j]
	}
	f.thetaM = th
	return nil
}

// Coefficients returns ϑ₀, …, ϑ_M.
func (f *Flow) Coefficients() []float64 {
	out := make([]float64, f.m+1)
	out[0] = f.p[2]
	for j := 1; j <= f.m; j++ {
		out[j] = out[j-1] + f.delta[j-1]
	}
	return out
}

// Support returns the open interval (a₂ϑ₀ − b₂, a₂ϑ_M − b₂) outside which q(θ) = 0.
func (f *Flow) Support() (lo, hi float64) {
	b2 := f.p[f.m+4]
	return f.a2*f.p[2] - b2, f.a2*f.thetaM - b2
}

// Forward returns θ(z).
func (f *Flow) Forward(z float64) float64 {
	th, _ := f.Eval(z, nil, nil)
	return th
}

// LogQ returns log q(θ(z)) = log N(z) − log|dθ/dz| for the sample θ(z).
func (f *Flow) LogQ(z float64) float64 {
	_, ld := f.Eval(z, nil, nil)
	return logNormal01(z) - ld
}

// poly returns z₃ = B(σ(z₁)) and log(dz₃/dz₁) = log B′(t) + log t + log(1−t).
func (f *Flow) poly(z1 float64) (z3, logSlope float64) {
	m := f.m
	lt, l1t := -f64.Softplus(-z1), -f64.Softplus(z1)
	tail := 0.0
	for i := m; i >= 1; i-- {
		tail += math.Exp(f.lbM[i] + float64(i)*lt + float64(m-i)*l1t)
		z3 += f.delta[i-1] * tail
	}
	z3 += f.p[2]
	return z3, f.logBPrime(lt, l1t) + lt + l1t
}

// logBPrime returns log B′(t) = log M + logsumexp_i (log Δ_{i+1} + log Be_{i,M−1}(t)).
func (f *Flow) logBPrime(lt, l1t float64) float64 {
	m := f.m
	mx, s := math.Inf(-1), 0.0
	for i := 0; i < m; i++ {
		u := f.logDel[i] + f.lbM1[i] + float64(i)*lt + float64(m-1-i)*l1t
		if u > mx {
			s = s*math.Exp(mx-u) + 1
			mx = u
		} else {
			s += math.Exp(u - mx)
		}
	}
	return f.logM + mx + math.Log(s)
}

// Eval returns θ(z) and log|dθ/dz| at a base sample z. If dTheta is non-nil it receives
// ∂θ/∂λ, and if dLogDet is non-nil it receives ∂log|dθ/dz|/∂λ, both at fixed z over the raw
// parameters λ = (a₁′, b₁, ϑ₀, δ₁…δ_M, a₂′, b₂); each must then have length ≥ NumParams
// (otherwise Eval returns NaN, NaN). With t = z₂, B′ as in the package doc and T_j = Σ_{i≥j} Be_{i,M}(t):
//
//	∂θ/∂a₁′ = a₂B′t(1−t)·z·σ(a₁′)   ∂θ/∂b₁ = −a₂B′t(1−t)   ∂θ/∂ϑ₀ = a₂
//	∂θ/∂δ_j = a₂·σ(δ_j)·T_j          ∂θ/∂a₂′ = σ(a₂′)·z₃      ∂θ/∂b₂ = −1
//
// and with L = log a₂ + log B′(t) + log t + log(1−t) + log a₁,
// ∂L/∂z₁ = t(1−t)·B″(t)/B′(t) + 1 − 2t, B″(t) = M(M−1) Σ_{i=0..M−2} (Δ_{i+2} − Δ_{i+1}) Be_{i,M−2}(t):
//
//	∂L/∂a₁′ = ∂L/∂z₁·z·σ(a₁′) + σ(a₁′)/a₁   ∂L/∂b₁ = −∂L/∂z₁   ∂L/∂ϑ₀ = 0
//	∂L/∂δ_j = M·σ(δ_j)·Be_{j−1,M−1}(t)/B′(t) ∂L/∂a₂′ = σ(a₂′)/a₂   ∂L/∂b₂ = 0.
//
// The gradient of log q(θ(z)) at fixed z is −∂L/∂λ.
func (f *Flow) Eval(z float64, dTheta, dLogDet []float64) (theta, logDet float64) {
	n := len(f.p)
	if (dTheta != nil && len(dTheta) < n) || (dLogDet != nil && len(dLogDet) < n) {
		return math.NaN(), math.NaN()
	}
	m := f.m
	z1 := f.a1*z - f.p[1]
	lt, l1t := -f64.Softplus(-z1), -f64.Softplus(z1)
	tail, z3 := 0.0, 0.0
	for i := m; i >= 1; i-- {
		tail += math.Exp(f.lbM[i] + float64(i)*lt + float64(m-i)*l1t)
		z3 += f.delta[i-1] * tail
		if dTheta != nil {
			dTheta[2+i] = f.a2 * f.sDel[i-1] * tail
		}
	}
	z3 += f.p[2]
	theta = f.a2*z3 - f.p[m+4]
	lbp := f.logBPrime(lt, l1t)
	logDet = f.logA2 + lbp + lt + l1t + f.logA1
	if dTheta != nil {
		g1 := f.a2 * math.Exp(lbp+lt+l1t) // dθ/dz₁
		dTheta[0] = g1 * z * f.sA1
		dTheta[1] = -g1
		dTheta[2] = f.a2
		dTheta[m+3] = f.sA2 * z3
		dTheta[m+4] = -1
	}
	if dLogDet != nil {
		for j := 1; j <= m; j++ {
			dLogDet[2+j] = math.Exp(f.logM + f.lbM1[j-1] + float64(j-1)*lt + float64(m-j)*l1t - lbp + f.logSD[j-1])
		}
		r := 0.0
		for i := 0; i <= m-2; i++ {
			w := math.Exp(f.lbM2[i] + float64(i+1)*lt + float64(m-1-i)*l1t - lbp)
			r += (f.delta[i+1] - f.delta[i]) * w
		}
		dz1 := f.mm1*r + f64.Sigmoid(-z1) - f64.Sigmoid(z1)
		dLogDet[0] = dz1*z*f.sA1 + f.sA1A1
		dLogDet[1] = -dz1
		dLogDet[2] = 0
		dLogDet[m+3] = f.sA2A2
		dLogDet[m+4] = 0
	}
	return theta, logDet
}

// Inverse returns the base value z with θ(z) = theta. It inverts the affine steps exactly and
// solves B(σ(z₁)) = z₃ for z₁ by safeguarded Newton iteration inside a bisection bracket (the map
// is strictly increasing). It returns an error wrapping ErrOutsideSupport for θ outside Support
// and an error for non-finite θ or when θ is so close to the edge of the support that z₁ would
// exceed ±745 (where σ(z₁) underflows).
func (f *Flow) Inverse(theta float64) (float64, error) {
	if math.IsNaN(theta) || math.IsInf(theta, 0) {
		return 0, fmt.Errorf("bfvi: inverse of non-finite θ = %g", theta)
	}
	m := f.m
	z3 := (theta + f.p[m+4]) / f.a2
	if !(z3 > f.p[2] && z3 < f.thetaM) {
		lo, hi := f.Support()
		return 0, fmt.Errorf("bfvi: inverse of θ = %g: %w (%g, %g)", theta, ErrOutsideSupport, lo, hi)
	}
	const limit = 745.0
	lo, hi := -1.0, 1.0
	for {
		if v, _ := f.poly(lo); v < z3 {
			break
		}
		if lo <= -limit {
			return 0, fmt.Errorf("bfvi: inverse of θ = %g: too close to the lower end of the support", theta)
		}
		hi = lo
		lo = math.Max(2*lo, -limit)
	}
	for {
		if v, _ := f.poly(hi); v > z3 {
			break
		}
		if hi >= limit {
			return 0, fmt.Errorf("bfvi: inverse of θ = %g: too close to the upper end of the support", theta)
		}
		lo = hi
		hi = math.Min(2*hi, limit)
	}
	x := 0.5 * (lo + hi)
	for iter := 0; iter < 200; iter++ {
		v, ls := f.poly(x)
		r := v - z3
		if r == 0 {
			break
		}
		if r < 0 {
			lo = x
		} else {
			hi = x
		}
		nx := x - r/math.Exp(ls)
		if !(nx > lo && nx < hi) {
			nx = 0.5 * (lo + hi)
		}
		if math.Abs(nx-x) <= 1e-14*math.Max(1, math.Abs(x)) || hi-lo <= 1e-14*math.Max(1, math.Abs(x)) {
			x = nx
			break
		}
		x = nx
	}
	return (x + f.p[1]) / f.a1, nil
}

// LogDensity returns log q(θ); it is −Inf outside the support.
func (f *Flow) LogDensity(theta float64) float64 {
	if math.IsNaN(theta) {
		return math.NaN()
	}
	z, err := f.Inverse(theta)
	if err != nil {
		// Outside the support, or so close to its edge that z would be beyond ±745/a₁, where
		// q has decayed like N(z)·exp(−a₁|z|) to far below the smallest float64.
		return math.Inf(-1)
	}
	_, ld := f.Eval(z, nil, nil)
	return logNormal01(z) - ld
}

// Density returns q(θ).
func (f *Flow) Density(theta float64) float64 { return math.Exp(f.LogDensity(theta)) }
