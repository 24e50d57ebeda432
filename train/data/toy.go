package data

import (
	"math"
	"math/rand/v2"
)

// Toy1D returns the 1-D regression problem of paper 003 (appendix J.1): n/2 inputs drawn
// uniformly from [−1, −0.7] and n/2 from [0.5, 1], targets y = cos(4x + 0.8) + ε with
// ε ~ N(0, 0.1²). The same seed gives the same data.
func Toy1D(n int, seed uint64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 0x70f1d))
	d := &Dataset{Name: "toy1d", N: n, Dim: 1, Shape: []int{1}, Outputs: 1,
		X: make([]float32, n), Targets: make([]float32, n)}
	for i := 0; i < n; i++ {
		var x float64
		if i < n/2 {
			x = -1 + 0.3*rng.Float64()
		} else {
			x = 0.5 + 0.5*rng.Float64()
		}
		d.X[i] = float32(x)
		d.Targets[i] = float32(Toy1DMean(x) + 0.1*rng.NormFloat64())
	}
	return d
}

// Toy1DMean is the noiseless regression function of Toy1D, cos(4x + 0.8).
func Toy1DMean(x float64) float64 { return math.Cos(4*x + 0.8) }

// Toy1DGrid returns n equally spaced inputs in [lo, hi] with noiseless targets Toy1DMean(x)
// (for plotting and for evaluating between and beyond the training clusters).
func Toy1DGrid(n int, lo, hi float64) *Dataset {
	d := &Dataset{Name: "toy1d-grid", N: n, Dim: 1, Shape: []int{1}, Outputs: 1,
		X: make([]float32, n), Targets: make([]float32, n)}
	for i := 0; i < n; i++ {
		x := lo
		if n > 1 {
			x = lo + (hi-lo)*float64(i)/float64(n-1)
		}
		d.X[i] = float32(x)
		d.Targets[i] = float32(Toy1DMean(x))
	}
	return d
}

// TwoMoons returns n points of scikit-learn's make_moons, shuffled: class 0 on the upper half
// circle (cos t, sin t), class 1 on the lower one (1 − cos t, ½ − sin t), t uniform in [0, π],
// each coordinate with N(0, noise²) added. The same seed gives the same data.
func TwoMoons(n int, noise float64, seed uint64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 0x2a00))
	d := &Dataset{Name: "moons", N: n, Dim: 2, Shape: []int{2}, Classes: 2,
		X: make([]float32, 2*n), Labels: make([]int, n), ClassNames: []string{"upper", "lower"}}
	for i := 0; i < n; i++ {
		c := i % 2
		t := math.Pi * rng.Float64()
		x, y := math.Cos(t), math.Sin(t)
		if c == 1 {
			x, y = 1-x, 0.5-y
		}
		d.X[2*i] = float32(x + noise*rng.NormFloat64())
		d.X[2*i+1] = float32(y + noise*rng.NormFloat64())
		d.Labels[i] = c
	}
	rng.Shuffle(n, func(i, j int) {
		d.X[2*i], d.X[2*j] = d.X[2*j], d.X[2*i]
		d.X[2*i+1], d.X[2*j+1] = d.X[2*j+1], d.X[2*i+1]
		d.Labels[i], d.Labels[j] = d.Labels[j], d.Labels[i]
	})
	return d
}
