package mcmc

import (
	"math"
	"math/cmplx"
	"slices"
	"sort"
)

// The diagnostics take one scalar quantity's draws as [chain][draw]; every chain must have the
// same number of draws. They return NaN when the input is unusable: no chains, unequal lengths,
// fewer than 3 draws per split half-chain, a non-finite draw, or (except the moments) constant
// draws.

// Summary describes one scalar quantity's draws, pooled over chains.
type Summary struct {
	// Mean and SD are the pooled sample mean and standard deviation (n − 1).
	Mean, SD float64
	// MCSE is the Monte Carlo standard error of Mean, SD/√ESSBasic.
	MCSE float64
	// Q5, Q50 and Q95 are the 5 %, 50 % and 95 % sample quantiles (linear interpolation,
	// R's type 7).
	Q5, Q50, Q95 float64
	// Rhat is the rank-normalised split-R̂ (Rhat).
	Rhat float64
	// ESSBulk and ESSTail are the bulk and tail effective sample sizes.
	ESSBulk, ESSTail float64
}

// Summarize returns the Summary of draws [chain][draw].
func Summarize(chains [][]float64) Summary {
	all := pool(chains)
	s := Summary{Mean: math.NaN(), SD: math.NaN(), MCSE: math.NaN(), Q5: math.NaN(), Q50: math.NaN(),
		Q95: math.NaN(), Rhat: math.NaN(), ESSBulk: math.NaN(), ESSTail: math.NaN()}
	if all == nil {
		return s
	}
	s.Mean, s.SD = meanSD(all)
	sorted := slices.Clone(all)
	slices.Sort(sorted)
	s.Q5, s.Q50, s.Q95 = quantileSorted(sorted, 0.05), quantileSorted(sorted, 0.5), quantileSorted(sorted, 0.95)
	s.MCSE = s.SD / math.Sqrt(ESSBasic(chains))
	s.Rhat = Rhat(chains)
	s.ESSBulk = ESSBulk(chains)
	s.ESSTail = ESSTail(chains)
	return s
}

// pool concatenates the chains, or returns nil if they are empty, ragged or not finite.
func pool(chains [][]float64) []float64 {
	if len(chains) == 0 || len(chains[0]) == 0 {
		return nil
	}
	n := len(chains[0])
	all := make([]float64, 0, n*len(chains))
	for _, c := range chains {
		if len(c) != n {
			return nil
		}
		for _, v := range c {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil
			}
		}
		all = append(all, c...)
	}
	return all
}

func meanSD(x []float64) (mean, sd float64) {
	for _, v := range x {
		mean += v
	}
	mean /= float64(len(x))
	ss := 0.0
	for _, v := range x {
		ss += (v - mean) * (v - mean)
	}
	if len(x) < 2 {
		return mean, math.NaN()
	}
	return mean, math.Sqrt(ss / float64(len(x)-1))
}

// quantileSorted is R's type-7 quantile of sorted data.
func quantileSorted(s []float64, p float64) float64 {
	h := float64(len(s)-1) * p
	lo := int(math.Floor(h))
	if lo+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
}

// split halves every chain (dropping the middle draw of an odd length), or returns nil when the
// input is unusable.
func split(chains [][]float64) [][]float64 {
	if pool(chains) == nil {
		return nil
	}
	n := len(chains[0])
	h := n / 2
	if h < 3 {
		return nil
	}
	out := make([][]float64, 0, 2*len(chains))
	for _, c := range chains {
		out = append(out, c[:h], c[n-h:])
	}
	return out
}

// constant reports whether every draw equals the first.
func constant(chains [][]float64) bool {
	v := chains[0][0]
	for _, c := range chains {
		for _, x := range c {
			if x != v {
				return false
			}
		}
	}
	return true
}

// zScale replaces draws by their normal scores Φ⁻¹((r − 3/8)/(S + 1/4)) where r is the rank
// among all S draws (average rank for ties).
func zScale(chains [][]float64) [][]float64 {
	type item struct {
		v    float64
		c, i int
	}
	var items []item
	for c, ch := range chains {
		for i, v := range ch {
			items = append(items, item{v, c, i})
		}
	}
	sort.SliceStable(items, func(a, b int) bool { return items[a].v < items[b].v })
	out := make([][]float64, len(chains))
	for c := range out {
		out[c] = make([]float64, len(chains[c]))
	}
	s := float64(len(items))
	for a := 0; a < len(items); {
		b := a
		for b < len(items) && items[b].v == items[a].v {
			b++
		}
		r := float64(a+1+b) / 2 // mean of ranks a+1 … b
		z := math.Sqrt2 * math.Erfinv(2*(r-0.375)/(s+0.25)-1)
		for k := a; k < b; k++ {
			out[items[k].c][items[k].i] = z
		}
		a = b
	}
	return out
}

// fold returns |x − median| of the pooled draws.
func fold(chains [][]float64) [][]float64 {
	all := pool(chains)
	slices.Sort(all)
	med := quantileSorted(all, 0.5)
	out := make([][]float64, len(chains))
	for c, ch := range chains {
		out[c] = make([]float64, len(ch))
		for i, v := range ch {
			out[c][i] = math.Abs(v - med)
		}
	}
	return out
}

// rhatOf is the classic potential scale reduction factor of (already split) chains.
func rhatOf(chains [][]float64) float64 {
	if constant(chains) {
		return math.NaN()
	}
	m := float64(len(chains))
	n := float64(len(chains[0]))
	means := make([]float64, len(chains))
	w := 0.0
	for c, ch := range chains {
		mu, sd := meanSD(ch)
		means[c] = mu
		w += sd * sd
	}
	w /= m
	_, sdm := meanSD(means)
	b := n * sdm * sdm // n/(m−1)·Σ(meanₘ − mean)²
	varPlus := (n-1)/n*w + b/n
	return math.Sqrt(varPlus / w)
}

// RhatBasic is the split-R̂ of Gelman et al. (BDA3, eq. 11.4) on the raw draws, without rank
// normalisation.
func RhatBasic(chains [][]float64) float64 {
	s := split(chains)
	if s == nil {
		return math.NaN()
	}
	return rhatOf(s)
}

// Rhat is the rank-normalised split-R̂ of Vehtari et al. (2021): the larger of the split-R̂ of
// the rank-normalised draws (bulk) and of the rank-normalised folded draws |x − median| (tail).
// Values above 1.01 suggest the chains have not mixed.
func Rhat(chains [][]float64) float64 {
	s := split(chains)
	if s == nil || constant(s) {
		return math.NaN()
	}
	bulk := rhatOf(zScale(s))
	tail := rhatOf(zScale(split(fold(chains))))
	return math.Max(bulk, tail)
}

// ESSBasic is the split-chain effective sample size of the raw draws (for the MCSE of a mean).
func ESSBasic(chains [][]float64) float64 {
	s := split(chains)
	if s == nil {
		return math.NaN()
	}
	return essOf(s)
}

// ESSBulk is the bulk effective sample size: ESSBasic of the rank-normalised split chains.
func ESSBulk(chains [][]float64) float64 {
	s := split(chains)
	if s == nil || constant(s) {
		return math.NaN()
	}
	return essOf(zScale(s))
}

// ESSTail is the tail effective sample size: the smaller ESS of the indicators x ≤ q₀.₀₅ and
// x ≤ q₀.₉₅ (split chains).
func ESSTail(chains [][]float64) float64 {
	all := pool(chains)
	if all == nil {
		return math.NaN()
	}
	slices.Sort(all)
	ess := math.Inf(1)
	for _, p := range []float64{0.05, 0.95} {
		q := quantileSorted(all, p)
		ind := make([][]float64, len(chains))
		for c, ch := range chains {
			ind[c] = make([]float64, len(ch))
			for i, v := range ch {
				if v <= q {
					ind[c][i] = 1
				}
			}
		}
		ess = math.Min(ess, ESSBasic(ind))
	}
	return ess
}

// essOf is the effective sample size of (already split) chains, with the autocorrelations
// combined across chains (BDA3 eq. 11.7) and truncated by Geyer's initial positive sequence
// made monotone, as in Stan and posterior.
func essOf(chains [][]float64) float64 {
	if constant(chains) {
		return math.NaN()
	}
	m := len(chains)
	n := len(chains[0])
	acov := make([][]float64, m)
	means := make([]float64, m)
	meanVar := 0.0
	for c, ch := range chains {
		acov[c] = Autocovariance(ch)
		means[c], _ = meanSD(ch)
		meanVar += acov[c][0] * float64(n) / float64(n-1)
	}
	meanVar /= float64(m)
	varPlus := meanVar * float64(n-1) / float64(n)
	if m > 1 {
		_, sd := meanSD(means)
		varPlus += sd * sd
	}
	meanAcov := func(t int) float64 {
		s := 0.0
		for c := range acov {
			s += acov[c][t]
		}
		return s / float64(m)
	}
	rho := make([]float64, n)
	rho[0] = 1
	even, odd := 1.0, 1-(meanVar-meanAcov(1))/varPlus
	rho[1] = odd
	t := 0
	for t < n-5 && !math.IsNaN(even+odd) && even+odd > 0 {
		t += 2
		even = 1 - (meanVar-meanAcov(t))/varPlus
		odd = 1 - (meanVar-meanAcov(t+1))/varPlus
		if even+odd >= 0 {
			rho[t], rho[t+1] = even, odd
		}
	}
	maxT := t
	if even > 0 {
		rho[maxT] = even
	}
	// Initial monotone sequence.
	for t = 0; t <= maxT-4; {
		t += 2
		if rho[t]+rho[t+1] > rho[t-2]+rho[t-1] {
			rho[t] = (rho[t-2] + rho[t-1]) / 2
			rho[t+1] = rho[t]
		}
	}
	s := float64(m * n)
	tau := -1 + rho[maxT]
	for _, r := range rho[:maxT] {
		tau += 2 * r
	}
	tau = math.Max(tau, 1/math.Log10(s))
	return s / tau
}

// Autocovariance returns the biased sample autocovariances γ̂(t) = (1/n)·Σᵢ (xᵢ − x̄)(xᵢ₊ₜ − x̄)
// for t = 0 … n−1, computed by FFT.
func Autocovariance(x []float64) []float64 {
	n := len(x)
	if n == 0 {
		return nil
	}
	mean := 0.0
	for _, v := range x {
		mean += v
	}
	mean /= float64(n)
	size := 1
	for size < 2*n {
		size <<= 1
	}
	buf := make([]complex128, size)
	for i, v := range x {
		buf[i] = complex(v-mean, 0)
	}
	fft(buf, false)
	for i, v := range buf {
		buf[i] = complex(real(v)*real(v)+imag(v)*imag(v), 0)
	}
	fft(buf, true)
	out := make([]float64, n)
	for t := range out {
		out[t] = real(buf[t]) / float64(size) / float64(n)
	}
	return out
}

// fft is an in-place iterative radix-2 FFT of a power-of-two-length buffer (unnormalised;
// inverse uses the conjugate twiddles).
func fft(a []complex128, inverse bool) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	sign := -1.0
	if inverse {
		sign = 1
	}
	for length := 2; length <= n; length <<= 1 {
		w := cmplx.Rect(1, sign*2*math.Pi/float64(length))
		for i := 0; i < n; i += length {
			wk := complex(1, 0)
			for k := 0; k < length/2; k++ {
				u, v := a[i+k], a[i+k+length/2]*wk
				a[i+k], a[i+k+length/2] = u+v, u-v
				wk *= w
			}
		}
	}
}
