package prune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
)

// rhoFor returns the raw ρ with softplus(ρ) = s.
func rhoFor(s float64) float32 { return float32(math.Log(math.Expm1(s))) }

func TestSNR(t *testing.T) {
	// SNRs: a = [4, 1, 0.5 (|μ| 1, σ 2), 2], b = [0.6 (σ 3 capped at 2.5), 2 (a tie with a[3]:
	// the same μ and ρ), 0]. Order: a0, a3, b1 (the tie by position), a1, b0, a2, b2.
	a := FFGLayer{Name: "a", Mean: []float32{4, -1, 1, 2}, RawSD: []float32{rhoFor(1), rhoFor(1), rhoFor(2), rhoFor(1)}}
	b := FFGLayer{Name: "b", Mean: []float32{-1.5, 2, 0}, RawSD: []float32{rhoFor(3), rhoFor(1), rhoFor(1)}, MaxSD: 2.5}
	tests := []struct {
		keep  float64
		wantA string
		wantB string
	}{
		{1.0 / 7, "[0]", "[]"},
		{2.0 / 7, "[0 3]", "[]"},
		{3.0 / 7, "[0 3]", "[1]"},
		{4.0 / 7, "[0 1 3]", "[1]"},
		{0.5, "[0 1 3]", "[1]"}, // 3.5 rounds half up to 4
		{5.0 / 7, "[0 1 3]", "[0 1]"},
		{6.0 / 7, "[0 1 2 3]", "[0 1]"},
		{1, "[0 1 2 3]", "[0 1 2]"}, // everything, the zero mean included
	}
	for _, tc := range tests {
		rep, err := SNR([]FFGLayer{a, b}, tc.keep)
		if err != nil {
			t.Fatal(err)
		}
		if got := fmt.Sprint(rep.Layers[0].Keep); got != tc.wantA {
			t.Errorf("keep %.3f: layer a keeps %s, want %s", tc.keep, got, tc.wantA)
		}
		if got := fmt.Sprint(rep.Layers[1].Keep); got != tc.wantB {
			t.Errorf("keep %.3f: layer b keeps %s, want %s", tc.keep, got, tc.wantB)
		}
		if rep.Kept != len(rep.Layers[0].Keep)+len(rep.Layers[1].Keep) || rep.Weights != 7 {
			t.Errorf("keep %.3f: report counts %d of %d", tc.keep, rep.Kept, rep.Weights)
		}
	}
	rep, _ := SNR([]FFGLayer{a, b}, 2.0/7)
	if tha, thb := rep.Layers[0].Threshold, rep.Layers[1].Threshold; !(math.Abs(tha-1) <= 1e-5) || !(math.Abs(thb-2) <= 1e-5) {
		t.Errorf("thresholds %g and %g, want 1 and 2 (each layer's largest pruned SNR)", tha, thb)
	}
}

func TestSNRErrors(t *testing.T) {
	ok := FFGLayer{Name: "a", Mean: []float32{1}, RawSD: []float32{0}}
	tests := []struct {
		layers []FFGLayer
		keep   float64
		want   string
	}{
		{[]FFGLayer{ok}, 0, "not in (0, 1]"},
		{[]FFGLayer{ok}, 1.01, "not in (0, 1]"},
		{[]FFGLayer{ok}, math.NaN(), "not in (0, 1]"},
		{[]FFGLayer{ok, ok}, 0.5, `layer "a" given twice`},
		{[]FFGLayer{{Name: "x", Mean: []float32{1, 2}, RawSD: []float32{0}}}, 0.5, `layer "x": 2 weight means but 1`},
		{[]FFGLayer{{Name: "x", Mean: []float32{float32(math.NaN())}, RawSD: []float32{0}}}, 0.5, `layer "x": weight 0`},
		{[]FFGLayer{{Name: "x", Mean: []float32{1}, RawSD: []float32{float32(math.NaN())}}}, 0.5, `layer "x": weight 0`},
	}
	for _, tc := range tests {
		_, err := SNR(tc.layers, tc.keep)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SNR(keep %v): error %v, want %q", tc.keep, err, tc.want)
		}
	}
}

// TestMinKeepFraction: the fraction a message suggests, printed with three significant digits
// and read back, keeps one weight; a tenth of it less (at that precision) keeps none, so it is
// the smallest such number to three digits. (The message had said 1/n, twice the smallest.)
func TestMinKeepFraction(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 9, 11, 99, 101, 999, 1001, 6999, 12345, 1 << 20, 5321347, 1e9 + 7} {
		f := MinKeepFraction(n)
		printed, err := strconv.ParseFloat(fmt.Sprintf("%.3g", f), 64)
		if err != nil {
			t.Fatal(err)
		}
		if count(printed, n) < 1 {
			t.Errorf("n %d: %.3g keeps none", n, f)
		}
		less := printed - math.Pow(10, math.Floor(math.Log10(printed))-2)
		if count(less, n) >= 1 && less > 0 {
			t.Errorf("n %d: %.3g keeps one as well: %.3g is not the smallest", n, less, printed)
		}
		if n > 1 && !(f < 1/float64(n)) {
			t.Errorf("n %d: %g is not below 1/n", n, f)
		}
	}
}
