package bfvi

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// Marginal is a 1-D reparameterised variational family θ = T_λ(z), z ~ N(0, 1): a Bernstein
// Flow or a Gaussian. Implementations cache derived values and are not safe for concurrent use.
type Marginal interface {
	// NumParams returns the number of raw parameters λ.
	NumParams() int
	// Params returns a copy of λ.
	Params() []float64
	// SetParams replaces λ (length NumParams, finite).
	SetParams(p []float64) error
	// Eval returns θ(z) and log|dθ/dz|, and writes ∂θ/∂λ and ∂log|dθ/dz|/∂λ at fixed z into
	// the non-nil slices (length ≥ NumParams; otherwise it returns NaN, NaN).
	Eval(z float64, dTheta, dLogDet []float64) (theta, logDet float64)
	// LogDensity returns log q(θ) (−Inf outside the support).
	LogDensity(theta float64) float64
	// Inverse returns z with θ(z) = theta.
	Inverse(theta float64) (float64, error)
	// Clone returns an independent copy.
	Clone() Marginal
}

// Gaussian is the marginal θ = μ + softplus(ρ)·z with raw parameters (μ, ρ): mean-field Gaussian
// VI's family.
type Gaussian struct {
	mu, rho   float64
	sd, logSD float64
	sSD       float64 // σ(ρ)/sd = d log sd / dρ
	sRho      float64 // σ(ρ) = d sd / dρ
}

// NewGaussian returns N(mu, sd²) as a Gaussian marginal (sd > 0, both finite).
func NewGaussian(mu, sd float64) (*Gaussian, error) {
	if !(sd > 0) || math.IsInf(sd, 0) || math.IsNaN(mu) || math.IsInf(mu, 0) {
		return nil, fmt.Errorf("bfvi: Gaussian marginal N(%g, %g²) needs finite mean and positive finite sd", mu, sd)
	}
	g := &Gaussian{}
	if err := g.SetParams([]float64{mu, f64.SoftplusInv(sd)}); err != nil {
		return nil, err
	}
	return g, nil
}

// NumParams returns 2.
func (g *Gaussian) NumParams() int { return 2 }

// Params returns (μ, ρ).
func (g *Gaussian) Params() []float64 { return []float64{g.mu, g.rho} }

// Mean returns μ.
func (g *Gaussian) Mean() float64 { return g.mu }

// SD returns softplus(ρ).
func (g *Gaussian) SD() float64 { return g.sd }

// SetParams sets (μ, ρ).
func (g *Gaussian) SetParams(p []float64) error {
	if len(p) != 2 || !allFinite(p) {
		return fmt.Errorf("bfvi: Gaussian marginal needs 2 finite parameters, got %v", p)
	}
	sd := f64.Softplus(p[1])
	if !(sd > 0) {
		return fmt.Errorf("bfvi: Gaussian marginal scale f64.Softplus(%g) underflows", p[1])
	}
	g.mu, g.rho, g.sd, g.logSD = p[0], p[1], sd, logSoftplus(p[1])
	g.sRho = f64.Sigmoid(p[1])
	g.sSD = math.Exp(-f64.Softplus(-p[1]) - g.logSD)
	return nil
}

// Eval implements Marginal: ∂θ/∂μ = 1, ∂θ/∂ρ = z·σ(ρ), ∂log sd/∂ρ = σ(ρ)/sd.
func (g *Gaussian) Eval(z float64, dTheta, dLogDet []float64) (theta, logDet float64) {
	if (dTheta != nil && len(dTheta) < 2) || (dLogDet != nil && len(dLogDet) < 2) {
		return math.NaN(), math.NaN()
	}
	if dTheta != nil {
		dTheta[0], dTheta[1] = 1, z*g.sRho
	}
	if dLogDet != nil {
		dLogDet[0], dLogDet[1] = 0, g.sSD
	}
	return g.mu + g.sd*z, g.logSD
}

// LogDensity returns log N(θ; μ, sd²).
func (g *Gaussian) LogDensity(theta float64) float64 {
	return logNormal01((theta-g.mu)/g.sd) - g.logSD
}

// Inverse returns (θ − μ)/sd.
func (g *Gaussian) Inverse(theta float64) (float64, error) {
	if math.IsNaN(theta) || math.IsInf(theta, 0) {
		return 0, fmt.Errorf("bfvi: inverse of non-finite θ = %g", theta)
	}
	return (theta - g.mu) / g.sd, nil
}

// Clone returns a copy.
func (g *Gaussian) Clone() Marginal { c := *g; return &c }

// MeanField is the product q(θ) = Π_d q_d(θ_d) of independent marginals.
type MeanField struct {
	// Coords holds one marginal per coordinate.
	Coords []Marginal
}

// NewFlowMeanField returns dim independent degree-m flows, each initialised by
// FlowParamsLinear(m, lo, hi).
func NewFlowMeanField(dim, m int, lo, hi float64) (*MeanField, error) {
	if dim < 1 {
		return nil, fmt.Errorf("bfvi: mean-field dimension %d < 1", dim)
	}
	p, err := FlowParamsLinear(m, lo, hi)
	if err != nil {
		return nil, err
	}
	q := &MeanField{Coords: make([]Marginal, dim)}
	for d := range q.Coords {
		f, err := NewFlow(m, p)
		if err != nil {
			return nil, err
		}
		q.Coords[d] = f
	}
	return q, nil
}

// NewGaussianMeanField returns dim independent N(mu, sd²) marginals.
func NewGaussianMeanField(dim int, mu, sd float64) (*MeanField, error) {
	if dim < 1 {
		return nil, fmt.Errorf("bfvi: mean-field dimension %d < 1", dim)
	}
	q := &MeanField{Coords: make([]Marginal, dim)}
	for d := range q.Coords {
		g, err := NewGaussian(mu, sd)
		if err != nil {
			return nil, err
		}
		q.Coords[d] = g
	}
	return q, nil
}

// Dim returns the number of coordinates.
func (q *MeanField) Dim() int { return len(q.Coords) }

// Clone returns a deep copy.
func (q *MeanField) Clone() *MeanField {
	c := &MeanField{Coords: make([]Marginal, len(q.Coords))}
	for i, m := range q.Coords {
		c.Coords[i] = m.Clone()
	}
	return c
}

// Sample draws θ ~ q into theta (length Dim) and returns log q(θ).
func (q *MeanField) Sample(rng *rand.Rand, theta []float64) (float64, error) {
	if len(theta) != len(q.Coords) {
		return 0, fmt.Errorf("bfvi: sample buffer has %d values for a %d-dimensional q", len(theta), len(q.Coords))
	}
	lq := 0.0
	for d, m := range q.Coords {
		z := rng.NormFloat64()
		th, ld := m.Eval(z, nil, nil)
		theta[d] = th
		lq += logNormal01(z) - ld
	}
	return lq, nil
}

// LogDensity returns log q(θ) = Σ_d log q_d(θ_d).
func (q *MeanField) LogDensity(theta []float64) (float64, error) {
	if len(theta) != len(q.Coords) {
		return 0, fmt.Errorf("bfvi: θ has %d values for a %d-dimensional q", len(theta), len(q.Coords))
	}
	s := 0.0
	for d, m := range q.Coords {
		s += m.LogDensity(theta[d])
	}
	return s, nil
}
