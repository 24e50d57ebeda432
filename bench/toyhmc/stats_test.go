package main

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// TestW1 checks W1 against hand-computed distances: shifted samples, unequal spacing, unequal
// sizes, ties, and the sorted-sample formula on random samples of equal size.
func TestW1(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"identical", []float64{0, 1, 2}, []float64{0, 1, 2}, 0},
		{"shift by 1", []float64{0, 1, 2}, []float64{1, 2, 3}, 1},
		{"shift by 2.5", []float64{-1, 0, 4}, []float64{1.5, 2.5, 6.5}, 2.5},
		// Sorted pairs (0,1), (0,2), (3,3): (1 + 2 + 0)/3.
		{"pairs", []float64{0, 0, 3}, []float64{1, 2, 3}, 1},
		// F_a = 1 on [0, ∞), F_b = ½ on [0, 2): ½ · 2.
		{"sizes 1 and 2", []float64{0}, []float64{0, 2}, 1},
		// F_a = ⅓, 1 at 0, 1; F_b = ½, 1 at 0, 3: |⅓ − ½|·1 + |1 − ½|·2 = 1/6 + 1.
		{"sizes 3 and 2", []float64{0, 1, 1}, []float64{0, 3}, 1.0/6 + 1},
		{"point masses", []float64{2, 2}, []float64{-1}, 3},
	} {
		if got := W1(tc.a, tc.b); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: W1(%v, %v) = %g, want %g", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := W1(tc.b, tc.a); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: W1 not symmetric: %g, want %g", tc.name, got, tc.want)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for n := 1; n <= 50; n += 7 {
		a, b := make([]float64, n), make([]float64, n)
		for i := range a {
			a[i], b[i] = rng.NormFloat64(), 0.5+2*rng.NormFloat64()
		}
		sort.Float64s(a)
		sort.Float64s(b)
		want := 0.0
		for i := range a {
			want += math.Abs(a[i] - b[i])
		}
		want /= float64(n)
		if got := W1(a, b); !(math.Abs(got-want) <= 1e-12) {
			t.Errorf("n = %d: W1 = %g, sorted-sample formula %g", n, got, want)
		}
	}
	if !math.IsNaN(W1(nil, []float64{1})) || !math.IsNaN(W1([]float64{2, 1}, []float64{1})) {
		t.Error("W1 of an empty or unsorted sample is not NaN")
	}
}

// TestKS checks KS against hand-computed statistics: shifted samples, ties, unequal sizes.
func TestKS(t *testing.T) {
	a := []float64{1, 2, 3, 4}
	shift := func(c float64) []float64 {
		b := make([]float64, len(a))
		for i := range a {
			b[i] = a[i] + c
		}
		return b
	}
	for _, tc := range []struct {
		name string
		a, b []float64
		want float64
	}{
		{"identical", a, a, 0},
		// At t = 1: F_a = ¼, F_b = 0; the steps alternate after that.
		{"shift by 0.5", a, shift(0.5), 0.25},
		// At t = 2: F_a = ½, F_b = 0 (b = 3, 4, 5, 6).
		{"shift by 2", a, shift(2), 0.5},
		{"shift by 1 (ties)", a, shift(1), 0.25},
		{"disjoint", a, shift(10), 1},
		// At t = 1: ⅔ against ⅓.
		{"ties", []float64{1, 1, 2}, []float64{1, 2, 2}, 1.0 / 3},
		// At t = 0: 1 against ½.
		{"sizes 1 and 2", []float64{0}, []float64{0, 2}, 0.5},
	} {
		if got := KS(tc.a, tc.b); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: KS(%v, %v) = %g, want %g", tc.name, tc.a, tc.b, got, tc.want)
		}
		if got := KS(tc.b, tc.a); !(math.Abs(got-tc.want) <= 1e-12) {
			t.Errorf("%s: KS not symmetric: %g, want %g", tc.name, got, tc.want)
		}
	}
	if !math.IsNaN(KS([]float64{1}, nil)) {
		t.Error("KS of an empty sample is not NaN")
	}
}

// TestMeanSE checks the summary statistics on hand-computed values.
func TestMeanSE(t *testing.T) {
	m, sd := meanSD([]float64{1, 3})
	if m != 2 || sd != 1 {
		t.Errorf("meanSD(1, 3) = %g, %g, want 2, 1", m, sd)
	}
	// Sample sd of 1, 2, 3 is 1; standard error 1/√3.
	m, se := meanSE([]float64{1, 2, 3})
	if m != 2 || !(math.Abs(se-1/math.Sqrt(3)) <= 1e-12) {
		t.Errorf("meanSE(1, 2, 3) = %g, %g, want 2, %g", m, se, 1/math.Sqrt(3))
	}
	if _, se := meanSE([]float64{5}); !math.IsNaN(se) {
		t.Errorf("standard error of one value = %g, want NaN", se)
	}
}
