package bfvi

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// Model is a statistical model written as a log-joint over unconstrained parameters x ∈ R^Dim.
type Model interface {
	// Dim returns the number of unconstrained parameters.
	Dim() int
	// LogJoint returns log p(y, x), including every normalising constant and the log-Jacobian
	// of the transforms from x to the constrained parameters, and, if grad is non-nil, writes
	// ∂/∂x into grad. x (and grad) must have length Dim; otherwise LogJoint returns NaN.
	LogJoint(x, grad []float64) float64
}

// Constrained is optionally implemented by models with named or constrained parameters.
type Constrained interface {
	// Names returns one name per constrained parameter, e.g. "tau".
	Names() []string
	// Constrain writes the constrained parameters (e.g. τ = softplus(x₁)) into out; both have
	// length Dim.
	Constrain(x, out []float64)
}

// Bernoulli is y_i ~ Bernoulli(π), π ~ Beta(α, β), with x = logit π (π = σ(x)).
type Bernoulli struct {
	n, s        int // observations and successes
	alpha, beta float64
	lbeta       float64
}

// NewBernoulli returns the Bernoulli model for observations y (each 0 or 1) and a Beta(alpha,
// beta) prior (alpha, beta > 0).
func NewBernoulli(y []int, alpha, beta float64) (*Bernoulli, error) {
	if !(alpha > 0) || !(beta > 0) || math.IsInf(alpha, 0) || math.IsInf(beta, 0) {
		return nil, fmt.Errorf("bfvi: Bernoulli prior Beta(%g, %g) needs positive finite parameters", alpha, beta)
	}
	s := 0
	for i, v := range y {
		if v != 0 && v != 1 {
			return nil, fmt.Errorf("bfvi: Bernoulli observation %d is %d, not 0 or 1", i, v)
		}
		s += v
	}
	return &Bernoulli{n: len(y), s: s, alpha: alpha, beta: beta, lbeta: f64.LogBeta(alpha, beta)}, nil
}

// PaperBernoulli is paper 002's Bernoulli experiment: y = (1, 1), prior Beta(1.1, 1.1); its
// posterior is Beta(3.1, 1.1).
func PaperBernoulli() *Bernoulli {
	m, _ := NewBernoulli([]int{1, 1}, 1.1, 1.1)
	return m
}

// Dim returns 1.
func (m *Bernoulli) Dim() int { return 1 }

// Names returns ["pi"].
func (m *Bernoulli) Names() []string { return []string{"pi"} }

// Constrain writes π = σ(x).
func (m *Bernoulli) Constrain(x, out []float64) { out[0] = f64.Sigmoid(x[0]) }

// PosteriorParams returns the conjugate posterior Beta(α + Σy, β + n − Σy).
func (m *Bernoulli) PosteriorParams() (a, b float64) {
	return m.alpha + float64(m.s), m.beta + float64(m.n-m.s)
}

// LogJoint implements Model: A·log π + B·log(1 − π) − log B(α, β) with A = α + Σy and
// B = β + n − Σy (the Jacobian π(1 − π) of x ↦ π adds one to each exponent).
func (m *Bernoulli) LogJoint(x, grad []float64) float64 {
	if len(x) != 1 || (grad != nil && len(grad) != 1) {
		return math.NaN()
	}
	a, b := m.PosteriorParams()
	lp, l1p := -f64.Softplus(-x[0]), -f64.Softplus(x[0])
	if grad != nil {
		grad[0] = a*f64.Sigmoid(-x[0]) - b*f64.Sigmoid(x[0])
	}
	return a*lp + b*l1p - m.lbeta
}

// LogPosterior returns the exact normalised log posterior density of x = logit π:
// log Beta(σ(x); a, b) + log σ(x) + log(1 − σ(x)).
func (m *Bernoulli) LogPosterior(x float64) float64 {
	a, b := m.PosteriorParams()
	return a*(-f64.Softplus(-x)) + b*(-f64.Softplus(x)) - f64.LogBeta(a, b)
}

// CauchyLocation is y_i ~ Cauchy(ξ, γ) with known γ and ξ ~ N(0, 1) (paper 002, Listing 1); x = ξ.
type CauchyLocation struct {
	y     []float64
	gamma float64
}

// paperCauchyData are the six draws from the equal mixture of Cauchy(−2.5, 0.5) and
// Cauchy(2.5, 0.5) published in paper 002 (appendix B-B2; drawn by the reference notebook with
// TensorFlow seed 2). With them the log evidence is −21.43069 (paper, eq. S11).
var paperCauchyData = [6]float64{1.2083935, -2.7329216, 4.1769943, 1.9710574, -4.2004027, -2.384988}

// NewCauchyLocation returns the model for data y (finite) and scale gamma > 0.
func NewCauchyLocation(y []float64, gamma float64) (*CauchyLocation, error) {
	if !(gamma > 0) || math.IsInf(gamma, 0) {
		return nil, fmt.Errorf("bfvi: Cauchy scale %g must be positive and finite", gamma)
	}
	if !allFinite(y) {
		return nil, fmt.Errorf("bfvi: Cauchy data must be finite")
	}
	return &CauchyLocation{y: append([]float64(nil), y...), gamma: gamma}, nil
}

// PaperCauchy is paper 002's Cauchy experiment: γ = 0.5 and the six published draws
// y = 1.2083935, −2.7329216, 4.1769943, 1.9710574, −4.2004027, −2.384988 (log evidence −21.43069).
func PaperCauchy() *CauchyLocation {
	m, _ := NewCauchyLocation(paperCauchyData[:], 0.5)
	return m
}

// Dim returns 1.
func (m *CauchyLocation) Dim() int { return 1 }

// Names returns ["xi"].
func (m *CauchyLocation) Names() []string { return []string{"xi"} }

// Constrain copies x.
func (m *CauchyLocation) Constrain(x, out []float64) { out[0] = x[0] }

// LogJoint implements Model.
func (m *CauchyLocation) LogJoint(x, grad []float64) float64 {
	if len(x) != 1 || (grad != nil && len(grad) != 1) {
		return math.NaN()
	}
	xi := x[0]
	lp := logNormal01(xi)
	g := -xi
	c := -math.Log(math.Pi * m.gamma)
	for _, y := range m.y {
		u := (y - xi) / m.gamma
		lp += c - math.Log1p(u*u)
		g += 2 * u / m.gamma / (1 + u*u)
	}
	if grad != nil {
		grad[0] = g
	}
	return lp
}

// LinReg is the toy linear regression of paper 002 (Listing 2): y ~ N(μ₀ + β₁x₁ + β₂x₂, σ),
// μ₀, β₁, β₂ ~ N(0, 10²), σ ~ LogNormal(0.5, 1), with x = (μ₀, β₁, β₂, ρ), σ = softplus(ρ).
type LinReg struct {
	x1, x2, y []float64
	// ReferenceSigma uses the paper's reference script's target instead
	// (tensorchiefs/bfvi R/runs/regression_2D/multidimensional_script.R): the log-normal prior
	// density of σ = softplus(ρ) taken as a density in ρ, without the Jacobian log σ′(ρ) — not
	// the posterior of the model in ρ.
	ReferenceSigma bool
}

// paperLinRegX and paperLinRegY are the six points of paper 002, appendix B-C2 (R, set.seed(42)).
var (
	paperLinRegX = [6][2]float64{
		{1.3709584, 1.48475156}, {-0.5646982, -1.42449894}, {0.3631284, 0.10432308},
		{0.6328626, 0.27923186}, {0.4042683, 0.09138635}, {-0.1061245, -0.53519391}}
	paperLinRegY = [6]float64{-1.46778013, -0.09421285, -0.41162052, -0.31177232, -0.52569912, -1.22375575}
)

// NewLinReg returns the model for predictors x (n×2) and responses y (length n ≥ 1, finite).
func NewLinReg(x [][2]float64, y []float64) (*LinReg, error) {
	if len(x) != len(y) || len(y) == 0 {
		return nil, fmt.Errorf("bfvi: linear regression has %d predictor rows and %d responses", len(x), len(y))
	}
	m := &LinReg{}
	for i := range x {
		m.x1 = append(m.x1, x[i][0])
		m.x2 = append(m.x2, x[i][1])
	}
	m.y = append([]float64(nil), y...)
	if !allFinite(m.x1) || !allFinite(m.x2) || !allFinite(m.y) {
		return nil, fmt.Errorf("bfvi: linear regression data must be finite")
	}
	return m, nil
}

// PaperLinReg is paper 002's toy regression on its six published points (appendix B-C2).
func PaperLinReg() *LinReg {
	m, _ := NewLinReg(paperLinRegX[:], paperLinRegY[:])
	return m
}

// PaperLinRegData returns copies of paper 002's six points: the predictors x₁, x₂ and responses y.
func PaperLinRegData() (x1, x2, y []float64) {
	for i, x := range paperLinRegX {
		x1 = append(x1, x[0])
		x2 = append(x2, x[1])
		y = append(y, paperLinRegY[i])
	}
	return x1, x2, y
}

// Dim returns 4.
func (m *LinReg) Dim() int { return 4 }

// Names returns ["mu0", "beta1", "beta2", "sigma"].
func (m *LinReg) Names() []string { return []string{"mu0", "beta1", "beta2", "sigma"} }

// Constrain writes (μ₀, β₁, β₂, softplus(ρ)).
func (m *LinReg) Constrain(x, out []float64) {
	copy(out[:3], x[:3])
	out[3] = f64.Softplus(x[3])
}

// LogJoint implements Model.
func (m *LinReg) LogJoint(x, grad []float64) float64 {
	if len(x) != 4 || (grad != nil && len(grad) != 4) {
		return math.NaN()
	}
	mu0, b1, b2, rho := x[0], x[1], x[2], x[3]
	sd := f64.Softplus(rho)
	lsd := logSoftplus(rho)
	lp := logNormal(mu0, 0, 10) + logNormal(b1, 0, 10) + logNormal(b2, 0, 10)
	// LogNormal(σ; 0.5, 1) = N(log σ; 0.5, 1)/σ, plus the Jacobian log σ′(ρ) = log f64.Sigmoid(ρ)
	// (left out under ReferenceSigma).
	lp += logNormal01(lsd-0.5) - lsd
	if !m.ReferenceSigma {
		lp -= f64.Softplus(-rho)
	}
	g0, g1, g2 := -mu0/100, -b1/100, -b2/100
	dsd := -(1 + (lsd - 0.5)) / sd // d/dσ of the log-normal prior
	inv := 1 / (sd * sd)
	for i, y := range m.y {
		r := y - (mu0 + b1*m.x1[i] + b2*m.x2[i])
		lp += -0.5*r*r*inv - lsd - halfLog2Pi
		g0 += r * inv
		g1 += r * inv * m.x1[i]
		g2 += r * inv * m.x2[i]
		dsd += -1/sd + r*r*inv/sd
	}
	if grad != nil {
		grad[0], grad[1], grad[2] = g0, g1, g2
		grad[3] = dsd * f64.Sigmoid(rho)
		if !m.ReferenceSigma {
			grad[3] += f64.Sigmoid(-rho)
		}
	}
	return lp
}

// EightSchools is the 8-schools hierarchical model (paper 002, Listings 4 and 5): μ ~ N(0, 5²),
// τ ~ half-Cauchy(0, 5), and either θ_j ~ N(μ, τ²) (centred) or θ_j = μ + τη_j, η_j ~ N(0, 1)
// (non-centred), y_j ~ N(θ_j, σ_j²). Unconstrained x = (μ, ρ, θ₁…θ₈ or η₁…η₈), τ = softplus(ρ).
type EightSchools struct {
	// NonCentred selects the non-centred parameterisation.
	NonCentred bool
	// ReferenceTau uses the paper's reference scripts' target instead: τ = exp(0.1·ρ) and no
	// Jacobian term, so the density in the unconstrained space is the log-joint of (μ, τ, θ or
	// η) evaluated at τ(ρ) — not the posterior of ρ, and for the non-centred model not even
	// normalisable (it tends to a positive constant as ρ → −∞). For comparing k̂ with the paper.
	ReferenceTau bool
}

// eightSchoolsY and eightSchoolsSigma are the classic data (Rubin 1981); unexported so that no
// caller can change a model.
var (
	eightSchoolsY     = [8]float64{28, 8, -3, 7, -1, 1, 18, 12}
	eightSchoolsSigma = [8]float64{15, 10, 16, 11, 9, 11, 10, 18}
)

// Dim returns 10.
func (m EightSchools) Dim() int { return 10 }

// Names returns ["mu", "tau", "theta1", …] (centred) or ["mu", "tau", "eta1", …].
func (m EightSchools) Names() []string {
	n := []string{"mu", "tau"}
	p := "theta"
	if m.NonCentred {
		p = "eta"
	}
	for j := 1; j <= 8; j++ {
		n = append(n, fmt.Sprintf("%s%d", p, j))
	}
	return n
}

// Constrain writes (μ, τ = softplus(ρ) or exp(0.1·ρ), θ or η).
func (m EightSchools) Constrain(x, out []float64) {
	copy(out, x)
	out[1] = f64.Softplus(x[1])
	if m.ReferenceTau {
		out[1] = math.Exp(0.1 * x[1])
	}
}

// LogJoint implements Model.
func (m EightSchools) LogJoint(x, grad []float64) float64 {
	if len(x) != 10 || (grad != nil && len(grad) != 10) {
		return math.NaN()
	}
	mu, rho := x[0], x[1]
	tau, ltau := f64.Softplus(rho), logSoftplus(rho)
	if m.ReferenceTau {
		tau, ltau = math.Exp(0.1*rho), 0.1*rho
	}
	// half-Cauchy(τ; 5) = 2/(5π(1 + (τ/5)²)), Jacobian dτ/dρ = σ(ρ) (log σ(ρ) = −softplus(−ρ)).
	lp := logNormal(mu, 0, 5) + math.Log(2/(5*math.Pi)) - math.Log1p(tau*tau/25)
	if !m.ReferenceTau {
		lp -= f64.Softplus(-rho)
	}
	gmu := -mu / 25
	gtau := -2 * tau / (25 + tau*tau)
	var g [8]float64
	for j := 0; j < 8; j++ {
		s := eightSchoolsSigma[j]
		if m.NonCentred {
			eta := x[2+j]
			th := mu + tau*eta
			r := (eightSchoolsY[j] - th) / (s * s)
			lp += logNormal01(eta) + logNormal(eightSchoolsY[j], th, s)
			gmu += r
			gtau += r * eta
			g[j] = -eta + r*tau
		} else {
			th := x[2+j]
			d := th - mu
			lp += -0.5*d*d/(tau*tau) - ltau - halfLog2Pi + logNormal(eightSchoolsY[j], th, s)
			gmu += d / (tau * tau)
			gtau += -1/tau + d*d/(tau*tau*tau)
			g[j] = -d/(tau*tau) + (eightSchoolsY[j]-th)/(s*s)
		}
	}
	if grad != nil {
		grad[0] = gmu
		grad[1] = gtau*f64.Sigmoid(rho) + f64.Sigmoid(-rho)
		if m.ReferenceTau {
			grad[1] = gtau * 0.1 * tau
		}
		copy(grad[2:], g[:])
	}
	return lp
}
