package bfvi_test

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/train/bfvi"
)

// Fitting paper 002's Bernoulli posterior (y = 1, 1; prior Beta(1.1, 1.1)) with a degree-10
// Bernstein flow, measuring KL(q‖p) against the exact Beta(3.1, 1.1) posterior and comparing
// mean-field Gaussian VI.
func Example() {
	model := bfvi.PaperBernoulli()
	cfg := bfvi.TrainConfig{Steps: 2000, Samples: 50, LR: 0.02, LREnd: 0.002, Rho: 0.9, Eps: 1e-7, Seed: 1}
	q, trace, err := bfvi.FitBFVI(model, 10, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	klFlow, err := bfvi.KLQuadrature(q.Coords[0], model.LogPosterior, 4000)
	if err != nil {
		fmt.Println(err)
		return
	}
	g, _, err := bfvi.FitGaussianVI(model, cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	klGauss, _ := bfvi.KLQuadrature(g.Coords[0], model.LogPosterior, 4000)

	// Posterior mean of π from flow samples (exact: 3.1/4.2 ≈ 0.738).
	rng := rand.New(rand.NewPCG(7, 7))
	theta := make([]float64, 1)
	pi := make([]float64, 1)
	sum := 0.0
	for i := 0; i < 20000; i++ {
		q.Sample(rng, theta)
		model.Constrain(theta, pi)
		sum += pi[0]
	}
	fmt.Println("ELBO trace length:", len(trace))
	fmt.Println("KL(flow) < 0.005:", klFlow < 0.005)
	fmt.Println("KL(flow) < KL(Gaussian)/3:", klFlow < klGauss/3)
	fmt.Println("|E_q[π] − 0.738| < 0.01:", math.Abs(sum/20000-3.1/4.2) < 0.01)
	// Output:
	// ELBO trace length: 2000
	// KL(flow) < 0.005: true
	// KL(flow) < KL(Gaussian)/3: true
	// |E_q[π] − 0.738| < 0.01: true
}
