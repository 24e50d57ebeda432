package format

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/x448/float16"
)

// TestRefF16 cross-checks the test's float64 reference against a few
// hand-computed binary16 values, so the reference itself can be trusted.
func TestRefF16(t *testing.T) {
	cases := []struct{ in, want float32 }{
		{1, 1},
		{1 + 1.0/2048, 1},             // tie -> even
		{1 + 3.0/2048, 1 + 2.0/1024},  // tie -> even (up)
		{65504, 65504},                // max finite
		{65520, float32(math.Inf(1))}, // rounds to Inf
		{-65519, -65504},
		{5.960464477539063e-08, 5.960464477539063e-08}, // 2^-24, smallest subnormal
		{2.9802322387695312e-08, 0},                    // 2^-25 tie -> 0
		{0.1, 0.0999755859375},
	}
	for _, c := range cases {
		if got := refF16(c.in); got != c.want {
			t.Errorf("refF16(%g) = %g, want %g", c.in, got, c.want)
		}
	}
	// And agreement with the library the writer uses, over random values.
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		x := float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-7)))
		if got, want := float16.Fromfloat32(x).Float32(), refF16(x); got != want {
			t.Fatalf("float16(%g) = %g, reference %g", x, got, want)
		}
	}
}
