package main

import (
	"math"
	"testing"
)

func TestSoftplusStats(t *testing.T) {
	// softplus(0) = ln 2; softplus(ln(e−1)) = 1; softplus(−20) = ln(1 + e^−20) ≈ e^−20.
	l := float32(math.Log(math.E - 1))
	for _, tc := range []struct {
		name        string
		raw         []float32
		med, lo, hi float64
	}{
		{"one", []float32{0}, math.Ln2, math.Ln2, math.Ln2},
		{"odd", []float32{l, -20, 0}, math.Ln2, 2.061153622438558e-09, 1},
		{"even", []float32{0, l, -20, 40}, (math.Ln2 + 1) / 2, 2.061153622438558e-09, 40},
	} {
		t.Run(tc.name, func(t *testing.T) {
			med, lo, hi := softplusStats(tc.raw)
			for _, c := range []struct {
				what      string
				got, want float64
			}{{"median", med, tc.med}, {"min", lo, tc.lo}, {"max", hi, tc.hi}} {
				if !(math.Abs(c.got-c.want) <= 1e-6*math.Abs(c.want)) {
					t.Errorf("%s = %.10g, want %.10g", c.what, c.got, c.want)
				}
			}
		})
	}
}
