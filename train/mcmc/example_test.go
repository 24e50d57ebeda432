package mcmc_test

import (
	"context"
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/train/mcmc"
)

// The posterior of a normal mean: y = (2.1, 1.4, 3.0) with known variance 1 and the prior
// N(0, 10²) give the posterior N(6.5/3.01, 1/3.01). The printed checks do not depend on the
// last bits of the draws, which may differ across architectures.
func Example() {
	y := []float64{2.1, 1.4, 3.0}
	logp := func(x, grad []float64) float64 {
		lp := -x[0] * x[0] / 200
		grad[0] = -x[0] / 100
		for _, v := range y {
			lp -= (v - x[0]) * (v - x[0]) / 2
			grad[0] += v - x[0]
		}
		return lp
	}
	res, err := mcmc.Sample(context.Background(), logp, 1, mcmc.DefaultConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	s := res.Summary()[0]
	mean, sd := 6.5/3.01, math.Sqrt(1/3.01)
	fmt.Println("draws:", len(res.Flatten(1)))
	fmt.Println("mean within 5 MCSE:", math.Abs(s.Mean-mean) < 5*s.MCSE)
	fmt.Println("sd within 5 %:", math.Abs(s.SD/sd-1) < 0.05)
	fmt.Println("R̂ < 1.01:", s.Rhat < 1.01, "divergences:", res.Divergences())
	// Output:
	// draws: 4000
	// mean within 5 MCSE: true
	// sd within 5 %: true
	// R̂ < 1.01: true divergences: 0
}
