package bfvi

import (
	"math"
	"math/rand/v2"
	"testing"
)

// logisticData returns n draws of x ~ N(0, 1), offsets o ~ N(0, 1) and y ~ Bernoulli(σ(o − 0.5 + 1.2x)).
func logisticData(n int) (x, off []float64, y []int) {
	rng := rand.New(rand.NewPCG(3, 9))
	for i := 0; i < n; i++ {
		xi, oi := rng.NormFloat64(), rng.NormFloat64()
		p := 1 / (1 + math.Exp(-(oi - 0.5 + 1.2*xi)))
		yi := 0
		if rng.Float64() < p {
			yi = 1
		}
		x, off, y = append(x, xi), append(off, oi), append(y, yi)
	}
	return x, off, y
}

// TestLogisticLogJoint checks the log joint against a direct evaluation with math.Log of the
// Bernoulli probabilities, and its gradient against central finite differences.
func TestLogisticLogJoint(t *testing.T) {
	x, off, y := logisticData(40)
	for _, tc := range []struct {
		name      string
		off       []float64
		intercept bool
		theta     []float64
	}{
		{"intercept", nil, true, []float64{-0.3, 0.8}},
		{"offset-only", off, false, []float64{1.1}},
		{"offset-intercept", off, true, []float64{0.4, -2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := NewLogistic(x, y, tc.off, tc.intercept, 3)
			if err != nil {
				t.Fatal(err)
			}
			if m.Dim() != len(tc.theta) || len(m.Names()) != m.Dim() {
				t.Fatalf("dimension %d, names %v", m.Dim(), m.Names())
			}
			want := 0.0
			for _, w := range tc.theta {
				want += -0.5*w*w/9 - math.Log(3) - 0.5*math.Log(2*math.Pi)
			}
			for i := range x {
				eta := tc.theta[len(tc.theta)-1] * x[i]
				if tc.intercept {
					eta += tc.theta[0]
				}
				if tc.off != nil {
					eta += tc.off[i]
				}
				p := 1 / (1 + math.Exp(-eta))
				if y[i] == 1 {
					want += math.Log(p)
				} else {
					want += math.Log(1 - p)
				}
			}
			g := make([]float64, m.Dim())
			if got := m.LogJoint(tc.theta, g); !(math.Abs(got-want) <= 1e-10*math.Abs(want)) {
				t.Errorf("LogJoint = %.12g, want %.12g", got, want)
			}
			for j := range tc.theta {
				h := 1e-6
				p := append([]float64(nil), tc.theta...)
				q := append([]float64(nil), tc.theta...)
				p[j] += h
				q[j] -= h
				num := (m.LogJoint(p, nil) - m.LogJoint(q, nil)) / (2 * h)
				if !(math.Abs(num-g[j]) <= 1e-6*math.Max(1, math.Abs(num))) {
					t.Errorf("∂/∂θ[%d] = %.10g, finite difference %.10g", j, g[j], num)
				}
			}
			if !math.IsNaN(m.LogJoint(make([]float64, m.Dim()+1), nil)) {
				t.Error("wrong-length θ not reported")
			}
		})
	}
}

// TestLogisticExtremeLinearPredictor checks that the log joint stays finite and accurate where
// σ(η) rounds to 0 or 1: log σ(−800) = −800 to rounding.
func TestLogisticExtremeLinearPredictor(t *testing.T) {
	m, err := NewLogistic([]float64{1, 1}, []int{1, 0}, []float64{-800, 800}, false, 1e6)
	if err != nil {
		t.Fatal(err)
	}
	prior := -math.Log(1e6) - 0.5*math.Log(2*math.Pi)
	if got, want := m.LogJoint([]float64{0}, nil), -1600+prior; !(math.Abs(got-want) <= 1e-9) {
		t.Errorf("LogJoint = %.12g, want %.12g", got, want)
	}
}

func TestLogisticBadInput(t *testing.T) {
	for name, f := range map[string]func() error{
		"empty":    func() error { _, err := NewLogistic(nil, nil, nil, true, 1); return err },
		"mismatch": func() error { _, err := NewLogistic([]float64{1, 2}, []int{1}, nil, true, 1); return err },
		"label 2":  func() error { _, err := NewLogistic([]float64{1}, []int{2}, nil, true, 1); return err },
		"offsets":  func() error { _, err := NewLogistic([]float64{1}, []int{1}, []float64{1, 2}, true, 1); return err },
		"nan x":    func() error { _, err := NewLogistic([]float64{math.NaN()}, []int{1}, nil, true, 1); return err },
		"inf offset": func() error {
			_, err := NewLogistic([]float64{1}, []int{1}, []float64{math.Inf(1)}, true, 1)
			return err
		},
		"prior 0": func() error { _, err := NewLogistic([]float64{1}, []int{1}, nil, true, 0); return err },
	} {
		if f() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
