package faexp

import (
	"math"
	"os"
	"testing"
)

// long reports whether the full-size experiments were requested (EDGEBNN_FA_LONG=1); they take
// minutes and are what docs/RESULTS.md quotes.
func long() bool { return os.Getenv("EDGEBNN_FA_LONG") != "" }

func TestSummarize(t *testing.T) {
	s := Summarize([]float64{1, 2, 3, 4})
	// mean 2.5, sample sd √(5/3), se = sd/2
	if !(math.Abs(s.Mean-2.5) <= 1e-15) || !(math.Abs(s.SE-math.Sqrt(5.0/3)/2) <= 1e-15) {
		t.Errorf("Summarize = %+v", s)
	}
	if got := Summarize([]float64{7}); got.Mean != 7 || got.SE != 0 {
		t.Errorf("one value: %+v", got)
	}
}

func TestCompare(t *testing.T) {
	// Same covariance, shifted mean: W2 = ‖Δm‖, relative covariance distance 0.
	m, s := []float64{3, 4}, []float64{2, 0.5, 0.5, 1}
	d := Compare([]float64{3, 5}, s, m, s, 2)
	if !(math.Abs(d.RelMean-0.2) <= 1e-12) || d.RelCov != 0 || !(math.Abs(d.W2PerDim-0.5) <= 1e-7) {
		t.Errorf("Compare = %+v", d)
	}
}

func TestLinearRegressionVIFA(t *testing.T) {
	cfg := PaperRegression()
	seeds := 10
	switch {
	case !long() && testing.Short(): // QEMU: 5× the learning rates for a fifth of the epochs
		cfg.Epochs, seeds = 1000, 1
		cfg.LRMean, cfg.LRF, cfg.LRLogVar = 5*cfg.LRMean, 5*cfg.LRF, 5*cfg.LRLogVar
	case !long():
		seeds = 2
	}
	ss := make([]uint64, seeds)
	for s := range ss {
		ss[s] = uint64(s)
	}
	sa, sb, sc := summarizeDistances(t, LinearRegression, cfg, ss)
	t.Logf("%d epochs, %d seeds: rel. mean %v, rel. cov %v, W2/dim %v", cfg.Epochs, seeds, sa, sb, sc)
	// Paper 000, Table 4: 0.0031 ± 0.0005, 0.0983 ± 0.0129, 0.0194 ± 0.0023.
	lim := [3]float64{0.0031, 0.0983, 0.0194}
	if !long() {
		lim = [3]float64{0.003, 0.2, 0.02} // fewer seeds (and in -short fewer epochs)
	}
	if !(sa.Mean < lim[0]) || !(sb.Mean < lim[1]) || !(sc.Mean < lim[2]) {
		t.Errorf("distances (%v, %v, %v) not below %v", sa, sb, sc, lim)
	}
}

func TestLogisticRegressionVIFA(t *testing.T) {
	cfg := PaperRegression()
	cfg.N = 3000
	cfg.LRF = 0.01 // the posterior is ~100× wider than in linear regression
	seeds := []uint64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	switch {
	case !long() && testing.Short(): // QEMU
		cfg.N, cfg.Epochs, cfg.GridPoints, seeds = 600, 1000, 61, []uint64{1}
		cfg.LRMean, cfg.LRLogVar = 3*cfg.LRMean, 3*cfg.LRLogVar
	case !long():
		cfg.N, cfg.Epochs, cfg.GridPoints, seeds = 1000, 2000, 61, []uint64{1}
	}
	sa, sb, sc := summarizeDistances(t, LogisticRegression, cfg, seeds)
	t.Logf("N=%d, %d epochs, grid %d², seeds %v: rel. mean %v, rel. cov %v, W2/dim %v", cfg.N, cfg.Epochs, cfg.GridPoints, seeds, sa, sb, sc)
	// No paper numbers; a Gaussian cannot match a skewed posterior exactly.
	lim := [3]float64{0.01, 0.15, 0.05}
	if long() { // measured: 0.0020 ± 0.0002, 0.0342 ± 0.0071, 0.0153 ± 0.0025
		lim = [3]float64{0.005, 0.06, 0.03}
	}
	if !(sa.Mean <= lim[0]) || !(sb.Mean <= lim[1]) || !(sc.Mean <= lim[2]) {
		t.Errorf("distances (%v, %v, %v) above %v", sa, sb, sc, lim)
	}
}

func TestOnlineFA(t *testing.T) {
	cfg := OnlineConfig{D: 20, K: 3, Lo: 1, Hi: 10, Checkpoints: []int{100, 1000, 10000}, Warmup: 100, SGALR: 0.001,
		EMStepExponent: 0.6, EMStepDelay: 20, EMAverageAfter: 2000, EMRecenter: true, Weighted: true}
	if testing.Short() && !long() {
		cfg.Checkpoints, cfg.EMAverageAfter = []int{100, 1000, 3000}, 1000
	}
	if long() {
		cfg = OnlineConfig{D: 100, K: 10, Lo: 1, Hi: 10, Checkpoints: DefaultCheckpoints, Warmup: 100, SGALR: 0.001,
			EMStepExponent: 0.6, EMStepDelay: 100, EMAverageAfter: 5000, EMRecenter: true}
	}
	r, err := OnlineFA(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	last := len(r.T) - 1
	t.Logf("T=%v\nbatch %v\nEM %v\nEM averaged %v\nEM re-centred %v\nEM weighted %v\nSGA %v", r.T, r.Batch, r.EM,
		r.EMAveraged, r.EMRecentred, r.EMWeighted, r.SGA)
	if len(r.EMAveraged) != len(r.T) || len(r.EMRecentred) != len(r.T) || (cfg.Weighted && len(r.EMWeighted) != len(r.T)) {
		t.Fatalf("%d averaged, %d re-centred and %d weighted results for %d checkpoints", len(r.EMAveraged),
			len(r.EMRecentred), len(r.EMWeighted), len(r.T))
	}
	if !(r.EM[last] < r.EM[0]) || !(r.SGA[last] < r.SGA[0]) || !(r.Batch[last] < r.Batch[0]) || !(r.EMAveraged[last] < r.EMAveraged[0]) {
		t.Error("estimates did not improve with T")
	}
	ratio := 1.6 // small T: averaging has just started
	switch {
	case long(): // measured 1.09 averaged, 1.035 re-centred (means over 10 seeds, docs/RESULTS.md)
		ratio = 1.2
	case testing.Short():
		ratio = 2.5
	}
	if !(r.EMAveraged[last] <= ratio*r.Batch[last]) {
		t.Errorf("averaged online EM %v above %v × batch %v", r.EMAveraged[last], ratio, r.Batch[last])
	}
	if !(r.EMRecentred[last] <= ratio*r.Batch[last]) {
		t.Errorf("re-centred online EM %v above %v × batch %v", r.EMRecentred[last], ratio, r.Batch[last])
	}
}

// summarizeDistances runs experiment at cfg once per seed and summarises the relative mean
// error, the relative covariance error and W2 per dimension over the seeds.
func summarizeDistances(t *testing.T, experiment func(RegressionConfig, uint64) (*RegressionResult, error), cfg RegressionConfig, seeds []uint64) (relMean, relCov, w2 Summary) {
	t.Helper()
	var a, b, c []float64
	for _, s := range seeds {
		r, err := experiment(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		a = append(a, r.Distances.RelMean)
		b = append(b, r.Distances.RelCov)
		c = append(c, r.Distances.W2PerDim)
	}
	return Summarize(a), Summarize(b), Summarize(c)
}

// TestRegressionUpdates: an epoch is N/M minibatches, not rounded down, and an update takes L.
func TestRegressionUpdates(t *testing.T) {
	for _, tc := range []struct {
		n, batch, l, epochs, want int
	}{
		{1000, 100, 10, 5000, 5000}, // paper 000 §4.1
		{253, 100, 10, 25000, 6325}, // Boston's half: 2.53 minibatches an epoch (5000 if rounded down)
		{341, 100, 10, 23000, 7843}, // breast cancer's half (6900 if rounded down)
		{50, 100, 1, 3, 1},          // a data set smaller than a minibatch
	} {
		c := RegressionConfig{N: tc.n, Batch: tc.batch, MCSamples: tc.l, Epochs: tc.epochs}
		if got := c.Updates(); got != tc.want {
			t.Errorf("N %d, M %d, L %d, %d epochs: %d updates, want %d", tc.n, tc.batch, tc.l, tc.epochs, got, tc.want)
		}
	}
}
