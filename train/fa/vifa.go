package fa

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/kernels"
)

// LikelihoodGrad is the model-specific part of VIFA: given one parameter vector θ it draws a
// minibatch, returns the minibatch's average negative log-likelihood and writes its gradient
// g_θ = ∇_θ(−(1/M) Σ log p(y|x, θ)) into grad (length D). It is called MCSamples times per Step,
// each time with a fresh θ ~ q.
type LikelihoodGrad func(theta, grad []float64) (nll float64, err error)

// VIFAConfig holds VIFA's hyper-parameters (paper 000, Algorithm 1 and §4.3.1).
type VIFAConfig struct {
	// Rank is the latent dimension K (≥ 1).
	Rank int
	// N is the number of training examples: the minibatch gradient is scaled by N.
	N int
	// PriorPrecision is α of the prior N(0, α⁻¹ I).
	PriorPrecision float64
	// MCSamples is L, the number of θ samples (and minibatches) per update; 0 means 1.
	MCSamples int
	// Learning rates of c, F and γ = log ψ.
	LRMean, LRFactors, LRLogVar float64
	// Optimizer is "adam" (the default when empty) or "sgd" (Algorithm 1 as printed).
	Optimizer string
	// Clip rescales the joint gradient of (c, F, γ) to this Euclidean norm when it is larger
	// (0: no clipping). The paper uses 10.
	Clip float64
	// ClipPerParameter clips the gradients of c, F and γ separately, each to norm Clip (the
	// paper's "any gradients with Frobenius norm greater than 10"), instead of jointly.
	ClipPerParameter bool
	// InitMean is the initial c (nil: zeros, as Algorithm 1; the two-stage schedule starts from
	// pre-trained weights).
	InitMean []float64
	// InitFactorScale scales the initial F, whose columns are orthonormal (QR of a Gaussian
	// matrix); 0 means 0.01.
	InitFactorScale float64
	// InitLogVar is the initial γ = log ψ for every coordinate (0: ψ = 1, as Algorithm 1).
	InitLogVar float64
	// MeanOnlySteps is the first stage of the two-stage schedule (§4.3.1): for this many updates
	// only c is trained and F, γ stay fixed. 0 disables it.
	MeanOnlySteps int
	// RampSteps: after the first stage the learning rates of F and γ grow linearly from 0 to
	// their targets over this many updates. 0 means no ramp.
	RampSteps int
	// Seed seeds the sampler of h, z and the initial factors.
	Seed uint64
}

// StepStats reports one VIFA update.
type StepStats struct {
	// NLL is the average of the callback's minibatch negative log-likelihoods.
	NLL float64
	// GradNorm is the norm of the joint gradient before clipping.
	GradNorm float64
	// Clipped reports that the gradient was rescaled.
	Clipped bool
}

// VIFA learns q(θ) = N(c, F Fᵀ + diag exp γ) by minimising the negative ELBO
// E_q[−log p(D|θ)] + KL(q ‖ N(0, α⁻¹I)). It is not safe for concurrent use.
type VIFA struct {
	cfg              VIFAConfig
	d, k, l          int
	c, f, gamma      []float64
	psi              []float64
	gc, gf, gg       []float64 // gradient buffers
	theta, g, h, z   []float64
	src              *rand.PCG
	rng              *rand.Rand
	optC, optF, optG adamState
	wb               woodburyScratch
	steps            int
	lrFactor         float64
}

type adamState struct {
	m, v []float64
	t    int
}

func (a *adamState) init(n int) { a.m, a.v = make([]float64, n), make([]float64, n) }

// step applies one update to p with gradient g and learning rate lr.
func (a *adamState) step(adam bool, p, g []float64, lr float64) {
	if !adam {
		for i := range p {
			p[i] -= lr * g[i]
		}
		return
	}
	const b1, b2, eps = 0.9, 0.999, 1e-8
	a.t++
	c1 := 1 - math.Pow(b1, float64(a.t))
	c2 := math.Sqrt(1 - math.Pow(b2, float64(a.t)))
	for i := range p {
		a.m[i] = b1*a.m[i] + (1-b1)*g[i]
		a.v[i] = b2*a.v[i] + (1-b2)*g[i]*g[i]
		p[i] -= lr / c1 * a.m[i] / (math.Sqrt(a.v[i])/c2 + eps)
	}
}

// NewVIFA returns a VIFA learner over θ ∈ R^d.
func NewVIFA(d int, cfg VIFAConfig) (*VIFA, error) {
	if d < 1 {
		return nil, fmt.Errorf("fa: vifa: dimension %d must be positive", d)
	}
	if cfg.Rank < 1 || cfg.Rank > d {
		return nil, fmt.Errorf("fa: vifa: rank %d must be in [1, %d]", cfg.Rank, d)
	}
	if cfg.N < 1 {
		return nil, fmt.Errorf("fa: vifa: N (training-set size) %d must be positive", cfg.N)
	}
	if !(cfg.PriorPrecision > 0) || math.IsInf(cfg.PriorPrecision, 0) {
		return nil, fmt.Errorf("fa: vifa: prior precision %g must be positive and finite", cfg.PriorPrecision)
	}
	for _, lr := range []float64{cfg.LRMean, cfg.LRFactors, cfg.LRLogVar} {
		if !(lr >= 0) || math.IsInf(lr, 0) {
			return nil, fmt.Errorf("fa: vifa: learning rates (%g, %g, %g) must be finite and non-negative", cfg.LRMean, cfg.LRFactors, cfg.LRLogVar)
		}
	}
	if cfg.MCSamples < 0 || cfg.Clip < 0 || cfg.MeanOnlySteps < 0 || cfg.RampSteps < 0 {
		return nil, fmt.Errorf("fa: vifa: mc samples %d, clip %g, mean-only steps %d and ramp steps %d must be non-negative",
			cfg.MCSamples, cfg.Clip, cfg.MeanOnlySteps, cfg.RampSteps)
	}
	switch cfg.Optimizer {
	case "", "adam", "sgd":
	default:
		return nil, fmt.Errorf("fa: vifa: optimizer %q is not adam or sgd", cfg.Optimizer)
	}
	if cfg.InitMean != nil && len(cfg.InitMean) != d {
		return nil, fmt.Errorf("fa: vifa: initial mean has %d values, want %d", len(cfg.InitMean), d)
	}
	if math.IsNaN(cfg.InitLogVar) || math.IsInf(cfg.InitLogVar, 0) || math.IsNaN(cfg.InitFactorScale) || math.IsInf(cfg.InitFactorScale, 0) {
		return nil, errors.New("fa: vifa: initial log-variance and factor scale must be finite")
	}
	k := cfg.Rank
	l := cfg.MCSamples
	if l == 0 {
		l = 1
	}
	src := rand.NewPCG(cfg.Seed, 0x7669666100000000^cfg.Seed)
	v := &VIFA{cfg: cfg, d: d, k: k, l: l, lrFactor: 1, src: src, rng: rand.New(src),
		c: make([]float64, d), gamma: make([]float64, d), psi: make([]float64, d),
		gc: make([]float64, d), gf: make([]float64, d*k), gg: make([]float64, d),
		theta: make([]float64, d), g: make([]float64, d), h: make([]float64, k), z: make([]float64, d),
		wb: newWoodburyScratch(k),
	}
	if cfg.InitMean != nil {
		copy(v.c, cfg.InitMean)
	}
	scale := cfg.InitFactorScale
	if scale == 0 {
		scale = 0.01
	}
	v.f = orthonormalColumns(v.rng, d, k)
	for i := range v.f {
		v.f[i] *= scale
	}
	for i := range v.gamma {
		v.gamma[i] = cfg.InitLogVar
		v.psi[i] = math.Exp(cfg.InitLogVar)
	}
	v.optC.init(d)
	v.optF.init(d * k)
	v.optG.init(d)
	return v, nil
}

// SetLRFactor multiplies every learning rate by f from the next update on (for schedules).
func (v *VIFA) SetLRFactor(f float64) { v.lrFactor = f }

// Steps returns the number of updates taken.
func (v *VIFA) Steps() int { return v.steps }

// Posterior returns a copy of the current q(θ) (ψ = exp γ).
func (v *VIFA) Posterior() *Model { return v.SharedPosterior().Clone() }

// SharedPosterior is Posterior without the copies: its Mean, F and Psi are the learner's own c,
// F and ψ, to be read (converted for a checkpoint, say) and not modified, and only until the
// learner's next Step, SetPosterior or LoadState.
func (v *VIFA) SharedPosterior() *Model {
	return &Model{D: v.d, K: v.k, Mean: v.c, F: v.f, Psi: v.psi}
}

// SetPosterior replaces c, F and ψ (e.g. to resume from a checkpoint); optimizer state is kept.
func (v *VIFA) SetPosterior(m *Model) error {
	if m.D != v.d || m.K != v.k {
		return fmt.Errorf("fa: vifa: posterior is %d×%d, want %d×%d", m.D, m.K, v.d, v.k)
	}
	if err := m.Validate(); err != nil {
		return err
	}
	copy(v.c, m.Mean)
	copy(v.f, m.F)
	for i, p := range m.Psi {
		v.psi[i], v.gamma[i] = p, math.Log(p)
	}
	return nil
}

// woodbury computes B = FᵀΨ⁻¹F (K×K, into v.wb.b) and the Cholesky factor L of I + B (into
// v.wb.l), and with inverse also (I + B)⁻¹ (into v.wb.inv) (eqs. 36–37). The D×K matrices
// A = Ψ⁻¹ ⊙ F and Cw = A (I + B)⁻¹ are not formed: klGrads makes them a row at a time. B's
// sums run over the D rows in order, as kernels.MatMul(true, false, …) takes them.
func (v *VIFA) woodbury(inverse bool) error {
	d, k := v.d, v.k
	w := &v.wb
	b, arow := w.b, w.a
	clear(b)
	for p := 0; p < d; p++ {
		inv := 1 / v.psi[p]
		fp := v.f[p*k : (p+1)*k]
		for j, f := range fp {
			arow[j] = f * inv
		}
		for i, s := range fp {
			if s == 0 {
				continue
			}
			row := b[i*k : (i+1)*k]
			for j, av := range arow {
				row[j] += s * av
			}
		}
	}
	copy(w.l, b)
	for j := 0; j < k; j++ {
		w.l[j*k+j]++
	}
	if err := kernels.Cholesky(w.l, k); err != nil {
		return fmt.Errorf("fa: vifa: I + FᵀΨ⁻¹F: %w", err)
	}
	if !inverse {
		return nil
	}
	clear(w.inv)
	for j := 0; j < k; j++ {
		w.inv[j*k+j] = 1
	}
	kernels.CholeskySolve(w.l, k, w.inv, k)
	return nil
}

// woodburyScratch holds the K×K and length-K buffers of woodbury and klGrads.
type woodburyScratch struct {
	b, l, inv   []float64 // FᵀΨ⁻¹F, the Cholesky factor of I + B, (I + B)⁻¹
	a, cw, cbtr []float64 // one row of A, of Cw and of Cw Bᵀ
}

func newWoodburyScratch(k int) woodburyScratch {
	return woodburyScratch{b: make([]float64, k*k), l: make([]float64, k*k), inv: make([]float64, k*k),
		a: make([]float64, k), cw: make([]float64, k), cbtr: make([]float64, k)}
}

// klGrads writes the gradient of KL(q ‖ p) = E_q[log q] − E_q[log p(θ)] with respect to c, F and
// γ into gc, gf, gg (eqs. 26–27, 37, 41–42), in O(DK²) time and O(K²) memory beyond them: row i
// of A = Ψ⁻¹ ⊙ F, of Cw = A (I + B)⁻¹ and of Cw Bᵀ is formed with the operations, in the order,
// of kernels.MatMul's D×K products (the same bits).
func (v *VIFA) klGrads(gc, gf, gg []float64) error {
	if err := v.woodbury(true); err != nil {
		return err
	}
	d, k, alpha := v.d, v.k, v.cfg.PriorPrecision
	w := &v.wb
	b, inv, arow, cw, cbt := w.b, w.inv, w.a, w.cw, w.cbtr
	for i := range gc {
		gc[i] = alpha * v.c[i]
	}
	for i := 0; i < d; i++ {
		pinv := 1 / v.psi[i]
		fi := v.f[i*k : (i+1)*k]
		for j, f := range fi {
			arow[j] = f * pinv
		}
		// Cw's row: A's row times (I + B)⁻¹.
		clear(cw)
		for p, s := range arow {
			if s == 0 {
				continue
			}
			for j, iv := range inv[p*k : (p+1)*k] {
				cw[j] += s * iv
			}
		}
		// ∇F = αF − A + Cw Bᵀ
		gfi := gf[i*k : (i+1)*k]
		for j := 0; j < k; j++ {
			brow := b[j*k : (j+1)*k]
			var s float64
			for p, c := range cw {
				s += c * brow[p]
			}
			cbt[j] = s // a sum from +0 is never −0: the same as the product's 0 + s
		}
		for j, f := range fi {
			gfi[j] = alpha*f - arow[j] + cbt[j]
		}
		// ∇γ = (α/2)ψ − ½ + ½ rowsum(Cw ⊙ A) ψ
		s := 0.0
		for j := 0; j < k; j++ {
			s += cw[j] * arow[j]
		}
		gg[i] = 0.5*alpha*v.psi[i] - 0.5 + 0.5*s*v.psi[i]
	}
	return nil
}

// KL returns KL(q ‖ N(0, α⁻¹I)) in closed form (log-determinant by the matrix determinant lemma).
func (v *VIFA) KL() (float64, error) {
	if err := v.woodbury(false); err != nil {
		return 0, err
	}
	alpha := v.cfg.PriorPrecision
	logDet := logDetChol(v.wb.l, v.k)
	sq := 0.0
	for i := 0; i < v.d; i++ {
		logDet += v.gamma[i]
		sq += v.c[i]*v.c[i] + v.psi[i]
	}
	for _, f := range v.f {
		sq += f * f
	}
	dd := float64(v.d)
	return 0.5*alpha*sq - 0.5*dd*math.Log(alpha) - 0.5*dd - 0.5*logDet, nil
}

// likGrads adds the reparameterised Monte Carlo gradient of N·E_q[NLL] (eqs. 32, 33, 43) to gc,
// gf, gg and returns the mean NLL.
func (v *VIFA) likGrads(lik LikelihoodGrad, gc, gf, gg []float64) (float64, error) {
	d, k := v.d, v.k
	n := float64(v.cfg.N)
	w := n / float64(v.l)
	total := 0.0
	for s := 0; s < v.l; s++ {
		for j := range v.h {
			v.h[j] = v.rng.NormFloat64()
		}
		for i := 0; i < d; i++ {
			v.z[i] = v.rng.NormFloat64()
			t := v.c[i] + math.Sqrt(v.psi[i])*v.z[i]
			for j := 0; j < k; j++ {
				t += v.f[i*k+j] * v.h[j]
			}
			v.theta[i] = t
		}
		clear(v.g)
		nll, err := lik(v.theta, v.g)
		if err != nil {
			return 0, fmt.Errorf("fa: vifa: likelihood: %w", err)
		}
		total += nll
		for i := 0; i < d; i++ {
			gi := w * v.g[i]
			if math.IsNaN(gi) || math.IsInf(gi, 0) {
				return 0, fmt.Errorf("fa: vifa: likelihood gradient %d is %g", i, v.g[i])
			}
			gc[i] += gi
			for j := 0; j < k; j++ {
				gf[i*k+j] += gi * v.h[j]
			}
			gg[i] += 0.5 * gi * math.Sqrt(v.psi[i]) * v.z[i]
		}
	}
	return total / float64(v.l), nil
}

// Step performs one VIFA update: L reparameterised likelihood gradients from lik, the closed-form
// KL gradients, optional clipping, then an Adam (or SGD) step on c, F and γ following the two-stage
// schedule. On error nothing is updated.
func (v *VIFA) Step(lik LikelihoodGrad) (StepStats, error) {
	if err := v.klGrads(v.gc, v.gf, v.gg); err != nil {
		return StepStats{}, err
	}
	nll, err := v.likGrads(lik, v.gc, v.gf, v.gg)
	if err != nil {
		return StepStats{}, err
	}
	stage1 := v.steps < v.cfg.MeanOnlySteps
	norm2 := 0.0
	for _, g := range v.gc {
		norm2 += g * g
	}
	if !stage1 {
		for _, g := range v.gf {
			norm2 += g * g
		}
		for _, g := range v.gg {
			norm2 += g * g
		}
	}
	st := StepStats{NLL: nll, GradNorm: math.Sqrt(norm2)}
	if v.cfg.Clip > 0 {
		if v.cfg.ClipPerParameter {
			for _, g := range [][]float64{v.gc, v.gf, v.gg} {
				if clipTo(g, norm(g), v.cfg.Clip) {
					st.Clipped = true
				}
			}
		} else if clipTo(v.gc, st.GradNorm, v.cfg.Clip) {
			clipTo(v.gf, st.GradNorm, v.cfg.Clip)
			clipTo(v.gg, st.GradNorm, v.cfg.Clip)
			st.Clipped = true
		}
	}
	adam := v.cfg.Optimizer != "sgd"
	v.optC.step(adam, v.c, v.gc, v.cfg.LRMean*v.lrFactor)
	if !stage1 {
		ramp := 1.0
		if v.cfg.RampSteps > 0 {
			ramp = math.Min(1, float64(v.steps-v.cfg.MeanOnlySteps+1)/float64(v.cfg.RampSteps))
		}
		v.optF.step(adam, v.f, v.gf, v.cfg.LRFactors*v.lrFactor*ramp)
		v.optG.step(adam, v.gamma, v.gg, v.cfg.LRLogVar*v.lrFactor*ramp)
		for i, g := range v.gamma {
			v.psi[i] = math.Exp(g)
		}
	}
	v.steps++
	return st, nil
}

func norm(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// clipTo rescales g by limit/n when its norm n exceeds limit and reports whether it did.
func clipTo(g []float64, n, limit float64) bool {
	if n <= limit {
		return false
	}
	s := limit / n
	for i := range g {
		g[i] *= s
	}
	return true
}
