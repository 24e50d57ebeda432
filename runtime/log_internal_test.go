package runtime

import (
	"math"
	"testing"
)

// TestLog64 checks log64 against math.Log on float64 values from the smallest normal to the
// largest finite one (random mantissas over every exponent), around powers of two and √2, near
// 1, and on the values it hands to math.Log.
func TestLog64(t *testing.T) {
	worst := 0.0
	check := func(x float64) {
		t.Helper()
		got, want := log64(x), math.Log(x)
		if want != want || math.IsInf(want, 0) || want == 0 {
			if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
				t.Fatalf("log64(%g) = %g, math.Log %g", x, got, want)
			}
			return
		}
		err := math.Abs(got-want) / math.Abs(want)
		worst = max(worst, err)
		if !(err <= 1e-15) {
			t.Fatalf("log64(%g) = %.17g, math.Log %.17g (relative error %g)", x, got, want, err)
		}
	}
	r := uint64(1)
	for e := -1022; e <= 1023; e++ {
		p := math.Ldexp(1, e)
		for _, x := range []float64{p, math.Nextafter(p, 0), math.Nextafter(p, math.Inf(1)), math.Sqrt2 * p,
			math.Nextafter(math.Sqrt2*p, 0), math.Nextafter(math.Sqrt2*p, math.Inf(1))} {
			if x >= math.SmallestNonzeroFloat64 && !math.IsInf(x, 0) {
				check(x)
			}
		}
		for i := 0; i < 200; i++ {
			r = r*6364136223846793005 + 1442695040888963407
			check(p * (1 + float64(r>>11)/(1<<53)))
		}
	}
	for _, d := range []float64{1e-16, 1e-12, 1e-8, 1e-4, 0.01, 0.1, 0.25} {
		check(1 + d)
		check(1 - d)
	}
	for _, x := range []float64{0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, 1e-310, -1, 1, 10,
		math.MaxFloat64, math.Inf(1), math.Inf(-1), math.NaN()} {
		check(x)
	}
	t.Logf("worst relative error %.3g", worst)
}
