package fa_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/train/fa"
)

// Online EM as stochastic approximation with Polyak–Ruppert averaging and re-centring, next to the
// batch ML fit on the same stream: both are about as far from the true covariance (without
// Recenter the online estimate is 0.018 away).
func ExampleNewOnlineEM_averaged() {
	const d, k, n = 10, 2, 40000
	rng := rand.New(rand.NewPCG(1, 2))
	truth, err := fa.Generate(rng, d, k, 1, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	em, err := fa.NewOnlineEM(d, fa.OnlineConfig{Rank: k, Warmup: 100, Seed: 3,
		StepExponent: 0.6, StepDelay: d, AverageAfter: 5000, Recenter: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	mom, err := fa.NewMoments(d)
	if err != nil {
		fmt.Println(err)
		return
	}
	theta := make([]float64, d)
	for t := 0; t < n; t++ {
		truth.Sample(rng, theta)
		if err := em.Observe(theta); err != nil {
			fmt.Println(err)
			return
		}
		if err := mom.Add(theta); err != nil {
			fmt.Println(err)
			return
		}
	}
	fit, _, err := fa.FitML(mom.Mean(), mom.Covariance(), d, k, fa.MLConfig{})
	if err != nil {
		fmt.Println(err)
		return
	}
	dOnline, _ := fa.RelCovDistance(em.Model(), truth)
	dBatch, _ := fa.RelCovDistance(fit, truth)
	fmt.Printf("relative covariance distance: online %.3f, batch %.3f\n", dOnline, dBatch)
	// Output: relative covariance distance: online 0.015, batch 0.014
}
