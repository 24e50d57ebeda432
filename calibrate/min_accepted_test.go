package calibrate

import (
	"fmt"
	"math/big"
	"strconv"
	"testing"
)

// TestMinAcceptedIsCeiling checks the number of fit records a coverage target c asks for,
// ⌈c·(n+1)⌉ (at least 1), with c as typed in decimal: hand-computed values where c·(n+1) is an
// integer in decimal but not in binary (0.95·20, 0.7·10, 0.3·10, 0.1·30, 0.07·100), where it is
// just above an integer (0.999999·1999999 = 1999997.000001: 1999998, all of n = 1999998), and
// c = 1, tiny c and n = 1; then every c of one to three decimals for n up to 120 against exact
// rational arithmetic.
func TestMinAcceptedIsCeiling(t *testing.T) {
	tests := []struct {
		c    string
		n    int
		want int
	}{
		{"0.95", 19, 19},
		{"0.7", 9, 7},
		{"0.3", 9, 3},
		{"0.1", 29, 3},
		{"0.07", 99, 7},
		{"0.9", 9, 9},
		{"0.9", 20, 19},
		{"0.5", 1, 1},
		{"0.6", 1, 2},
		{"1", 1, 2},
		{"1", 1_000_000, 1_000_001},
		{"1e-9", 5, 1},
		{"0.999999", 1_999_998, 1_999_998},
		{"0.9999999", 19_999_998, 19_999_998},
		{"0.95", 1_999_999_999, 1_900_000_000},
	}
	for _, tc := range tests {
		c, err := strconv.ParseFloat(tc.c, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := minAccepted(c, tc.n); got != tc.want {
			t.Errorf("c %s, n %d: minAccepted %d, want %d", tc.c, tc.n, got, tc.want)
		}
	}
	for den := 10; den <= 1000; den *= 10 {
		for num := 1; num <= den; num++ {
			s := strconv.FormatFloat(float64(num)/float64(den), 'g', -1, 64) // as typed
			c, _ := strconv.ParseFloat(s, 64)
			for n := 1; n <= 120; n++ {
				x := new(big.Rat).SetFrac64(int64(num*(n+1)), int64(den))
				want := new(big.Int).Quo(x.Num(), x.Denom()) // ⌊x⌋; x > 0
				if !x.IsInt() {
					want.Add(want, big.NewInt(1))
				}
				if got := minAccepted(c, n); fmt.Sprint(got) != want.String() {
					t.Fatalf("c %s, n %d: minAccepted %d, want ⌈%s⌉ = %s", s, n, got, x.RatString(), want)
				}
			}
		}
	}
}
