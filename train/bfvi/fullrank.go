package bfvi

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// Sampler is a variational family that can be sampled with its log density, e.g. *MeanField or
// *FullRankGaussian.
type Sampler interface {
	// Dim returns the dimension of θ.
	Dim() int
	// Sample draws θ ~ q into theta (length Dim) and returns log q(θ).
	Sample(rng *rand.Rand, theta []float64) (float64, error)
}

// FullRankGaussian is q(θ) = N(μ, L Lᵀ) with L lower triangular, diagonal softplus(ρ_i) > 0.
// Raw parameters: μ (d), ρ (d), then the strictly lower entries of L row by row (d(d−1)/2).
type FullRankGaussian struct {
	d   int
	p   []float64
	mu  []float64 // views into p
	rho []float64
	low []float64
}

// NewFullRankGaussian returns N(0, sd²·I) in dimension d as a full-rank family.
func NewFullRankGaussian(d int, sd float64) (*FullRankGaussian, error) {
	if d < 1 || d > 10000 {
		return nil, fmt.Errorf("bfvi: full-rank Gaussian dimension %d out of range", d)
	}
	if !(sd > 0) || math.IsInf(sd, 0) {
		return nil, fmt.Errorf("bfvi: full-rank Gaussian initial sd %g must be positive and finite", sd)
	}
	g := &FullRankGaussian{d: d, p: make([]float64, 2*d+d*(d-1)/2)}
	g.mu, g.rho, g.low = g.p[:d], g.p[d:2*d], g.p[2*d:]
	for i := range g.rho {
		g.rho[i] = f64.SoftplusInv(sd)
	}
	return g, nil
}

// Dim returns d.
func (g *FullRankGaussian) Dim() int { return g.d }

// Mean returns a copy of μ.
func (g *FullRankGaussian) Mean() []float64 { return append([]float64(nil), g.mu...) }

// Cov returns Σ = L Lᵀ (d×d row-major).
func (g *FullRankGaussian) Cov() []float64 {
	d := g.d
	l := g.chol()
	s := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j <= i; j++ {
			v := 0.0
			for k := 0; k <= j; k++ {
				v += l[i*d+k] * l[j*d+k]
			}
			s[i*d+j], s[j*d+i] = v, v
		}
	}
	return s
}

func (g *FullRankGaussian) chol() []float64 {
	d := g.d
	l := make([]float64, d*d)
	k := 0
	for i := 0; i < d; i++ {
		for j := 0; j < i; j++ {
			l[i*d+j] = g.low[k]
			k++
		}
		l[i*d+i] = f64.Softplus(g.rho[i])
	}
	return l
}

// Sample implements Sampler.
func (g *FullRankGaussian) Sample(rng *rand.Rand, theta []float64) (float64, error) {
	if len(theta) != g.d {
		return 0, fmt.Errorf("bfvi: sample buffer has %d values for a %d-dimensional q", len(theta), g.d)
	}
	z := make([]float64, g.d)
	lq := 0.0
	for i := range z {
		z[i] = rng.NormFloat64()
		lq += logNormal01(z[i]) - logSoftplus(g.rho[i])
	}
	g.apply(z, theta)
	return lq, nil
}

// apply writes θ = μ + L z.
func (g *FullRankGaussian) apply(z, theta []float64) {
	k := 0
	for i := 0; i < g.d; i++ {
		v := g.mu[i] + f64.Softplus(g.rho[i])*z[i]
		for j := 0; j < i; j++ {
			v += g.low[k] * z[j]
			k++
		}
		theta[i] = v
	}
}

// FitFullRankGaussianVI fits full-rank Gaussian VI (starting at N(0, I)) with the pathwise ELBO
// gradient and the same RMSprop as Fit; it returns the family and the ELBO trace.
func FitFullRankGaussianVI(m Model, cfg TrainConfig) (*FullRankGaussian, []float64, error) {
	if m == nil {
		return nil, nil, fmt.Errorf("bfvi: nil model")
	}
	if err := cfg.validate(); err != nil {
		return nil, nil, err
	}
	g, err := NewFullRankGaussian(m.Dim(), 1)
	if err != nil {
		return nil, nil, err
	}
	d := g.d
	rng := rand.New(rand.NewPCG(cfg.Seed, 0xf011))
	z, th, lg := make([]float64, d), make([]float64, d), make([]float64, d)
	grad, v := make([]float64, len(g.p)), make([]float64, len(g.p))
	trace := make([]float64, 0, cfg.Steps)
	for step := 0; step < cfg.Steps; step++ {
		clear(grad)
		elbo := 0.0
		for s := 0; s < cfg.Samples; s++ {
			e := 0.0
			for i := range z {
				z[i] = rng.NormFloat64()
				e += logSoftplus(g.rho[i]) - logNormal01(z[i])
			}
			g.apply(z, th)
			e += m.LogJoint(th, lg)
			if math.IsNaN(e) || math.IsInf(e, 0) {
				return g, trace, fmt.Errorf("bfvi: full-rank fit step %d: log p(y, θ) − log q(θ) = %g", step, e)
			}
			elbo += e
			k := 0
			for i := 0; i < d; i++ {
				grad[i] += lg[i]
				sr := f64.Sigmoid(g.rho[i])
				grad[d+i] += lg[i]*z[i]*sr + math.Exp(-f64.Softplus(-g.rho[i])-logSoftplus(g.rho[i]))
				for j := 0; j < i; j++ {
					grad[2*d+k] += lg[i] * z[j]
					k++
				}
			}
		}
		inv := 1 / float64(cfg.Samples)
		trace = append(trace, elbo*inv)
		lr := cfg.LR
		if cfg.LREnd > 0 && cfg.Steps > 1 {
			lr += (cfg.LREnd - cfg.LR) * float64(step) / float64(cfg.Steps-1)
		}
		for k := range grad {
			gk := grad[k] * inv
			v[k] = cfg.Rho*v[k] + (1-cfg.Rho)*gk*gk
			g.p[k] += lr * gk / (math.Sqrt(v[k]) + cfg.Eps)
		}
		if !allFinite(g.p) {
			return g, trace, fmt.Errorf("bfvi: full-rank fit step %d: parameters diverged", step)
		}
	}
	return g, trace, nil
}
