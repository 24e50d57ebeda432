package mcmc

import (
	"math"
	"slices"
	"testing"
)

// TestWindows checks the warm-up schedule against Stan's documented one: for 1000 iterations an
// initial buffer 0–74, slow windows of 25, 50, 100, 200 and 500 (the last stretched to the
// terminal buffer) ending at 99, 149, 249, 449 and 949, and a terminal buffer 950–999. For 100
// iterations the buffers do not fit and become 15 %, 10 % and one window 15–89.
func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		warmup          int
		ends            []int
		firstIn, lastIn int
	}{
		{1000, []int{99, 149, 249, 449, 949}, 75, 949},
		{100, []int{89}, 15, 89},
		{150, []int{99}, 75, 99}, // 75 + 25 + 50 fits exactly: one window 75–99
	} {
		w := newWindows(tc.warmup, 75, 50, 25)
		est := newWelford(1)
		var ends, in, sizes []int
		for it := 0; it < tc.warmup; it++ {
			if w.inWindow() {
				in = append(in, it)
			}
			if w.learn(&est, []float64{float64(it)}) {
				ends = append(ends, it)
				sizes = append(sizes, int(est.n))
				est.reset()
			}
		}
		if tc.warmup == 1000 && !slices.Equal(sizes, []int{25, 50, 100, 200, 500}) {
			t.Errorf("window sizes %v, want 25 50 100 200 500", sizes)
		}
		if !slices.Equal(ends, tc.ends) {
			t.Errorf("warm-up %d: windows end at %v, want %v", tc.warmup, ends, tc.ends)
		}
		if len(in) == 0 || in[0] != tc.firstIn || in[len(in)-1] != tc.lastIn || len(in) != tc.lastIn-tc.firstIn+1 {
			t.Errorf("warm-up %d: %d draws collected from %v, want %d–%d", tc.warmup, len(in), in[:min(3, len(in))],
				tc.firstIn, tc.lastIn)
		}
	}
}

// TestRegularisedVariance: the draws 1 2 3 4 5 have variance 2.5, shrunk to
// 5/10·2.5 + 10⁻³·5/10 = 1.2505.
func TestRegularisedVariance(t *testing.T) {
	e := newWelford(1)
	for _, v := range []float64{1, 2, 3, 4, 5} {
		e.add([]float64{v})
	}
	got := []float64{0}
	e.regularisedVariance(got)
	near(t, "variance", got[0], 1.2505, 1e-12)
}

// TestDualAveraging: with the acceptance statistic a(ε) = exp(−ε), a target of 0.8 is met at
// ε* = −log 0.8 = 0.22314; the averaged step size converges there.
func TestDualAveraging(t *testing.T) {
	var d dualAveraging
	eps := 1.0
	d.restart(eps, 0.8)
	for range 3000 {
		eps = d.learn(math.Exp(-eps))
	}
	near(t, "final step size", d.final(), -math.Log(0.8), 0.01)
}

// TestThinFlatten on a hand-made 2-chain, 5-draw, 2-dim Result whose draw i of chain c is
// (10c + i, −(10c + i)).
func TestThinFlatten(t *testing.T) {
	r := &Result{Dim: 2, Chains: 2, Draws: 5, Stats: make([][]DrawStats, 2)}
	for c := 0; c < 2; c++ {
		for i := 0; i < 5; i++ {
			v := float64(10*c + i)
			r.Samples = append(r.Samples, v, -v)
			r.Stats[c] = append(r.Stats[c], DrawStats{Leapfrog: 10*c + i})
		}
	}
	th, err := r.Thin(2)
	if err != nil {
		t.Fatal(err)
	}
	if th.Draws != 3 || !slices.Equal(th.Samples, []float64{0, 0, 2, -2, 4, -4, 10, -10, 12, -12, 14, -14}) ||
		th.Stats[1][2].Leapfrog != 14 {
		t.Errorf("Thin(2) = %+v", th)
	}
	if got := r.Param(1); !slices.Equal(got[1], []float64{-10, -11, -12, -13, -14}) {
		t.Errorf("Param(1) = %v", got)
	}
	flat := r.Flatten(3)
	want := [][]float64{{0, 0}, {3, -3}, {10, -10}, {13, -13}}
	if len(flat) != len(want) {
		t.Fatalf("Flatten(3) = %v, want %v", flat, want)
	}
	for i := range want {
		if !slices.Equal(flat[i], want[i]) {
			t.Errorf("Flatten(3)[%d] = %v, want %v", i, flat[i], want[i])
		}
	}
	flat[0][0] = 99
	if r.Samples[0] != 0 {
		t.Error("Flatten returned a view, want copies")
	}
	if _, err := r.Thin(0); err == nil {
		t.Error("Thin(0) accepted")
	}
}
