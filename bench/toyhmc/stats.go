package main

import (
	"math"
	"sort"
)

// W1 returns the 1-Wasserstein distance between the empirical distributions of the samples a
// and b, ∫ |F_a(t) − F_b(t)| dt with F the empirical distribution functions. For samples of the
// same size n it equals the sorted-sample formula (1/n) Σ_i |a_(i) − b_(i)|. Both must be sorted
// in increasing order and non-empty; W1 returns NaN otherwise.
func W1(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 || !sort.Float64sAreSorted(a) || !sort.Float64sAreSorted(b) {
		return math.NaN()
	}
	na, nb := float64(len(a)), float64(len(b))
	i, j := 0, 0
	prev := math.Min(a[0], b[0])
	d := 0.0
	for i < len(a) || j < len(b) {
		t := next(a, b, i, j)
		// On [prev, t) the distribution functions are i/na and j/nb.
		d += math.Abs(float64(i)/na-float64(j)/nb) * (t - prev)
		for i < len(a) && a[i] == t {
			i++
		}
		for j < len(b) && b[j] == t {
			j++
		}
		prev = t
	}
	return d
}

// KS returns the two-sample Kolmogorov–Smirnov statistic of the sorted, non-empty samples a and
// b: sup_t |F_a(t) − F_b(t)|, in [0, 1] (ties between the samples handled exactly). It returns NaN
// if either is empty or unsorted.
func KS(a, b []float64) float64 {
	if len(a) == 0 || len(b) == 0 || !sort.Float64sAreSorted(a) || !sort.Float64sAreSorted(b) {
		return math.NaN()
	}
	na, nb := float64(len(a)), float64(len(b))
	i, j := 0, 0
	d := 0.0
	for i < len(a) || j < len(b) {
		t := next(a, b, i, j)
		for i < len(a) && a[i] == t {
			i++
		}
		for j < len(b) && b[j] == t {
			j++
		}
		d = math.Max(d, math.Abs(float64(i)/na-float64(j)/nb))
	}
	return d
}

// next returns the smaller of a[i] and b[j], whichever exist.
func next(a, b []float64, i, j int) float64 {
	switch {
	case i >= len(a):
		return b[j]
	case j >= len(b):
		return a[i]
	}
	return math.Min(a[i], b[j])
}

// meanSD returns the mean and the population standard deviation (divisor n) of xs.
func meanSD(xs []float64) (mean, sd float64) {
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	for _, x := range xs {
		mean += x
	}
	mean /= float64(len(xs))
	for _, x := range xs {
		sd += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(sd / float64(len(xs)))
}

// meanSE returns the mean of xs and its standard error sd/√n (sample sd, divisor n − 1); the
// standard error is NaN for fewer than two values.
func meanSE(xs []float64) (mean, se float64) {
	n := float64(len(xs))
	if len(xs) == 0 {
		return math.NaN(), math.NaN()
	}
	m, sd := meanSD(xs)
	if len(xs) < 2 {
		return m, math.NaN()
	}
	return m, sd * math.Sqrt(n/(n-1)) / math.Sqrt(n)
}
