package prune

import (
	"fmt"
	"strconv"
	"testing"
)

// TestMinKeepFractionSmallest checks the fraction that convert's --snr-keep message suggests,
// as printed (%.3g), against hand-computed values: 0.5/n rounded up to three significant
// digits. When 0.5/n is itself a three-digit decimal (n = 50000: 1e-05) that decimal is the
// answer, not the next one up (1.01e-05), which is what the product's binary rounding had
// given. Each printed value, typed back, keeps one weight in SNR and the three-digit decimal
// just below it keeps none.
func TestMinKeepFractionSmallest(t *testing.T) {
	tests := []struct {
		n          int
		want, less string // the answer and the three-digit decimal just below it
	}{
		{1, "0.5", "0.499"},
		{2, "0.25", "0.249"},
		{3, "0.167", "0.166"},
		{7, "0.0715", "0.0714"},
		{45, "0.0112", "0.0111"},
		{500, "0.001", "0.000999"},
		{6250, "8e-05", "7.99e-05"},
		{12500, "4e-05", "3.99e-05"},
		{50000, "1e-05", "9.99e-06"},
		{100000, "5e-06", "4.99e-06"},
		{200000, "2.5e-06", "2.49e-06"},
		{400000, "1.25e-06", "1.24e-06"},
		{2147483647, "2.33e-10", "2.32e-10"}, // the largest int on 32-bit boards
	}
	// kept is how many of n weights SNR keeps at the fraction s (count alone for n too large
	// to build).
	kept := func(s string, n int) int {
		keep, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatal(err)
		}
		if n > 1_000_000 {
			return count(keep, n)
		}
		l := FFGLayer{Name: "w", Mean: make([]float32, n), RawSD: make([]float32, n)}
		for i := range l.Mean {
			l.Mean[i] = float32(i%97 + 1)
		}
		rep, err := SNR([]FFGLayer{l}, keep)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Kept
	}
	for _, tc := range tests {
		if got := fmt.Sprintf("%.3g", MinKeepFraction(tc.n)); got != tc.want {
			t.Errorf("n %d: MinKeepFraction prints %s, want %s", tc.n, got, tc.want)
		}
		if k := kept(tc.want, tc.n); k != 1 {
			t.Errorf("n %d: --snr-keep %s keeps %d, want 1", tc.n, tc.want, k)
		}
		if k := kept(tc.less, tc.n); k != 0 {
			t.Errorf("n %d: --snr-keep %s keeps %d, want 0", tc.n, tc.less, k)
		}
	}
}
