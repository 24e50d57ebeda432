package runtime

import (
	"math"
	"testing"
)

// TestExp32NonPos checks exp32NonPos against math.Exp over [−100, 0], at the range-reduction
// boundaries and for NaN and −Inf: within 3 float32 ulps (relative 3·2⁻²³) down to −87, 0 below.
func TestExp32NonPos(t *testing.T) {
	const tol = 3.0 / (1 << 23)
	worst := 0.0
	check := func(x float32) {
		t.Helper()
		got, want := float64(exp32NonPos(x)), math.Exp(float64(x))
		if x <= -87 {
			if got != 0 {
				t.Fatalf("exp32NonPos(%g) = %g, want 0", x, got)
			}
			return
		}
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if !(rel < tol) {
			t.Fatalf("exp32NonPos(%g) = %.9g, math.Exp %.9g (relative error %g)", x, got, want, rel)
		}
	}
	for i := 0; i <= 1_000_000; i++ {
		check(float32(-100 * float64(i) / 1_000_000))
	}
	for n := 0; n < 126; n++ {
		h := float32((float64(n) + 0.5) * math.Ln2) // where the rounding of n flips
		check(-math.Nextafter32(h, 0))
		check(-h)
		check(-math.Nextafter32(h, float32(math.Inf(1))))
	}
	check(-0)
	check(-math.SmallestNonzeroFloat32)
	if v := exp32NonPos(float32(math.NaN())); v == v {
		t.Errorf("exp32NonPos(NaN) = %g", v)
	}
	if v := exp32NonPos(float32(math.Inf(-1))); v != 0 {
		t.Errorf("exp32NonPos(-Inf) = %g", v)
	}
	t.Logf("worst relative error %.3g (%.2f ulps)", worst, worst*(1<<23))
}
