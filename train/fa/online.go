package fa

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// OnlineConfig configures online FA from a stream of parameter vectors (thesis 001, Algorithms 1
// and 2).
type OnlineConfig struct {
	// Rank is the latent dimension K (1 ≤ K ≤ D).
	Rank int
	// Warmup is the number of initial observations during which only the running averages are
	// updated and F, ψ stay at their initial values (the thesis uses 100).
	Warmup int
	// LR is online SGA's learning rate (the thesis uses 0.001); ignored by online EM.
	LR float64
	// Weighting (online EM only) weights observation t by t^Weighting in the running averages
	// Ā, B̄ and d̄² of Algorithm 2, so that statistics gathered early under poor F, ψ fade
	// faster. 0 (the default) is Algorithm 2 exactly (equal weights, step 1/t); 1 gives weights ∝ t
	// (effective sample size 3T/4).
	Weighting float64
	// StepExponent α ∈ (1/2, 1] (online EM only) replaces Algorithm 2's running averages by
	// stochastic approximation on the sufficient statistics (Cappé & Moulines 2009): with
	// ρ_t = t^(−α), Ā ← Ā + ρ_t (d_t m_tᵀ − Ā), B̄ ← B̄ + ρ_t (Σ_t + m_t m_tᵀ − B̄) (the
	// posterior covariance Σ_t of each E-step enters the average, so H̄ = B̄) and likewise d̄².
	// α < 1 forgets the statistics gathered under early, poor F and ψ polynomially fast; pair it
	// with AverageAfter and StepDelay (docs/RESULTS.md uses α = 0.6, StepDelay = D,
	// AverageAfter = 5000). 0 (the default) keeps Algorithm 2. It excludes Weighting.
	StepExponent float64
	// StepDelay t₀ ≥ 1 keeps Algorithm 2's step 1/t for the first t₀ observations and continues
	// with ρ_t = (1/t₀)(t₀/t)^α, so that each M-step uses statistics of at least about t₀
	// observations (0 means 1: ρ_t = t^(−α) from the start). Needs StepExponent.
	StepDelay int
	// AverageAfter > 0 (with StepExponent) turns on Polyak–Ruppert averaging: the statistics of
	// every observation after the first AverageAfter are averaged with equal weights, and Model
	// returns the M-step of that average instead of the current iterate (until then, the current
	// iterate). The E-steps always use the current iterate.
	AverageAfter int
	// Recenter (with AverageAfter) re-centres the averaged statistics on the final estimate before
	// Model's M-step. Ā averages d_t d_tᵀ β_tᵀ over E-step maps β_t = Fᵀ(FFᵀ+Ψ)⁻¹ that drift and
	// fluctuate during the stream, so it estimates S β̄ᵀ for the average map β̄, not S β̂ᵀ for the
	// map of the estimate; and B̄ averages β_t d_t d_tᵀ β_tᵀ, which the fluctuations of β_t bias
	// upwards. Model therefore iterates, from the M-step of the averages:
	// A = Ā + Σ̂(β̂ − β̄)ᵀ with Σ̂ = FFᵀ + Ψ (the unknown S(β̂ − β̄)ᵀ replaced by the model's
	// covariance, which the ML fixed point satisfies in these directions: (S − Σ̂)β̂ᵀ = 0),
	// B = (I + FᵀΨ⁻¹F)⁻¹ + β̂ A, then the M-step, while the relative change of ψ shrinks (at
	// most 1000 times). It keeps two more D×K buffers and costs O(DK²) more per observation.
	// docs/RESULTS.md ("Online FA from a stream") measures it.
	Recenter bool
	// Seed seeds the orthonormal initial F (QR of a Gaussian matrix, §4.4).
	Seed uint64
}

// Online fits an FA model to a stream of observations θ_1, θ_2, …: c is their running mean and F,
// ψ follow online EM (Algorithm 2, or with OnlineConfig.StepExponent its stochastic-approximation
// form with Polyak–Ruppert averaging) or online SGA (Algorithm 1). Memory is O(DK); no D×D
// matrix is formed. It is not safe for concurrent use.
//
// Algorithm 2 averages the E-step statistics with step 1/t. Its error then decays like
// T^−(1−λ) in the directions where the EM map's rate of missing information λ exceeds ½ (≈ 0.9
// on the thesis's test models), i.e. slower than the batch fit's T^−½, and with λ < ½ it keeps a
// variance above the batch fit's by (1−λ)²/(1−2λ). StepExponent α ∈ (½, 1) with AverageAfter is
// the asymptotically efficient alternative (Cappé & Moulines 2009); StepDelay ≈ D keeps the first
// M-steps on enough observations for D in the thousands (without it the iterate can diverge).
type Online struct {
	em     bool
	cfg    OnlineConfig
	d, k   int
	t      int
	wsum   float64   // Σ t^Weighting
	mean   []float64 // running mean θ̄_t
	f, psi []float64
	gamma  []float64 // SGA: log ψ
	abar   []float64 // EM: Ā (D×K)
	bbar   []float64 // EM: B̄ (K×K)
	d2bar  []float64 // EM: mean of d² (D)
	// Polyak–Ruppert averages of Ā, B̄, d̄² (StepExponent with AverageAfter > 0) and their
	// weight sum.
	aavg, bavg, d2avg []float64
	avgW              float64
	// Recenter: the E-step map βᵀ = Ψ⁻¹F(I + FᵀΨ⁻¹F)⁻¹ (D×K) of each observation, filtered with
	// the same steps as Ā (betabar) and then Polyak–Ruppert averaged like Ā (betaavg).
	betabar, betaavg []float64
	dt, m, cf        []float64
	ct               []float64 // Cᵀ = ψ⁻¹ ⊙ F (D×K)
	sigma, tmp       []float64
}

// NewOnlineEM returns online EM for FA (Algorithm 2) over R^d.
func NewOnlineEM(d int, cfg OnlineConfig) (*Online, error) { return newOnline(true, d, cfg) }

// NewOnlineSGA returns online stochastic gradient ascent for FA (Algorithm 1) over R^d.
func NewOnlineSGA(d int, cfg OnlineConfig) (*Online, error) {
	if !(cfg.LR > 0) || math.IsInf(cfg.LR, 0) {
		return nil, fmt.Errorf("fa: online sga: learning rate %g must be positive and finite", cfg.LR)
	}
	return newOnline(false, d, cfg)
}

func newOnline(em bool, d int, cfg OnlineConfig) (*Online, error) {
	if d < 1 || cfg.Rank < 1 || cfg.Rank > d {
		return nil, fmt.Errorf("fa: online: dimension %d and rank %d must satisfy 1 ≤ rank ≤ dimension", d, cfg.Rank)
	}
	if cfg.Weighting < 0 || cfg.Weighting > 4 || math.IsNaN(cfg.Weighting) {
		return nil, fmt.Errorf("fa: online: weighting exponent %g out of range [0, 4]", cfg.Weighting)
	}
	if cfg.StepExponent != 0 {
		if !(cfg.StepExponent > 0.5 && cfg.StepExponent <= 1) {
			return nil, fmt.Errorf("fa: online em: step exponent %g out of range (0.5, 1]", cfg.StepExponent)
		}
		if cfg.Weighting != 0 {
			return nil, fmt.Errorf("fa: online em: step exponent %g and weighting %g are exclusive", cfg.StepExponent, cfg.Weighting)
		}
	}
	if cfg.StepDelay < 0 || (cfg.StepDelay > 0 && cfg.StepExponent == 0) {
		return nil, fmt.Errorf("fa: online em: step delay %d must be non-negative and needs a step exponent", cfg.StepDelay)
	}
	if cfg.AverageAfter < 0 {
		return nil, fmt.Errorf("fa: online em: average-after %d must be non-negative", cfg.AverageAfter)
	}
	if cfg.AverageAfter > 0 && cfg.StepExponent == 0 {
		return nil, fmt.Errorf("fa: online em: averaging (after %d observations) needs a step exponent", cfg.AverageAfter)
	}
	if cfg.Recenter && cfg.AverageAfter == 0 {
		return nil, fmt.Errorf("fa: online em: re-centring needs averaging (AverageAfter > 0)")
	}
	if cfg.Warmup < 0 {
		return nil, fmt.Errorf("fa: online: warm-up %d must be non-negative", cfg.Warmup)
	}
	k := cfg.Rank
	o := &Online{em: em, cfg: cfg, d: d, k: k,
		mean: make([]float64, d), psi: make([]float64, d),
		dt: make([]float64, d), m: make([]float64, k), cf: make([]float64, k*k),
		ct: make([]float64, d*k), sigma: make([]float64, k*k), tmp: make([]float64, d*k)}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x6f6e6c696e650000^cfg.Seed))
	o.f = orthonormalColumns(rng, d, k)
	for i := range o.psi {
		o.psi[i] = 1
	}
	if em {
		o.abar, o.bbar, o.d2bar = make([]float64, d*k), make([]float64, k*k), make([]float64, d)
		if cfg.AverageAfter > 0 {
			o.aavg, o.bavg, o.d2avg = make([]float64, d*k), make([]float64, k*k), make([]float64, d)
			if cfg.Recenter {
				o.betabar, o.betaavg = make([]float64, d*k), make([]float64, d*k)
			}
		}
	} else {
		o.gamma = make([]float64, d)
	}
	return o, nil
}

// Count returns the number of observations seen.
func (o *Online) Count() int { return o.t }

// Model returns a copy of the current estimate (c = running mean). With Polyak–Ruppert
// averaging (OnlineConfig.AverageAfter) past the burn-in, F and ψ are the M-step of the averaged
// statistics (re-centred with OnlineConfig.Recenter); if that M-step fails numerically, the
// current iterate is returned.
func (o *Online) Model() *Model { return o.SharedModel().Clone() }

// SharedModel is Model without the copies: what the learner holds (the running mean, and F and ψ
// unless they are the M-step of the averages) is its own buffers, to be read and not modified,
// and only until the learner's next Observe or LoadState.
func (o *Online) SharedModel() *Model {
	m := &Model{D: o.d, K: o.k, Mean: o.mean, F: o.f, Psi: o.psi}
	if o.avgW > 0 {
		f, psi := make([]float64, o.d*o.k), make([]float64, o.d)
		if err := mStep(o.aavg, o.bavg, o.d2avg, o.d, o.k, f, psi); err == nil {
			if o.betaavg != nil {
				recenter(o.aavg, o.betaavg, o.d2avg, o.d, o.k, f, psi)
			}
			m.F, m.Psi = f, psi
		}
	}
	return m
}

// latentPosterior writes Cᵀ = Ψ⁻¹F (D×K) into ct and I + FᵀΨ⁻¹F (K×K) into h, and returns
// Σ_h = (I + FᵀΨ⁻¹F)⁻¹, the posterior covariance of the latent factors (eq. 4.23).
func latentPosterior(f, psi []float64, d, k int, ct, h []float64) ([]float64, error) {
	for i := 0; i < d; i++ {
		inv := 1 / psi[i]
		for j := 0; j < k; j++ {
			ct[i*k+j] = f[i*k+j] * inv
		}
	}
	clear(h)
	for i := 0; i < d; i++ {
		ci, fi := ct[i*k:(i+1)*k], f[i*k:(i+1)*k]
		for a := 0; a < k; a++ {
			ca := ci[a]
			row := h[a*k : (a+1)*k]
			for b := range row {
				row[b] += ca * fi[b]
			}
		}
	}
	for j := 0; j < k; j++ {
		h[j*k+j]++
	}
	return spdInverse(h, k)
}

// posteriorH computes Cᵀ = ψ⁻¹ ⊙ F, Σ = (I + C F)⁻¹ and m = Σ C d_t (eq. 4.23).
func (o *Online) posteriorH() error {
	d, k := o.d, o.k
	inv, err := latentPosterior(o.f, o.psi, d, k, o.ct, o.cf)
	if err != nil {
		return fmt.Errorf("fa: online: I + FᵀΨ⁻¹F after %d observations: %w", o.t, err)
	}
	copy(o.sigma, inv)
	cd := o.tmp[:k]
	clear(cd)
	for i := 0; i < d; i++ {
		di := o.dt[i]
		for j := 0; j < k; j++ {
			cd[j] += o.ct[i*k+j] * di
		}
	}
	for a := 0; a < k; a++ {
		s := 0.0
		for b := 0; b < k; b++ {
			s += o.sigma[a*k+b] * cd[b]
		}
		o.m[a] = s
	}
	return nil
}

// checkObserved checks that the k-th vector observed (what, e.g. "fa: online: observation")
// has d finite values.
func checkObserved(what string, theta []float64, d, k int) error {
	if len(theta) != d {
		return fmt.Errorf("%s has %d values, want %d", what, len(theta), d)
	}
	for i, v := range theta {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s %d: entry %d is %g", what, k, i, v)
		}
	}
	return nil
}

// Observe consumes one observation θ_t (length D). On error the estimate is left unchanged
// except for the running averages of observations already accepted.
func (o *Online) Observe(theta []float64) error {
	if err := checkObserved("fa: online: observation", theta, o.d, o.t+1); err != nil {
		return err
	}
	o.t++
	inv := 1 / float64(o.t)
	for i, v := range theta {
		o.mean[i] += inv * (v - o.mean[i])
		o.dt[i] = v - o.mean[i]
	}
	if err := o.posteriorH(); err != nil {
		return err
	}
	update := o.t > o.cfg.Warmup
	if o.em && o.cfg.StepExponent != 0 {
		return o.saStep(update)
	}
	if o.em {
		step := inv
		if o.cfg.Weighting != 0 {
			w := math.Pow(float64(o.t), o.cfg.Weighting)
			o.wsum += w
			step = w / o.wsum
		}
		return o.emStep(step, update)
	}
	if update {
		o.sgaStep()
	}
	return nil
}

// emStep is lines 10–15 of Algorithm 2 with averaging step inv (1/t in Algorithm 2).
func (o *Online) emStep(inv float64, update bool) error {
	d, k := o.d, o.k
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			o.bbar[a*k+b] += inv * (o.m[a]*o.m[b] - o.bbar[a*k+b])
		}
	}
	for i := 0; i < d; i++ {
		di := o.dt[i]
		for j := 0; j < k; j++ {
			o.abar[i*k+j] += inv * (di*o.m[j] - o.abar[i*k+j])
		}
		o.d2bar[i] += inv * (di*di - o.d2bar[i])
	}
	if !update {
		return nil
	}
	h := make([]float64, k*k)
	for i := range h {
		h[i] = o.sigma[i] + o.bbar[i]
	}
	hinv, err := spdInverse(h, k)
	if err != nil {
		return fmt.Errorf("fa: online em: H̄ after %d observations: %w", o.t, err)
	}
	// F = Ā H̄⁻¹; ψ = d̄² + rowsum((F H̄) ⊙ F − 2 F ⊙ Ā).
	for i := 0; i < d; i++ {
		ar := o.abar[i*k : (i+1)*k]
		fr := o.f[i*k : (i+1)*k]
		for b := 0; b < k; b++ {
			s := 0.0
			for a := 0; a < k; a++ {
				s += ar[a] * hinv[a*k+b]
			}
			fr[b] = s
		}
		p := o.d2bar[i]
		for b := 0; b < k; b++ {
			fh := 0.0
			for a := 0; a < k; a++ {
				fh += fr[a] * h[a*k+b]
			}
			p += fh*fr[b] - 2*fr[b]*ar[b]
		}
		// Guard against a non-positive variance from rounding or too few observations.
		o.psi[i] = math.Max(p, 1e-8*math.Max(o.d2bar[i], 1e-300))
	}
	return nil
}

// sgaStep is lines 10–14 of Algorithm 1 (eqs. 4.24–4.26).
func (o *Online) sgaStep() {
	d, k := o.d, o.k
	hm := make([]float64, k*k) // Σ + m mᵀ
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			hm[a*k+b] = o.sigma[a*k+b] + o.m[a]*o.m[b]
		}
	}
	lr := o.cfg.LR
	for i := 0; i < d; i++ {
		fr := o.f[i*k : (i+1)*k]
		di := o.dt[i]
		inv := 1 / o.psi[i]
		fm := 0.0
		for a := 0; a < k; a++ {
			fm += fr[a] * o.m[a]
		}
		// sum((F(Σ + mmᵀ)) ⊙ F) for row i, and the F gradient.
		quad := 0.0
		gf := o.tmp[:k]
		for b := 0; b < k; b++ {
			s := 0.0
			for a := 0; a < k; a++ {
				s += fr[a] * hm[a*k+b]
			}
			quad += s * fr[b]
			gf[b] = inv * (di*o.m[b] - s)
		}
		gpsi := 0.5*inv*inv*(di*di-2*di*fm+quad) - 0.5*inv
		for b := 0; b < k; b++ {
			fr[b] += lr * gf[b]
		}
		o.gamma[i] += lr * gpsi * o.psi[i]
		o.psi[i] = math.Exp(o.gamma[i])
	}
}
