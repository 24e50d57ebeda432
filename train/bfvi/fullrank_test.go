package bfvi

import (
	"math"
	"testing"
)

// gaussModel is log N(x; m, S) for a fixed 2-D covariance (a test target whose VI optimum is
// itself).
type gaussModel struct{}

func (gaussModel) Dim() int { return 2 }

func (gaussModel) LogJoint(x, grad []float64) float64 {
	// S = [[1, 0.8], [0.8, 1]], S⁻¹ = [[1, −0.8], [−0.8, 1]]/0.36, mean (1, −1).
	a, b := x[0]-1, x[1]+1
	p0, p1 := (a-0.8*b)/0.36, (b-0.8*a)/0.36
	if grad != nil {
		grad[0], grad[1] = -p0, -p1
	}
	return -0.5*(a*p0+b*p1) - log2Pi - 0.5*math.Log(0.36)
}

// TestFullRankGaussianRecoversCorrelation fits a correlated Gaussian target, which full-rank VI
// matches exactly (k̂ small) and mean-field VI cannot (k̂ larger).
func TestFullRankGaussianRecoversCorrelation(t *testing.T) {
	cfg := TrainConfig{Steps: 3000, Samples: 20, LR: 0.02, LREnd: 0.001, Rho: 0.9, Eps: 1e-7, Seed: 3}
	if testing.Short() {
		cfg.Steps = 1500
	}
	g, _, err := FitFullRankGaussianVI(gaussModel{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mu, s := g.Mean(), g.Cov()
	want := []float64{1, 0.8, 0.8, 1}
	if !(math.Abs(mu[0]-1) <= 0.05) || !(math.Abs(mu[1]+1) <= 0.05) {
		t.Errorf("mean %v, want (1, −1)", mu)
	}
	for i := range s {
		if !(math.Abs(s[i]-want[i]) <= 0.08) {
			t.Errorf("covariance %v, want %v", s, want)
			break
		}
	}
	lr, err := LogImportanceRatios(gaussModel{}, g, 4000, 1)
	if err != nil {
		t.Fatal(err)
	}
	kFull, err := ParetoK(lr)
	if err != nil {
		t.Fatal(err)
	}
	mf, _, err := FitGaussianVI(gaussModel{}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	lr, _ = LogImportanceRatios(gaussModel{}, mf, 4000, 1)
	kMF, _ := ParetoK(lr)
	t.Logf("k̂ full-rank %.2f, mean-field %.2f", kFull, kMF)
	if !(kFull < 0.5) || !(kMF > kFull) {
		t.Errorf("k̂ full-rank %g (want < 0.5), mean-field %g (want larger)", kFull, kMF)
	}
}
