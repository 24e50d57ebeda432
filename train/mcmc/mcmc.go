// Package mcmc is a reference posterior sampler: Hamiltonian Monte Carlo with the No-U-Turn
// Sampler (NUTS) and convergence diagnostics, meant as ground truth for approximate inference on
// small models.
//
// The sampler follows Stan's implementation of NUTS: the multinomial variant of Hoffman and
// Gelman's tree doubling (Betancourt 2017, appendix A), in which each new subtree is accepted with
// a biased progressive draw and points inside a subtree are drawn in proportion to exp(−H); the
// generalized no-U-turn criterion on the summed momentum ρ, checked across every merged subtree
// and across the two "extended" subtrees that straddle a merge, as current Stan does; a leapfrog
// integrator with a diagonal inverse metric; divergence when the energy error exceeds
// Config.MaxEnergyError (a non-finite log density or gradient counts as a divergence); step-size
// adaptation by Nesterov dual averaging (γ = 0.05, t₀ = 10, κ = 0.75, μ = log 10ε); and diagonal
// metric adaptation in Stan's windowed warm-up (an initial fast buffer of 75 iterations, slow
// windows starting at 25 and doubling, a terminal fast buffer of 50; each window's variance is
// regularised towards 10⁻³ as n/(n+5)·σ² + 10⁻³·5/(n+5)). Static HMC with a fixed number of
// leapfrog steps is available as Config.Algorithm = StaticHMC.
//
// Chains run concurrently, each with its own math/rand/v2 PCG stream seeded from (Config.Seed,
// chain index); the draws do not depend on scheduling or GOMAXPROCS, so the same Config gives
// bit-identical draws on one architecture (compilers may fuse multiply-adds differently on
// others).
//
// The diagnostics are those of Vehtari, Gelman, Simpson, Carpenter and Bürkner (2021),
// "Rank-normalization, folding, and localization: an improved R̂ for assessing convergence of
// MCMC", Bayesian Analysis 16(2), as implemented in the R package posterior: split-R̂ on
// rank-normalised and on folded draws, bulk ESS on rank-normalised split chains, tail ESS from the
// 5 % and 95 % quantile indicators, autocorrelations by FFT and Geyer's initial monotone sequence.
//
// References: M. D. Hoffman and A. Gelman (2014), "The No-U-Turn Sampler", JMLR 15;
// M. Betancourt (2017), "A Conceptual Introduction to Hamiltonian Monte Carlo", arXiv:1701.02434;
// the Stan Reference Manual, chapter "MCMC Sampling".
//
// A run:
//
//	cfg := mcmc.DefaultConfig()
//	res, err := mcmc.Sample(ctx, logp, dim, cfg)
//	for j, s := range res.Summary() { ... s.Rhat, s.ESSBulk ... }
package mcmc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// LogDensity evaluates an unnormalised log density at x (a point of the unconstrained space) and
// writes its gradient ∇ log p(x) into grad (caller-owned, len(grad) == len(x)). It must not keep
// x or grad. A non-finite return value or gradient is treated as a divergence (the trajectory
// stops there), never as an error. Unless Config.Parallelism is 1 it is called concurrently from
// several chains and must then be safe for concurrent use.
type LogDensity func(x, grad []float64) float64

// Algorithm selects the transition kernel.
type Algorithm int

const (
	// NUTS is the No-U-Turn sampler (the default).
	NUTS Algorithm = iota
	// StaticHMC is HMC with Config.NumSteps leapfrog steps per transition and a Metropolis
	// accept/reject on the final point.
	StaticHMC
)

// String returns "NUTS" or "StaticHMC".
func (a Algorithm) String() string {
	switch a {
	case NUTS:
		return "NUTS"
	case StaticHMC:
		return "StaticHMC"
	}
	return fmt.Sprintf("Algorithm(%d)", int(a))
}

// Config configures Sample. Start from DefaultConfig; the zero value is not valid.
type Config struct {
	// Algorithm is NUTS (default) or StaticHMC.
	Algorithm Algorithm
	// Chains is the number of independent chains (default 4).
	Chains int
	// Warmup is the number of adaptation iterations per chain, discarded (default 1000). With
	// fewer than 20 the metric is not adapted; 0 disables adaptation altogether.
	Warmup int
	// Draws is the number of kept iterations per chain (default 1000).
	Draws int
	// Seed seeds every chain's PCG stream together with the chain index (default 1).
	Seed uint64
	// MaxTreeDepth caps NUTS trajectories at 2^MaxTreeDepth leapfrog steps (default 10).
	MaxTreeDepth int
	// NumSteps is StaticHMC's number of leapfrog steps per transition (default 16).
	NumSteps int
	// JitterSteps makes StaticHMC draw each transition's number of leapfrog steps uniformly from
	// [⌈NumSteps/2⌉, NumSteps + ⌊NumSteps/2⌋] (mean NumSteps) instead of always NumSteps, so that
	// a trajectory length near a multiple of some direction's period cannot make the chain
	// oscillate (Neal 2011, §5.4.2.2; DefaultConfig: true).
	JitterSteps bool
	// TargetAccept is dual averaging's target mean acceptance statistic, in (0, 1) (default 0.8).
	TargetAccept float64
	// MaxEnergyError is the energy error H − H₀ above which a leapfrog step is divergent
	// (default 1000).
	MaxEnergyError float64
	// StepSize is the initial (or, without adaptation, fixed) leapfrog step size (default 1).
	StepSize float64
	// AdaptStepSize turns dual-averaging step-size adaptation during warm-up on (default true).
	AdaptStepSize bool
	// AdaptMetric turns windowed diagonal-metric adaptation during warm-up on (default true).
	AdaptMetric bool
	// InitBuffer, TermBuffer and BaseWindow are the warm-up schedule: an initial fast interval,
	// a terminal fast interval and the first slow window (defaults 75, 50, 25). When they do
	// not fit in Warmup they become 15 %, 10 % and the rest of it, as in Stan.
	InitBuffer, TermBuffer, BaseWindow int
	// InvMetric is the initial diagonal inverse metric (the posterior variances' guess), of
	// length dim, all entries finite and positive; nil means all ones (default nil).
	InvMetric []float64
	// InitRadius draws each chain's initial point uniformly from (−InitRadius, InitRadius)^dim,
	// retried up to 100 times until the log density and its gradient are finite (default 2).
	InitRadius float64
	// Inits, if not nil, gives the initial points: one per chain, or a single one for every
	// chain (default nil).
	Inits [][]float64
	// Parallelism bounds the number of chains run at once; 0 means GOMAXPROCS (default 0).
	// With 1 the LogDensity is never called concurrently.
	Parallelism int
	// Progress, if not nil, is called after each iteration (warm-up included) of every chain with
	// the chain's index and the number of its iterations done so far. Chains call it from their
	// own goroutines, so unless Parallelism is 1 it must be safe for concurrent use; it must not
	// block for long (default nil).
	Progress func(chain, done int)
}

// DefaultConfig returns the documented defaults: NUTS, 4 chains of 1000 warm-up and 1000 kept
// iterations, seed 1, tree depth 10, target acceptance 0.8, divergence at an energy error of
// 1000, both adaptations on with Stan's 75/25/50 schedule, initial points in (−2, 2).
func DefaultConfig() Config {
	return Config{
		Algorithm:      NUTS,
		Chains:         4,
		Warmup:         1000,
		Draws:          1000,
		Seed:           1,
		MaxTreeDepth:   10,
		NumSteps:       16,
		JitterSteps:    true,
		TargetAccept:   0.8,
		MaxEnergyError: 1000,
		StepSize:       1,
		AdaptStepSize:  true,
		AdaptMetric:    true,
		InitBuffer:     75,
		TermBuffer:     50,
		BaseWindow:     25,
		InitRadius:     2,
	}
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// Validate checks c for a model of dimension dim; errors name the offending field.
func (c Config) Validate(dim int) error {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("mcmc: Config.%s = %v: %s", field, v, want)
	}
	switch {
	case dim < 1:
		return fmt.Errorf("mcmc: dimension %d: must be at least 1", dim)
	case c.Algorithm != NUTS && c.Algorithm != StaticHMC:
		return bad("Algorithm", c.Algorithm, "must be NUTS or StaticHMC")
	case c.Chains < 1:
		return bad("Chains", c.Chains, "must be at least 1 (start from DefaultConfig)")
	case c.Warmup < 0:
		return bad("Warmup", c.Warmup, "must not be negative")
	case c.Draws < 1:
		return bad("Draws", c.Draws, "must be at least 1")
	case c.Algorithm == NUTS && (c.MaxTreeDepth < 1 || c.MaxTreeDepth > 30):
		return bad("MaxTreeDepth", c.MaxTreeDepth, "must be in [1, 30]")
	case c.Algorithm == StaticHMC && c.NumSteps < 1:
		return bad("NumSteps", c.NumSteps, "must be at least 1")
	case !(c.TargetAccept > 0 && c.TargetAccept < 1):
		return bad("TargetAccept", c.TargetAccept, "must be in (0, 1)")
	case !finitePositive(c.MaxEnergyError):
		return bad("MaxEnergyError", c.MaxEnergyError, "must be finite and positive")
	case !finitePositive(c.StepSize):
		return bad("StepSize", c.StepSize, "must be finite and positive")
	case c.InitBuffer < 0:
		return bad("InitBuffer", c.InitBuffer, "must not be negative")
	case c.TermBuffer < 0:
		return bad("TermBuffer", c.TermBuffer, "must not be negative")
	case c.BaseWindow < 1:
		return bad("BaseWindow", c.BaseWindow, "must be at least 1")
	case !finitePositive(c.InitRadius):
		return bad("InitRadius", c.InitRadius, "must be finite and positive")
	case c.Parallelism < 0:
		return bad("Parallelism", c.Parallelism, "must not be negative")
	}
	if c.InvMetric != nil {
		if len(c.InvMetric) != dim {
			return bad("InvMetric", fmt.Sprintf("len %d", len(c.InvMetric)), fmt.Sprintf("want length %d", dim))
		}
		for i, v := range c.InvMetric {
			if !finitePositive(v) {
				return bad(fmt.Sprintf("InvMetric[%d]", i), v, "must be finite and positive")
			}
		}
	}
	if c.Inits != nil {
		if len(c.Inits) != 1 && len(c.Inits) != c.Chains {
			return bad("Inits", fmt.Sprintf("%d points", len(c.Inits)), fmt.Sprintf("want 1 or Chains = %d", c.Chains))
		}
		for k, x := range c.Inits {
			if len(x) != dim {
				return bad(fmt.Sprintf("Inits[%d]", k), fmt.Sprintf("len %d", len(x)), fmt.Sprintf("want length %d", dim))
			}
			for i, v := range x {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return bad(fmt.Sprintf("Inits[%d][%d]", k, i), v, "must be finite")
				}
			}
		}
	}
	return nil
}

// DrawStats are one iteration's sampler statistics (Stan's lp__, accept_stat__, treedepth__,
// n_leapfrog__, divergent__, energy__).
type DrawStats struct {
	// LogDensity is log p of the draw.
	LogDensity float64
	// AcceptStat is NUTS's mean Metropolis acceptance probability over the trajectory, or
	// StaticHMC's acceptance probability.
	AcceptStat float64
	// TreeDepth is the number of NUTS doublings (0 for StaticHMC).
	TreeDepth int
	// Leapfrog is the number of leapfrog steps (gradient evaluations) taken.
	Leapfrog int
	// Divergent reports an energy error above Config.MaxEnergyError or a non-finite density.
	Divergent bool
	// Energy is the Hamiltonian at the draw.
	Energy float64
}

// ChainInfo summarises one chain's kept iterations and final adaptation.
type ChainInfo struct {
	// Divergences counts divergent kept iterations; WarmupDivergences those during warm-up.
	Divergences, WarmupDivergences int
	// MaxDepthHits counts kept NUTS iterations that stopped at Config.MaxTreeDepth.
	MaxDepthHits int
	// MeanTreeDepth and MeanAcceptStat average DrawStats over the kept iterations.
	MeanTreeDepth, MeanAcceptStat float64
	// Leapfrog is the total number of leapfrog steps, warm-up included.
	Leapfrog int
	// StepSize is the step size used for the kept iterations.
	StepSize float64
	// InvMetric is the diagonal inverse metric used for the kept iterations.
	InvMetric []float64
}

// Result holds the kept draws of every chain.
type Result struct {
	// Dim, Chains and Draws are the shape of Samples.
	Dim, Chains, Draws int
	// Samples is [chain][draw][dim] flattened: draw i of chain c is
	// Samples[(c*Draws+i)*Dim : (c*Draws+i+1)*Dim].
	Samples []float64
	// Stats is [chain][draw].
	Stats [][]DrawStats
	// Info is per chain.
	Info []ChainInfo
}

// Draw returns draw i of chain c (a view into Samples).
func (r *Result) Draw(c, i int) []float64 {
	k := (c*r.Draws + i) * r.Dim
	return r.Samples[k : k+r.Dim : k+r.Dim]
}

// Param returns parameter j's draws as [chain][draw], the input of the diagnostics.
func (r *Result) Param(j int) [][]float64 {
	out := make([][]float64, r.Chains)
	for c := range out {
		out[c] = make([]float64, r.Draws)
		for i := range out[c] {
			out[c][i] = r.Samples[(c*r.Draws+i)*r.Dim+j]
		}
	}
	return out
}

// Thin returns a Result keeping every k-th draw of each chain (draws 0, k, 2k, …) with their
// stats; Info is shared. It returns an error if k < 1.
func (r *Result) Thin(k int) (*Result, error) {
	if k < 1 {
		return nil, fmt.Errorf("mcmc: thinning interval %d: must be at least 1", k)
	}
	n := (r.Draws + k - 1) / k
	out := &Result{Dim: r.Dim, Chains: r.Chains, Draws: n, Samples: make([]float64, 0, r.Chains*n*r.Dim),
		Stats: make([][]DrawStats, r.Chains), Info: r.Info}
	for c := 0; c < r.Chains; c++ {
		for i := 0; i < r.Draws; i += k {
			out.Samples = append(out.Samples, r.Draw(c, i)...)
			out.Stats[c] = append(out.Stats[c], r.Stats[c][i])
		}
	}
	return out, nil
}

// Flatten returns every k-th draw of each chain, chains concatenated in order, as copies
// ([draw][dim]); k < 1 is treated as 1.
func (r *Result) Flatten(k int) [][]float64 {
	k = max(k, 1)
	var out [][]float64
	for c := 0; c < r.Chains; c++ {
		for i := 0; i < r.Draws; i += k {
			out = append(out, append([]float64(nil), r.Draw(c, i)...))
		}
	}
	return out
}

// Summary returns Summarize of every parameter.
func (r *Result) Summary() []Summary {
	out := make([]Summary, r.Dim)
	for j := range out {
		out[j] = Summarize(r.Param(j))
	}
	return out
}

// Divergences returns the number of divergent kept iterations over all chains.
func (r *Result) Divergences() int {
	n := 0
	for _, in := range r.Info {
		n += in.Divergences
	}
	return n
}

// Sample runs cfg.Chains chains of cfg.Warmup + cfg.Draws iterations on the density f of
// dimension dim. It returns an error for an invalid Config, a chain without a finite initial
// point, a failed step-size initialisation, or ctx's error when cancelled.
func Sample(ctx context.Context, f LogDensity, dim int, cfg Config) (*Result, error) {
	if f == nil {
		return nil, errors.New("mcmc: nil LogDensity")
	}
	if err := cfg.Validate(dim); err != nil {
		return nil, err
	}
	res := &Result{Dim: dim, Chains: cfg.Chains, Draws: cfg.Draws,
		Samples: make([]float64, cfg.Chains*cfg.Draws*dim),
		Stats:   make([][]DrawStats, cfg.Chains), Info: make([]ChainInfo, cfg.Chains)}
	par := cfg.Parallelism
	if par == 0 {
		par = runtime.GOMAXPROCS(0)
	}
	errs := make([]error, cfg.Chains)
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for c := 0; c < cfg.Chains; c++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := runChain(ctx, f, dim, &cfg, c, res); err != nil {
				errs[c] = fmt.Errorf("mcmc: chain %d: %w", c, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return res, nil
}

// runChain runs chain c and writes its draws, stats and info into res.
func runChain(ctx context.Context, f LogDensity, dim int, cfg *Config, c int, res *Result) error {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)))
	s := newSampler(f, dim, cfg, rng)
	if err := s.init(cfg, c); err != nil {
		return err
	}
	info := &res.Info[c]
	stats := make([]DrawStats, cfg.Draws)
	var da dualAveraging
	var win windows
	var est welford
	adaptStep := cfg.Warmup > 0 && cfg.AdaptStepSize
	adaptMetric := cfg.Warmup >= 20 && cfg.AdaptMetric
	if adaptStep {
		if err := s.initStepSize(); err != nil {
			return err
		}
		da.restart(s.eps, cfg.TargetAccept)
	}
	if adaptMetric {
		win = newWindows(cfg.Warmup, cfg.InitBuffer, cfg.TermBuffer, cfg.BaseWindow)
		est = newWelford(dim)
	}
	for it := 0; it < cfg.Warmup+cfg.Draws; it++ {
		if it%64 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		warm := it < cfg.Warmup
		st := s.transition()
		info.Leapfrog += st.Leapfrog
		if cfg.Progress != nil {
			cfg.Progress(c, it+1)
		}
		if warm {
			if st.Divergent {
				info.WarmupDivergences++
			}
			if adaptStep {
				s.eps = da.learn(st.AcceptStat)
			}
			if adaptMetric && win.learn(&est, s.q) {
				est.regularisedVariance(s.invM)
				est.reset()
				if adaptStep {
					if err := s.initStepSize(); err != nil {
						return err
					}
					da.restart(s.eps, cfg.TargetAccept)
				}
			}
			if it == cfg.Warmup-1 && adaptStep {
				s.eps = da.final()
			}
			continue
		}
		i := it - cfg.Warmup
		stats[i] = st
		copy(res.Samples[(c*cfg.Draws+i)*dim:], s.q)
		if st.Divergent {
			info.Divergences++
		}
		if cfg.Algorithm == NUTS && st.TreeDepth >= cfg.MaxTreeDepth {
			info.MaxDepthHits++
		}
		info.MeanTreeDepth += float64(st.TreeDepth)
		info.MeanAcceptStat += st.AcceptStat
	}
	info.MeanTreeDepth /= float64(cfg.Draws)
	info.MeanAcceptStat /= float64(cfg.Draws)
	info.StepSize = s.eps
	info.InvMetric = append([]float64(nil), s.invM...)
	res.Stats[c] = stats
	return nil
}
