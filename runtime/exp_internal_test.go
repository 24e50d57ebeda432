package runtime

import (
	"math"
	"testing"
)

// TestExpNonPos checks expNonPos against math.Exp over [−750, 0], at the range-reduction
// boundaries and for NaN and −Inf.
func TestExpNonPos(t *testing.T) {
	worst := 0.0
	check := func(x float64) {
		got, want := expNonPos(x), math.Exp(x)
		if x <= -700 {
			if got != 0 {
				t.Fatalf("expNonPos(%g) = %g, want 0", x, got)
			}
			return
		}
		rel := math.Abs(got-want) / want
		worst = max(worst, rel)
		if !(rel < 1e-9) {
			t.Fatalf("expNonPos(%g) = %.17g, math.Exp %.17g (relative error %g)", x, got, want, rel)
		}
	}
	for i := 0; i <= 1_000_000; i++ {
		check(-750 * float64(i) / 1_000_000)
	}
	for n := 0; n < 1000; n++ {
		h := (float64(n) + 0.5) * math.Ln2 // where the rounding of n flips
		check(-math.Nextafter(h, 0))
		check(-math.Nextafter(h, math.Inf(1)))
	}
	if v := expNonPos(math.NaN()); v == v {
		t.Errorf("expNonPos(NaN) = %g", v)
	}
	if v := expNonPos(math.Inf(-1)); v != 0 {
		t.Errorf("expNonPos(-Inf) = %g", v)
	}
	t.Logf("worst relative error %.3g", worst)
}
