package runtime

import (
	"math"
	"testing"
)

// TestLogPos checks logPos against math.Log on float32 values from the smallest normal to the
// largest finite one, around powers of two and √2, and on the values it hands to math.Log.
func TestLogPos(t *testing.T) {
	worst := 0.0
	check := func(x float32) {
		t.Helper()
		got, want := logPos(x), math.Log(float64(x))
		if want != want || math.IsInf(want, 0) || want == 0 {
			if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want) {
				t.Fatalf("logPos(%g) = %g, math.Log %g", x, got, want)
			}
			return
		}
		err := math.Abs(got-want) / math.Max(math.Abs(want), 1e-300)
		if math.Abs(got-want) > 1e-15 { // absolute near x = 1, where ln x → 0
			worst = max(worst, err)
		}
		if !(err < 1e-10 || math.Abs(got-want) < 1e-15) {
			t.Fatalf("logPos(%g) = %.17g, math.Log %.17g (relative error %g)", x, got, want, err)
		}
	}
	for b := uint32(0x00800000); b < 0x7f800000; b += 997 {
		check(math.Float32frombits(b))
	}
	for e := -126; e <= 127; e++ {
		p := float32(math.Ldexp(1, e))
		for _, x := range []float32{p, math.Nextafter32(p, 0), math.Nextafter32(p, float32(math.Inf(1))),
			float32(math.Sqrt2) * p, math.Nextafter32(float32(math.Sqrt2)*p, 0), math.Nextafter32(float32(math.Sqrt2)*p, 10*p)} {
			if x > 0 && !math.IsInf(float64(x), 0) {
				check(x)
			}
		}
	}
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -1, 1, 10, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		check(x)
	}
	t.Logf("worst relative error %.3g", worst)
}

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
		if err > 1e-15 {
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
