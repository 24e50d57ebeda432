package bnn

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// ErrNoDensity is wrapped by Net.Draw when a layer's posterior has no closed-form density over
// its weights.
var ErrNoDensity = errors.New("no closed-form density over the weights")

// LayerDraw is one Linear or Conv2d layer's parameters drawn from the posterior by Net.Draw.
type LayerDraw struct {
	// Layer is the layer's name; Weight (PyTorch layout, row-major) and Bias (nil without one)
	// its drawn parameters, in float64.
	Layer        string
	Weight, Bias []float64
	// Stochastic is false for a deterministic layer (its parameters are a point mass; LogQ and
	// LogPrior are 0 and Params is 0).
	Stochastic bool
	// Params is the number of drawn values; LogQ is log q of the drawn values and LogPrior their
	// log density under the layer's prior, both with every normalising constant.
	Params         int
	LogQ, LogPrior float64
}

// drawer is a layer whose posterior can be sampled with its exact log density.
type drawer interface {
	draw(rng *rand.Rand) (LayerDraw, error)
}

// Draw samples every Linear and Conv2d layer's parameters once from the posterior, in float64
// and exactly (whole weights: no local reparameterisation, no quantile tables), and returns them
// in network order with log q and the log prior density of each layer's draw: what importance
// sampling against the posterior (Pareto-smoothed k̂, evidence estimates) needs. Deterministic
// layers are returned as they are, marked not stochastic. Mean-field Gaussian (ffg),
// full-covariance Gaussian (fcg) and Bernstein-flow layers have a density; an inducing layer's
// q(W) is a mixture over U without a closed form, and dropout or global inducing posteriors have
// none either: Draw returns an error wrapping ErrNoDensity naming the layer. Draw is not safe for
// concurrent use (Bernstein layers load their flows from the parameters first); the draws depend
// only on rng.
func (n *Net[T]) Draw(rng *rand.Rand) ([]LayerDraw, error) {
	if n.global != nil {
		return nil, fmt.Errorf("bnn: the global inducing posterior: %w", ErrNoDensity)
	}
	var out []LayerDraw
	for _, l := range leaves(n.layers) {
		d, ok := l.(drawer)
		if !ok {
			if len(l.params()) == 0 {
				continue // activations, pooling, flatten
			}
			if _, bn := l.(*batchNorm[T]); bn {
				continue // BatchNorm: deterministic statistics and affine parameters, not sampled
			}
			return nil, fmt.Errorf("bnn: layer %q (%T): %w", l.name(), l, ErrNoDensity)
		}
		ld, err := d.draw(rng)
		if err != nil {
			return nil, fmt.Errorf("bnn: layer %q: %w", l.name(), err)
		}
		out = append(out, ld)
	}
	return out, nil
}

// logNormalPDF is log N(x; m, s²).
func logNormalPDF(x, m, s float64) float64 {
	r := (x - m) / s
	return -0.5*r*r - math.Log(s) - 0.5*math.Log(2*math.Pi)
}

func (l *deterministic[T]) draw(*rand.Rand) (LayerDraw, error) {
	d := LayerDraw{Layer: l.affine.name, Weight: f64.From(l.w.Value)}
	if l.bias {
		d.Bias = f64.From(l.b.Value)
	}
	return d, nil
}

// draw samples w = μ + σ ε with σ = clamp(softplus(raw), 0, max_sd), as bayesianize's
// FFGMixin samples a whole weight, and scores it under q and the prior buffers.
func (l *ffg[T]) draw(rng *rand.Rand) (LayerDraw, error) {
	d := LayerDraw{Layer: l.affine.name, Stochastic: true}
	part := func(m, raw, pm, ps Param[T]) ([]float64, error) {
		out := make([]float64, len(m.Value))
		for i, mu := range m.Value {
			s := f64.Softplus(float64(raw.Value[i]))
			if l.hasMax {
				s = min(s, l.maxSD)
			}
			psd := float64(ps.Value[i])
			if !(s > 0) || !(psd > 0) || math.IsInf(psd, 0) {
				return nil, fmt.Errorf("%s: entry %d: posterior sd %g, prior sd %g (both must be positive and finite)", raw.Name, i, s, psd)
			}
			v := float64(mu) + s*rng.NormFloat64()
			out[i] = v
			d.LogQ += logNormalPDF(v, float64(mu), s)
			d.LogPrior += logNormalPDF(v, float64(pm.Value[i]), psd)
		}
		d.Params += len(out)
		return out, nil
	}
	var err error
	if d.Weight, err = part(l.wm, l.ws, l.pwm, l.pws); err != nil {
		return d, err
	}
	if l.bias {
		if d.Bias, err = part(l.bm, l.bs, l.pbm, l.pbs); err != nil {
			return d, err
		}
	}
	return d, nil
}

// draw samples θ = μ + L ε (L = diag(softplus(_scale_diag)) + tril(_scale_tril, −1)):
// log q = −½|ε|² − Σ log L_rr − (D/2) log 2π; the prior is N(0, diag s²).
func (l *fcg[T]) draw(rng *rand.Rand) (LayerDraw, error) {
	D := l.dim
	d := LayerDraw{Layer: l.affine.name, Stochastic: true, Params: D}
	eps := make([]float64, D)
	for i := range eps {
		eps[i] = rng.NormFloat64()
	}
	theta := make([]float64, D)
	for r := 0; r < D; r++ {
		lrr := f64.Softplus(float64(l.diag.Value[r]))
		if !(lrr > 0) {
			return d, fmt.Errorf("_scale_diag: entry %d gives a zero scale", r)
		}
		v := float64(l.mean.Value[r]) + lrr*eps[r]
		row := l.tril.Value[r*D : r*D+r]
		for c, x := range row {
			v += float64(x) * eps[c]
		}
		theta[r] = v
		d.LogQ += -0.5*eps[r]*eps[r] - math.Log(lrr) - 0.5*math.Log(2*math.Pi)
		d.LogPrior += logNormalPDF(v, 0, 1/math.Sqrt(float64(l.invVar[r])))
	}
	nw := l.dOut * l.k
	d.Weight = theta[:nw:nw]
	if l.bias {
		d.Bias = theta[nw:]
	}
	return d, nil
}

// draw samples every weight's flow at a fresh z: log q = log N(z) − log|dθ/dz| (the exact
// flow, not the runtime's quantile table); the prior is N(0, σ²).
func (l *bernsteinLayer[T]) draw(rng *rand.Rand) (LayerDraw, error) {
	if err := l.sync(); err != nil {
		return LayerDraw{}, err
	}
	d := LayerDraw{Layer: l.affine.name, Stochastic: true, Params: len(l.flows)}
	d.Weight = make([]float64, l.dOut*l.k)
	if l.bias {
		d.Bias = make([]float64, l.dOut)
	}
	for i, f := range l.flows {
		z := rng.NormFloat64()
		th, ld := f.Eval(z, nil, nil)
		d.LogQ += -0.5*z*z - 0.5*math.Log(2*math.Pi) - ld
		d.LogPrior += logNormalPDF(th, 0, math.Sqrt(l.priorVar(i)))
		o, j := i/l.dIn, i%l.dIn
		if j < l.k {
			d.Weight[o*l.k+j] = th
		} else {
			d.Bias[o] = th
		}
	}
	return d, nil
}
