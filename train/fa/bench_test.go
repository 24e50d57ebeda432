package fa

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchStream returns n observations of a D = d, K = k model of Algorithm 4.
func benchStream(b *testing.B, d, k, n int) [][]float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	truth, err := Generate(rng, d, k, 1, 10)
	if err != nil {
		b.Fatal(err)
	}
	xs := make([][]float64, n)
	for i := range xs {
		xs[i] = make([]float64, d)
		truth.Sample(rng, xs[i])
	}
	return xs
}

// fedOnlineEM returns online EM over R^d with cfg after it has observed xs.
func fedOnlineEM(b *testing.B, d int, cfg OnlineConfig, xs [][]float64) *Online {
	o, err := NewOnlineEM(d, cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, x := range xs {
		if err := o.Observe(x); err != nil {
			b.Fatal(err)
		}
	}
	return o
}

// nsPerObserve times o.Observe over xs (cycled) for about dur.
func nsPerObserve(o *Online, xs [][]float64, dur time.Duration) float64 {
	n := 0
	start := time.Now()
	for time.Since(start) < dur {
		_ = o.Observe(xs[n%len(xs)])
		n++
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n)
}

// BenchmarkOnlineEMObserve: one observation of online EM at D = 1000, K = 10 — Algorithm 2, the
// averaged stochastic approximation, and the same with re-centring — each past its averaging
// start. x_vs_alg2 is the ratio to Algorithm 2, re-timed right after each sub-benchmark so that
// both see the same machine load.
func BenchmarkOnlineEMObserve(b *testing.B) {
	const d, k = 1000, 10
	xs := benchStream(b, d, k, 512)
	mk := func(cfg OnlineConfig) *Online {
		cfg.Rank, cfg.Warmup, cfg.Seed = k, 100, 1
		return fedOnlineEM(b, d, cfg, xs)
	}
	sa := OnlineConfig{StepExponent: 0.6, StepDelay: d, AverageAfter: 200}
	rec := sa
	rec.Recenter = true
	for _, v := range []struct {
		name string
		cfg  OnlineConfig
	}{{"alg2", OnlineConfig{}}, {"averaged", sa}, {"recentred", rec}} {
		b.Run(v.name, func(b *testing.B) {
			o := mk(v.cfg)
			n := 0
			b.ResetTimer()
			for b.Loop() {
				if err := o.Observe(xs[n%len(xs)]); err != nil {
					b.Fatal(err)
				}
				n++
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
			b.ReportMetric(ns/nsPerObserve(mk(OnlineConfig{}), xs, 300*time.Millisecond), "x_vs_alg2")
		})
	}
}

// BenchmarkOnlineEMModel: Model at D = 1000, K = 10 after 5000 observations, with averaging and
// with averaging plus re-centring (at most 1000 rounds of O(DK²)); x_vs_averaged is the ratio of the
// two, the plain one re-timed right after.
func BenchmarkOnlineEMModel(b *testing.B) {
	const d, k = 1000, 10
	xs := benchStream(b, d, k, 5000)
	mk := func(recenter bool) *Online {
		return fedOnlineEM(b, d, OnlineConfig{Rank: k, Warmup: 100, Seed: 1, StepExponent: 0.6, StepDelay: d,
			AverageAfter: 2500, Recenter: recenter}, xs)
	}
	plain := mk(false)
	for _, recenter := range []bool{false, true} {
		b.Run(fmt.Sprintf("recenter=%v", recenter), func(b *testing.B) {
			o := mk(recenter)
			b.ResetTimer()
			for b.Loop() {
				_ = o.Model()
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.StopTimer()
			start, n := time.Now(), 0
			for time.Since(start) < 300*time.Millisecond {
				_ = plain.Model()
				n++
			}
			b.ReportMetric(ns/(float64(time.Since(start).Nanoseconds())/float64(n)), "x_vs_averaged")
		})
	}
}

// BenchmarkVIFAStep: one VIFA update (Step, then KL as the trainer's epoch loop calls it) at
// D = 100 000 with a cheap quadratic likelihood, so that the time is VIFA's own O(DK²) work and
// allocations, not a network's.
func BenchmarkVIFAStep(b *testing.B) {
	const d = 100_000
	for _, k := range []int{2, 8} {
		b.Run(fmt.Sprintf("K=%d", k), func(b *testing.B) {
			v, err := NewVIFA(d, VIFAConfig{Rank: k, N: 1000, PriorPrecision: 1, LRMean: 1e-3, LRFactors: 1e-3,
				LRLogVar: 1e-3, Clip: 10, Seed: 1})
			if err != nil {
				b.Fatal(err)
			}
			lik := func(theta, grad []float64) (float64, error) {
				s := 0.0
				for i, t := range theta {
					grad[i] = 1e-3 * (t - 1)
					s += 0.5e-3 * (t - 1) * (t - 1)
				}
				return s, nil
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Step(lik); err != nil {
					b.Fatal(err)
				}
				if _, err := v.KL(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
