package fa

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// saStep is online EM as stochastic approximation on the sufficient statistics with step
// ρ_t = t^(−α) (OnlineConfig.StepExponent), optional Polyak–Ruppert averaging of the statistics,
// and the M-step F = Ā B̄⁻¹, ψ = d̄² − rowsum(F ⊙ Ā) on the current statistics.
func (o *Online) saStep(update bool) error {
	d, k := o.d, o.k
	t0 := float64(max(o.cfg.StepDelay, 1))
	t := float64(o.t)
	rho := 1 / t
	if t > t0 {
		rho = math.Pow(t0/t, o.cfg.StepExponent) / t0
	}
	for a := 0; a < k; a++ {
		for b := 0; b < k; b++ {
			o.bbar[a*k+b] += rho * (o.sigma[a*k+b] + o.m[a]*o.m[b] - o.bbar[a*k+b])
		}
	}
	for i := 0; i < d; i++ {
		di := o.dt[i]
		row := o.abar[i*k : (i+1)*k]
		for j := range row {
			row[j] += rho * (di*o.m[j] - row[j])
		}
		o.d2bar[i] += rho * (di*di - o.d2bar[i])
	}
	if o.betabar != nil {
		// β_tᵀ = Cᵀ Σ_t, row by row (Cᵀ = o.ct and Σ_t = o.sigma of this E-step).
		for i := 0; i < d; i++ {
			ci := o.ct[i*k : (i+1)*k]
			row := o.betabar[i*k : (i+1)*k]
			for b := range row {
				s := 0.0
				for a, c := range ci {
					s += c * o.sigma[a*k+b]
				}
				row[b] += rho * (s - row[b])
			}
		}
	}
	if o.aavg != nil && o.t > o.cfg.AverageAfter {
		o.avgW++
		g := 1 / o.avgW
		for p, v := range o.abar {
			o.aavg[p] += g * (v - o.aavg[p])
		}
		for p, v := range o.bbar {
			o.bavg[p] += g * (v - o.bavg[p])
		}
		for p, v := range o.d2bar {
			o.d2avg[p] += g * (v - o.d2avg[p])
		}
		for p, v := range o.betabar {
			o.betaavg[p] += g * (v - o.betaavg[p])
		}
	}
	if !update {
		return nil
	}
	if err := mStep(o.abar, o.bbar, o.d2bar, d, k, o.f, o.psi); err != nil {
		return fmt.Errorf("fa: online em: M-step after %d observations: %w", o.t, err)
	}
	return nil
}

// mStep writes F = A H⁻¹ and ψ = d2 − rowsum(F ⊙ A) (floored at 10⁻⁸ d2) into f and psi.
// (With F = A H⁻¹, F H = A, so this is eq. 4.35's d̄² + rowsum((F H) ⊙ F − 2 F ⊙ A).)
func mStep(a, h, d2 []float64, d, k int, f, psi []float64) error {
	hinv, err := spdInverse(symmetrize(append([]float64(nil), h...), k), k)
	if err != nil {
		return fmt.Errorf("H̄: %w", err)
	}
	for i := 0; i < d; i++ {
		ar := a[i*k : (i+1)*k]
		fr := f[i*k : (i+1)*k]
		p := d2[i]
		for b := 0; b < k; b++ {
			s := 0.0
			for c := 0; c < k; c++ {
				s += ar[c] * hinv[c*k+b]
			}
			fr[b] = s
			p -= s * ar[b]
		}
		psi[i] = math.Max(p, 1e-8*math.Max(d2[i], 1e-300))
	}
	return nil
}

// recenter moves the averaged statistics a (≈ S β̄ᵀ for the averaged E-step map betaT = β̄ᵀ) to
// the E-step map of the estimate (f, psi) and repeats the M-step, in place (OnlineConfig.Recenter):
// with βᵀ = Ψ⁻¹F Σ_h, Σ_h = (I + FᵀΨ⁻¹F)⁻¹, it forms A = a + (FFᵀ + Ψ)(βᵀ − β̄ᵀ) and
// B = Σ_h + β A, and takes F, ψ from mStep(A, B, d2), which symmetrises B. It stops when the
// largest relative change of ψ no longer shrinks (the noise in a then dominates the correction) or
// falls below 10⁻¹⁰, after at most 1000 rounds, keeping the last estimate that shrank it; a failed
// M-step keeps the estimate before it.
func recenter(a, betaT, d2 []float64, d, k int, f, psi []float64) {
	const maxRounds = 1000
	ct, h := make([]float64, d*k), make([]float64, k*k)
	nf, npsi := make([]float64, d*k), make([]float64, d)
	ra, delta := make([]float64, d*k), make([]float64, d*k)
	prev := math.Inf(1)
	for round := 0; round < maxRounds; round++ {
		sigmaH, err := latentPosterior(f, psi, d, k, ct, h)
		if err != nil {
			return
		}
		bt := kernels.MatMul(false, false, d, k, k, ct, sigmaH) // βᵀ
		for p := range delta {
			delta[p] = bt[p] - betaT[p]
		}
		g := kernels.MatMul(true, false, k, k, d, f, delta) // Fᵀ(βᵀ − β̄ᵀ)
		fg := kernels.MatMul(false, false, d, k, k, f, g)
		for i := 0; i < d; i++ {
			for j := 0; j < k; j++ {
				p := i*k + j
				ra[p] = a[p] + psi[i]*delta[p] + fg[p]
			}
		}
		b := kernels.MatMul(true, false, k, k, d, bt, ra) // β A (mStep symmetrises B)
		for p := range b {
			b[p] += sigmaH[p]
		}
		if err := mStep(ra, b, d2, d, k, nf, npsi); err != nil {
			return
		}
		change := 0.0
		for i, p := range npsi {
			change = math.Max(change, math.Abs(p-psi[i])/psi[i])
		}
		if !(change < prev) {
			return
		}
		copy(f, nf)
		copy(psi, npsi)
		if change < 1e-10 {
			return
		}
		prev = change
	}
}
