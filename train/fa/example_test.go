package fa_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/train/fa"
)

// VIFA on a conjugate toy problem: one observation y = 2 of θ with noise variance 1 and the
// prior N(0, 1), whose exact posterior is N(1, 0.5).
func ExampleVIFA() {
	v, err := fa.NewVIFA(1, fa.VIFAConfig{Rank: 1, N: 1, PriorPrecision: 1, MCSamples: 16,
		LRMean: 0.05, LRFactors: 0.05, LRLogVar: 0.05, Clip: 10, Seed: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	nll := func(theta, grad []float64) (float64, error) {
		r := theta[0] - 2
		grad[0] = r // ∇θ of ½(θ − y)²
		return 0.5 * r * r, nil
	}
	for step := 0; step < 4000; step++ {
		if step >= 2000 {
			v.SetLRFactor(float64(4000-step) / 2000)
		}
		if _, err := v.Step(nll); err != nil {
			fmt.Println(err)
			return
		}
	}
	q := v.Posterior()
	fmt.Printf("mean %.1f variance %.1f\n", q.Mean[0], q.Covariance()[0])
	// Output: mean 1.0 variance 0.5
}

// Online EM over a stream of draws from a known FA model.
func ExampleNewOnlineEM() {
	rng := rand.New(rand.NewPCG(1, 2))
	truth, err := fa.Generate(rng, 10, 2, 1, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	em, err := fa.NewOnlineEM(10, fa.OnlineConfig{Rank: 2, Warmup: 100, Seed: 3})
	if err != nil {
		fmt.Println(err)
		return
	}
	theta := make([]float64, 10)
	for t := 0; t < 20000; t++ {
		truth.Sample(rng, theta)
		if err := em.Observe(theta); err != nil {
			fmt.Println(err)
			return
		}
	}
	d, _ := fa.RelCovDistance(em.Model(), truth)
	fmt.Println(d < 0.1)
	// Output: true
}
