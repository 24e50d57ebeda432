package runtime

import (
	"errors"
	"fmt"
	"math"
)

// Adaptive sampling (Options.Adaptive; docs/ADAPTIVE.md states the test and its error bound).
//
// The samples of a prediction are drawn in rounds. After a round with k of the K samples drawn,
// each input's decision is tested: would the policy decide the same with all K samples? Every
// statistic the policy thresholds is a smooth function of sample means of bounded per-sample
// values, so its full-K value T_K differs from the running value T_k by
//
//	T_K − T_k = ((K − k)/K)·(mean of the K − k samples to come − T_k),
//
// whose standard deviation is σ·√((K − k)/(K·k)) for per-sample spread σ (estimated from the k
// samples). A threshold is settled when it lies more than q·σ̂·√((K − k)/(K·k)) from T_k (plus,
// for the mutual information, the first-order bias of the plug-in entropy), with q the Student-t
// quantile (k − 1 degrees of freedom) at level δ/(looks · thresholds): by the union bound the
// decision then differs from the full-K one with probability at most δ, under the normal
// approximation. The input stops when its decision is settled — every threshold settled on the
// side that acts, or one settled on the side that abstains; under a policy without thresholds
// (every input acts) after the first round.

// adaptive is a Predictor's adaptive-sampling state.
type adaptive struct {
	round int
	k     int       // Options.Samples: the stride of vals and h
	q     []float64 // q[l]: the quantile at look l (after (l+1)·round samples)
	vals  []float32 // per input and sample: the softmax probabilities, or the regression outputs
	h     []float64 // per input and sample: the softmax entropy
	done  []bool
	// always: the policy sets no threshold, so every decision is act, settled by the first
	// round.
	always bool
}

// setAdaptive validates the adaptive options (filling defaults) and prepares the quantiles;
// the buffers are allocated by allocAdaptive once the memory check has passed.
func (p *Predictor) setAdaptive() error {
	o := &p.opts
	if !o.Adaptive {
		return nil
	}
	if o.AdaptiveRound == 0 {
		o.AdaptiveRound = 8
	}
	if o.AdaptiveDelta == 0 {
		o.AdaptiveDelta = 0.01
	}
	if o.AdaptiveRound < 4 || o.AdaptiveRound > 1<<20 {
		return fmt.Errorf("runtime: adaptive round of %d samples is out of range (4 to %d)", o.AdaptiveRound, 1<<20)
	}
	if !(o.AdaptiveDelta > 0 && o.AdaptiveDelta < 1) {
		return fmt.Errorf("runtime: adaptive delta %g must be in (0, 1)", o.AdaptiveDelta)
	}
	if p.policy == nil {
		return errors.New("runtime: adaptive sampling needs a policy (Options.Policy or the model's; edgebnn calibrate writes one)")
	}
	if o.Samples <= 1 {
		o.Adaptive = false // one sample (a deterministic model, Mean): nothing to adapt
		return nil
	}
	// Rounds are whole sample blocks — for a mixture of M posteriors, a whole block of every
	// member (M blocks) — so that the samples are drawn exactly as without Adaptive.
	unit := p.block
	if p.m.parts != nil {
		unit *= len(p.m.parts)
	}
	o.AdaptiveRound = (o.AdaptiveRound + unit - 1) / unit * unit
	return nil
}

func (p *Predictor) allocAdaptive() {
	o := p.opts
	if !o.Adaptive {
		return
	}
	n, c := o.MaxBatch, p.m.outShape.size()
	a := &adaptive{round: o.AdaptiveRound, k: o.Samples,
		vals: make([]float32, n*o.Samples*c), h: make([]float64, n*o.Samples), done: make([]bool, n)}
	looks := (o.Samples+a.round-1)/a.round - 1
	thresholds := 0
	for _, t := range []*float64{p.policy.MinConfidence, p.policy.MaxMutualInfo, p.policy.MaxEpistemicStd} {
		if t != nil {
			thresholds++
		}
	}
	if thresholds == 0 {
		a.always = true
		p.adapt = a
		return
	}
	alpha := o.AdaptiveDelta / float64(max(looks, 1)*thresholds)
	for l := range max(looks, 0) {
		a.q = append(a.q, studentQuantile(1-alpha, float64((l+1)*a.round-1)))
	}
	p.adapt = a
}

// studentQuantile is the quantile of Student's t distribution with nu degrees of freedom at
// probability pr (> 0.5), from the normal quantile by the Cornish–Fisher expansion to 1/ν⁴
// (Abramowitz & Stegun 26.7.5): within 3 % for ν ≥ 3 at the levels used here, exact as ν → ∞.
func studentQuantile(pr, nu float64) float64 {
	z := math.Sqrt2 * math.Erfinv(2*pr-1)
	z2 := z * z
	g1 := (z2 + 1) * z / 4
	g2 := ((5*z2+16)*z2 + 3) * z / 96
	g3 := (((3*z2+19)*z2+17)*z2 - 15) * z / 384
	g4 := ((((79*z2+776)*z2+1482)*z2-1920)*z2 - 945) * z / 92160
	return z + g1/nu + g2/(nu*nu) + g3/(nu*nu*nu) + g4/(nu*nu*nu*nu)
}

// settled reports whether input i's decision after k of the K samples is, by the test above,
// the decision all K samples would give.
func (a *adaptive) settled(p *Predictor, i, k, K int) bool {
	if k >= K || a.always && k >= a.round {
		return true
	}
	look := k/a.round - 1
	if look < 0 || look >= len(a.q) {
		return false
	}
	f := a.q[look] * math.Sqrt(float64(K-k)/(float64(K)*float64(k)))
	c := p.m.outShape.size()
	vals := a.vals[i*a.k*c : i*a.k*c+k*c]
	sum := p.sum[i*c : (i+1)*c]
	fk := float64(k)
	pol := p.policy
	if p.m.regression {
		return a.settledRegression(vals, sum, p.shift[i*c:(i+1)*c], c, k, K, f, *pol.MaxEpistemicStd)
	}
	// The per-class sample means and standard deviations of the softmax probabilities.
	var top int
	for j := range sum {
		if sum[j] > sum[top] {
			top = j
		}
	}
	sd := func(j int) float64 {
		mu := sum[j] / fk
		ss := 0.0
		for s := 0; s < k; s++ {
			d := float64(vals[s*c+j]) - mu
			ss += d * d
		}
		return math.Sqrt(ss / (fk - 1))
	}
	pass, fail := true, false
	if pol.MinConfidence != nil {
		t := *pol.MinConfidence
		switch {
		case sum[top]/fk-f*sd(top) >= t:
		default:
			pass = false
			all := true
			for j := range sum {
				if !(sum[j]/fk+f*sd(j) < t) {
					all = false
					break
				}
			}
			fail = fail || all
		}
	}
	if pol.MaxMutualInfo != nil {
		t := *pol.MaxMutualInfo
		hs := a.h[i*a.k : i*a.k+k]
		hbar := p.entropySum(i) / fk
		hp, bias := 0.0, 0.0
		for j := range sum {
			if mu := sum[j] / fk; mu > 0 {
				hp -= mu * math.Log(mu)
				v := sd(j)
				bias += v * v / mu
			}
		}
		// E[H(p̄_k)] ≈ H(p) − Σ_j Var_j/(2k·p_j): the full-K estimate is expected to exceed
		// the running one by half of (1/k − 1/K)·Σ_j Var_j/p_j.
		mi := hp - hbar + 0.5*(1/fk-1/float64(K))*bias
		// Influence of each sample on the mutual information (delta method).
		ss := 0.0
		for s := 0; s < k; s++ {
			psi := -(hs[s] - hbar)
			for j := range sum {
				if mu := sum[j] / fk; mu > 0 {
					psi -= math.Log(mu) * (float64(vals[s*c+j]) - mu)
				}
			}
			ss += psi * psi
		}
		r := f * math.Sqrt(ss/(fk-1))
		switch {
		case mi+r <= t:
		case mi-r > t:
			pass, fail = false, true
		default:
			pass = false
		}
	}
	return fail || pass
}

// settledRegression is settled for a regression policy: the largest epistemic variance of the
// outputs against limit².
func (a *adaptive) settledRegression(vals []float32, sum, shift []float64, c, k, K int, f, limit float64) bool {
	fk, fK := float64(k), float64(K)
	l2 := limit * limit
	pass := true
	for j := range sum {
		mu := shift[j] + sum[j]/fk // sum adds the deviations from shift (Predictor.shift)
		m2, m4 := 0.0, 0.0
		for s := 0; s < k; s++ {
			d := float64(vals[s*c+j]) - mu
			d2 := d * d
			m2 += d2
			m4 += d2 * d2
		}
		m2 /= fk
		m4 /= fk
		// The predictor reports the population variance; its expectation with K samples is
		// σ²(K − 1)/K, estimated from k samples as m2·k/(k − 1)·(K − 1)/K.
		pred := m2 * fk / (fk - 1) * (fK - 1) / fK
		r := f * math.Sqrt(math.Max(m4-m2*m2, 0))
		switch {
		case pred-r > l2:
			return true // this output abstains whatever the others do
		case !(pred+r <= l2):
			pass = false
		}
	}
	return pass
}
