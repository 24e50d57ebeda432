package fa

import (
	"math"
	"math/rand/v2"
	"testing"
)

// swagReference is SWAG's covariance written out from the whole stream: the running means
// recomputed from scratch at every step for the deviations of the last k iterates.
func swagReference(thetas [][]float64, k int) (mean, cov []float64) {
	d, t := len(thetas[0]), len(thetas)
	runMean := func(upto int) []float64 {
		m := make([]float64, d)
		for _, th := range thetas[:upto] {
			for i, v := range th {
				m[i] += v / float64(upto)
			}
		}
		return m
	}
	mean = runMean(t)
	cov = make([]float64, d*d)
	for i := 0; i < d; i++ {
		sq := 0.0
		for _, th := range thetas {
			sq += th[i] * th[i] / float64(t)
		}
		cov[i*d+i] = 0.5 * max(sq-mean[i]*mean[i], 1e-30)
	}
	cols := min(t, k)
	if cols < 2 {
		return mean, cov
	}
	for s := t - cols; s < t; s++ {
		m := runMean(s + 1)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				cov[i*d+j] += 0.5 / float64(cols-1) * (thetas[s][i] - m[i]) * (thetas[s][j] - m[j])
			}
		}
	}
	return mean, cov
}

// TestSWAGMatchesDefinition: SWAG's FA model has Maddox et al.'s mean and covariance, for streams
// shorter and longer than the number of deviations kept.
func TestSWAGMatchesDefinition(t *testing.T) {
	const d, k = 6, 4
	for seed, steps := range []int{1, 3, 4, 50} {
		r := rand.New(rand.NewPCG(uint64(seed), 2))
		s, err := NewSWAG(d, k)
		if err != nil {
			t.Fatal(err)
		}
		var thetas [][]float64
		for range steps {
			th := make([]float64, d)
			for i := range th {
				th[i] = 3 + float64(i)*r.NormFloat64()
			}
			thetas = append(thetas, th)
			if err := s.Observe(th); err != nil {
				t.Fatal(err)
			}
		}
		m := s.Model()
		mean, cov := swagReference(thetas, k)
		if e := RelDistance(m.Mean, mean); !(e <= 1e-12) {
			t.Errorf("%d iterates: mean differs by %.2g (relative)", steps, e)
		}
		if e := RelDistance(m.Covariance(), cov); !(e <= 1e-12) {
			t.Errorf("%d iterates: covariance differs by %.2g (relative)", steps, e)
		}
		if err := m.Validate(); err != nil {
			t.Errorf("%d iterates: %v", steps, err)
		}
	}
}

// TestSWAGState: a learner restored from State continues exactly as the original.
func TestSWAGState(t *testing.T) {
	const d, k = 5, 3
	r := rand.New(rand.NewPCG(7, 7))
	next := func() []float64 {
		th := make([]float64, d)
		for i := range th {
			th[i] = r.NormFloat64()
		}
		return th
	}
	a, _ := NewSWAG(d, k)
	for range 7 {
		if err := a.Observe(next()); err != nil {
			t.Fatal(err)
		}
	}
	st, err := a.State()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewSWAG(d, k)
	if err := b.LoadState(st); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		th := next()
		if err := a.Observe(th); err != nil {
			t.Fatal(err)
		}
		if err := b.Observe(th); err != nil {
			t.Fatal(err)
		}
	}
	if e := RelDistance(a.Model().Covariance(), b.Model().Covariance()); e != 0 || a.Count() != b.Count() {
		t.Errorf("restored learner differs: covariance %.2g, counts %d and %d", e, a.Count(), b.Count())
	}
}

// TestSWAGErrors: bad iterates, sizes and states are refused and leave the learner unchanged.
func TestSWAGErrors(t *testing.T) {
	if _, err := NewSWAG(3, 4); err == nil {
		t.Error("rank above the dimension accepted")
	}
	s, _ := NewSWAG(3, 2)
	if err := s.Observe([]float64{1, 2}); err == nil {
		t.Error("short iterate accepted")
	}
	if err := s.Observe([]float64{1, math.NaN(), 2}); err == nil || s.Count() != 0 {
		t.Errorf("NaN iterate: %v, count %d", err, s.Count())
	}
	_ = s.Observe([]float64{1, 2, 3})
	st, _ := s.State()
	other, _ := NewSWAG(3, 1)
	if err := other.LoadState(st); err == nil {
		t.Error("state of another rank accepted")
	}
	st.Ints["cols"] = 2
	if err := s.LoadState(st); err == nil {
		t.Error("inconsistent column count accepted")
	}
	st.Ints["cols"] = 1
	st.Floats["mean"] = []float64{1, 2}
	if err := s.LoadState(st); err == nil || s.Count() != 1 {
		t.Errorf("short mean: %v, count %d", err, s.Count())
	}
}
