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
