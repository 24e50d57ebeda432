package fa

import (
	"fmt"
	"math"
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
