package faexp

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/edgebnn/edgebnn/train/fa"
)

// OnlineConfig is one online-FA experiment of thesis 001 §5.1.
type OnlineConfig struct {
	D, K        int
	Lo, Hi      float64 // spectrum range of s²
	Checkpoints []int   // sample sizes T at which the estimates are compared (increasing)
	Warmup      int     // 100
	SGALR       float64 // 0.001
	// EMStepExponent > 0 adds online EM as stochastic approximation with step t^(−α) and
	// Polyak–Ruppert averaging of the statistics after EMAverageAfter observations
	// (fa.OnlineConfig.StepExponent, AverageAfter); 0 leaves it out.
	// EMStepDelay is fa.OnlineConfig.StepDelay (step 1/t for the first EMStepDelay observations).
	EMStepExponent float64
	EMStepDelay    int
	EMAverageAfter int
	// EMRecenter adds a second averaged online EM with re-centred statistics
	// (fa.OnlineConfig.Recenter; needs EMStepExponent).
	EMRecenter bool
	// Weighted adds online EM with observation weights ∝ t (fa.OnlineConfig.Weighting = 1).
	Weighted bool
	// SkipBatch leaves out the batch ML fit.
	SkipBatch bool
	// BatchMaxIter bounds the EM iterations of each batch fit (0: fa.FitML's default).
	BatchMaxIter int
	// BatchCold starts every batch fit from probabilistic PCA; otherwise fits at T ≥ 2D start
	// from the previous checkpoint's fit.
	BatchCold bool
	// W2 also records every estimate's 2-Wasserstein distance from the true Gaussian divided by
	// D (thesis 001's Figure 5.2 / Table A.2), O(D³) per estimate and checkpoint.
	W2 bool
}

// DefaultCheckpoints are the sample sizes T of the thesis's Figure 5.1.
var DefaultCheckpoints = []int{100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000}

// OnlineResult holds, per checkpoint, the relative covariance distance of each estimate from the
// true FA model.
type OnlineResult struct {
	T       []int
	EM, SGA []float64
	// EMAveraged is online EM with step t^(−α) and averaged statistics (OnlineConfig.EMStepExponent).
	EMAveraged []float64 `json:",omitempty"`
	// EMRecentred is EMAveraged with re-centred statistics (OnlineConfig.EMRecenter).
	EMRecentred []float64 `json:",omitempty"`
	// EMWeighted is online EM with observation weights ∝ t (OnlineConfig.Weighted).
	EMWeighted []float64 `json:",omitempty"`
	Batch      []float64 `json:",omitempty"`
	BatchIters []int     `json:",omitempty"`
	// BatchConverged reports, per checkpoint, whether the batch fit met its tolerance.
	BatchConverged []bool `json:",omitempty"`
	// W2 holds, when OnlineConfig.W2 is set, the same estimates' W2/D.
	W2      *OnlineW2 `json:",omitempty"`
	Elapsed time.Duration
}

// OnlineW2 is the scaled 2-Wasserstein distance W2/D of each estimate from the true Gaussian, per
// checkpoint (fields as OnlineResult's).
type OnlineW2 struct {
	EM, SGA     []float64
	EMAveraged  []float64 `json:",omitempty"`
	EMRecentred []float64 `json:",omitempty"`
	EMWeighted  []float64 `json:",omitempty"`
	Batch       []float64 `json:",omitempty"`
}

// OnlineFA generates an FA model (Algorithm 4) from seed, streams T_max observations from it into
// online EM, online SGA and a moment accumulator, and at each checkpoint records
// ‖Σ_est − Σ‖_F / ‖Σ‖_F for the two online estimates and for the batch ML fit (EM to convergence).
func OnlineFA(cfg OnlineConfig, seed uint64) (*OnlineResult, error) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(seed, 0xfa0))
	truth, err := fa.Generate(rng, cfg.D, cfg.K, cfg.Lo, cfg.Hi)
	if err != nil {
		return nil, err
	}
	ocfg := fa.OnlineConfig{Rank: cfg.K, Warmup: cfg.Warmup, LR: cfg.SGALR, Seed: seed}
	em, err := fa.NewOnlineEM(cfg.D, ocfg)
	if err != nil {
		return nil, err
	}
	sga, err := fa.NewOnlineSGA(cfg.D, ocfg)
	if err != nil {
		return nil, err
	}
	ests := []*fa.Online{em, sga}
	var emw, ema, emr *fa.Online
	if cfg.Weighted {
		wcfg := ocfg
		wcfg.Weighting = 1
		if emw, err = fa.NewOnlineEM(cfg.D, wcfg); err != nil {
			return nil, err
		}
		ests = append(ests, emw)
	}
	if cfg.EMStepExponent != 0 {
		acfg := ocfg
		acfg.StepExponent, acfg.StepDelay, acfg.AverageAfter = cfg.EMStepExponent, cfg.EMStepDelay, cfg.EMAverageAfter
		if ema, err = fa.NewOnlineEM(cfg.D, acfg); err != nil {
			return nil, err
		}
		ests = append(ests, ema)
		if cfg.EMRecenter {
			acfg.Recenter = true
			if emr, err = fa.NewOnlineEM(cfg.D, acfg); err != nil {
				return nil, err
			}
			ests = append(ests, emr)
		}
	} else if cfg.EMRecenter {
		return nil, fmt.Errorf("faexp: re-centring needs the averaged online EM (EMStepExponent)")
	}
	var mom *fa.Moments
	if !cfg.SkipBatch {
		if mom, err = fa.NewMoments(cfg.D); err != nil {
			return nil, err
		}
	}
	res := &OnlineResult{}
	var w2ref *fa.W2Ref
	if cfg.W2 {
		if w2ref, err = fa.NewW2Ref(truth); err != nil {
			return nil, err
		}
		res.W2 = &OnlineW2{}
	}
	// w2 appends est's W2/D to *dst (when W2 is on).
	w2 := func(dst *[]float64, est *fa.Model) error {
		if w2ref == nil {
			return nil
		}
		v, err := w2ref.Distance(est)
		if err != nil {
			return err
		}
		*dst = append(*dst, v/float64(cfg.D))
		return nil
	}
	var prev *fa.Model
	theta := make([]float64, cfg.D)
	t := 0
	for _, cp := range cfg.Checkpoints {
		for ; t < cp; t++ {
			truth.Sample(rng, theta)
			for _, e := range ests {
				if err := e.Observe(theta); err != nil {
					return nil, err
				}
			}
			if mom != nil {
				if err := mom.Add(theta); err != nil {
					return nil, err
				}
			}
		}
		res.T = append(res.T, cp)
		dEM, err := fa.RelCovDistance(em.Model(), truth)
		if err != nil {
			return nil, err
		}
		dSGA, err := fa.RelCovDistance(sga.Model(), truth)
		if err != nil {
			return nil, err
		}
		if emw != nil {
			dEMW, err := fa.RelCovDistance(emw.Model(), truth)
			if err != nil {
				return nil, err
			}
			res.EMWeighted = append(res.EMWeighted, dEMW)
		}
		if ema != nil {
			dEMA, err := fa.RelCovDistance(ema.Model(), truth)
			if err != nil {
				return nil, err
			}
			res.EMAveraged = append(res.EMAveraged, dEMA)
		}
		if emr != nil {
			dEMR, err := fa.RelCovDistance(emr.Model(), truth)
			if err != nil {
				return nil, err
			}
			res.EMRecentred = append(res.EMRecentred, dEMR)
		}
		res.EM = append(res.EM, dEM)
		res.SGA = append(res.SGA, dSGA)
		if res.W2 != nil {
			for _, e := range []struct {
				dst *[]float64
				est *fa.Online
			}{{&res.W2.EM, em}, {&res.W2.SGA, sga}, {&res.W2.EMWeighted, emw}, {&res.W2.EMAveraged, ema}, {&res.W2.EMRecentred, emr}} {
				if e.est == nil {
					continue
				}
				if err := w2(e.dst, e.est.Model()); err != nil {
					return nil, err
				}
			}
		}
		if mom != nil {
			mcfg := fa.MLConfig{MaxIter: cfg.BatchMaxIter}
			if cp >= 2*cfg.D && !cfg.BatchCold {
				mcfg.Init = prev
			}
			fit, info, err := fa.FitML(mom.Mean(), mom.Covariance(), cfg.D, cfg.K, mcfg)
			if err != nil {
				return nil, fmt.Errorf("faexp: batch fit at T=%d: %w", cp, err)
			}
			dB, err := fa.RelCovDistance(fit, truth)
			if err != nil {
				return nil, err
			}
			res.Batch = append(res.Batch, dB)
			if res.W2 != nil {
				if err := w2(&res.W2.Batch, fit); err != nil {
					return nil, err
				}
			}
			res.BatchIters = append(res.BatchIters, info.Iterations)
			res.BatchConverged = append(res.BatchConverged, info.Converged)
			prev = fit
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
