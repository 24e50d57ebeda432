package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// newRand returns a deterministic source of test data.
func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

// randSlice returns n values uniform in [-1, 1).
func randSlice(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*r.Float64() - 1)
	}
	return x
}

// randSlice64 returns n values uniform in [-1, 1).
func randSlice64(r *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 2*r.Float64() - 1
	}
	return x
}

// fill returns n copies of v.
func fill(n int, v float32) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = v
	}
	return x
}

// eps32 is the float32 unit roundoff.
const eps32 = 1.0 / (1 << 24)

// closeTo reports whether got is within tol of want (NaN never matches).
func closeTo(got, want, tol float64) bool {
	return got == want || math.Abs(got-want) <= tol
}

// shortOr returns short under -short and long otherwise.
func shortOr[T any](t testing.TB, short, long T) T {
	if testing.Short() {
		return short
	}
	return long
}
