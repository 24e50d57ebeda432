package bfvi

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/edgebnn/edgebnn/internal/f64"
)

// randomFlow returns a degree-m flow with random parameters of moderate size.
func randomFlow(t *testing.T, rng *rand.Rand, m int) *Flow {
	t.Helper()
	p := make([]float64, NumFlowParams(m))
	for i := range p {
		p[i] = rng.NormFloat64()
	}
	p[0] += 0.5
	f, err := NewFlow(m, p)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFlowGradientsFiniteDifference(t *testing.T) {
	tests := []struct {
		m    int
		seed uint64
	}{{1, 1}, {2, 2}, {3, 3}, {5, 4}, {10, 5}, {20, 6}, {50, 7}}
	for _, tc := range tests {
		rng := rand.New(rand.NewPCG(tc.seed, 99))
		f := randomFlow(t, rng, tc.m)
		n := f.NumParams()
		dT, dL := make([]float64, n), make([]float64, n)
		for _, z := range []float64{-2.5, -0.7, 0, 0.3, 1.9, rng.NormFloat64()} {
			f.Eval(z, dT, dL)
			p := f.Params()
			for k := 0; k < n; k++ {
				h := 1e-6 * math.Max(1, math.Abs(p[k]))
				pp := append([]float64(nil), p...)
				pp[k] = p[k] + h
				fp, _ := NewFlow(tc.m, pp)
				tp, lp := fp.Eval(z, nil, nil)
				pp[k] = p[k] - h
				fm, _ := NewFlow(tc.m, pp)
				tm, lm := fm.Eval(z, nil, nil)
				nt, nl := (tp-tm)/(2*h), (lp-lm)/(2*h)
				if d := math.Abs(nt - dT[k]); !(d <= 1e-6*math.Max(1, math.Abs(nt))) {
					t.Errorf("M=%d z=%g: dθ/dλ[%d] = %.10g, finite difference %.10g", tc.m, z, k, dT[k], nt)
				}
				if d := math.Abs(nl - dL[k]); !(d <= 1e-6*math.Max(1, math.Abs(nl))) {
					t.Errorf("M=%d z=%g: dlogdet/dλ[%d] = %.10g, finite difference %.10g", tc.m, z, k, dL[k], nl)
				}
			}
			// log|dθ/dz| against a finite difference of θ in z.
			h := 1e-5
			num := (f.Forward(z+h) - f.Forward(z-h)) / (2 * h)
			if _, ld := f.Eval(z, nil, nil); !(math.Abs(math.Log(num)-ld) <= 1e-6) {
				t.Errorf("M=%d z=%g: log dθ/dz = %.10g, finite difference %.10g", tc.m, z, ld, math.Log(num))
			}
		}
	}
}

func TestFlowMonotoneAndInverse(t *testing.T) {
	for _, m := range []int{1, 2, 5, 10, 30, 50} {
		for seed := uint64(1); seed <= 5; seed++ {
			rng := rand.New(rand.NewPCG(seed, uint64(m)))
			f := randomFlow(t, rng, m)
			prev := math.Inf(-1)
			for z := -8.0; z <= 8.0; z += 0.01 {
				th := f.Forward(z)
				if !(th > prev) {
					t.Fatalf("M=%d seed %d: θ(%g) = %.17g not above θ(z−0.01) = %.17g", m, seed, z, th, prev)
				}
				prev = th
			}
			for i := 0; i < 50; i++ {
				z := 2 * rng.NormFloat64()
				th := f.Forward(z)
				z2, err := f.Inverse(th)
				if err != nil {
					t.Fatalf("M=%d: Inverse(θ(%g)): %v", m, z, err)
				}
				if !(math.Abs(z2-z) <= 1e-8*math.Max(1, math.Abs(z))) {
					t.Errorf("M=%d seed %d: Inverse(θ(%g)) = %.12g", m, seed, z, z2)
				}
			}
		}
	}
}

// TestFlowDensityNormalised integrates q(θ) over its support and checks LogDensity against the
// sample-based log q.
func TestFlowDensityNormalised(t *testing.T) {
	for _, m := range []int{1, 4, 10, 50} {
		rng := rand.New(rand.NewPCG(11, uint64(m)))
		f := randomFlow(t, rng, m)
		lo, hi := f.Support()
		n := 20000
		if testing.Short() {
			n = 3000
		}
		h := (hi - lo) / float64(n)
		s := 0.0
		for i := 0; i < n; i++ { // midpoint rule; q vanishes at both ends
			s += f.Density(lo + (float64(i)+0.5)*h)
		}
		s *= h
		if !(math.Abs(s-1) <= 2e-3) {
			t.Errorf("M=%d: ∫q = %.6f, want 1", m, s)
		}
		for _, z := range []float64{-1.3, 0.2, 2.2} {
			th := f.Forward(z)
			if d := math.Abs(f.LogDensity(th) - f.LogQ(z)); !(d <= 1e-8) {
				t.Errorf("M=%d: LogDensity(θ(%g)) − LogQ(%g) = %g", m, z, z, d)
			}
		}
		if !math.IsInf(f.LogDensity(hi+1), -1) || !math.IsInf(f.LogDensity(lo-1), -1) {
			t.Errorf("M=%d: density outside the support is not zero", m)
		}
		if _, err := f.Inverse(hi + 1); !errors.Is(err, ErrOutsideSupport) {
			t.Errorf("M=%d: Inverse outside support: %v", m, err)
		}
	}
}

// TestBernsteinStable checks the basis for degree 50 and beyond against exact values in the
// tails, where t = σ(z₁) rounds to 0 or 1.
func TestBernsteinStable(t *testing.T) {
	for _, m := range []int{50, 200} {
		p, err := FlowParamsLinear(m, -3, 5)
		if err != nil {
			t.Fatal(err)
		}
		f, _ := NewFlow(m, p)
		for _, z1 := range []float64{-700, -60, -5, 0, 5, 60, 700} {
			z3, ls := f.poly(z1)
			// Equally spaced coefficients make B linear: B(t) = −3 + 8t, B′ = 8.
			tt := f64.Sigmoid(z1)
			want := -3 + 8*tt
			if !(math.Abs(z3-want) <= 1e-12*8) {
				t.Errorf("M=%d z₁=%g: B = %.17g, want %.17g", m, z1, z3, want)
			}
			wantLS := math.Log(8) - f64.Softplus(-z1) - f64.Softplus(z1)
			if !(math.Abs(ls-wantLS) <= 1e-9*math.Max(1, math.Abs(wantLS))) {
				t.Errorf("M=%d z₁=%g: log slope %.17g, want %.17g", m, z1, ls, wantLS)
			}
		}
	}
}

func TestFlowBadInput(t *testing.T) {
	if _, err := NewFlow(0, nil); err == nil {
		t.Error("degree 0 accepted")
	}
	if _, err := NewFlow(2, []float64{0, 0, 0, 0, 0, 0}); err == nil {
		t.Error("short parameter vector accepted")
	}
	if _, err := NewFlow(1, []float64{0, math.NaN(), 0, 0, 0, 0}); err == nil {
		t.Error("NaN parameter accepted")
	}
	if _, err := FlowParamsLinear(3, 1, 1); err == nil {
		t.Error("empty range accepted")
	}
	p, _ := FlowParamsLinear(3, -1, 1)
	f, _ := NewFlow(3, p)
	if th, ld := f.Eval(0, make([]float64, 2), nil); !math.IsNaN(th) || !math.IsNaN(ld) {
		t.Error("short gradient buffer not reported")
	}
	if _, err := f.Inverse(math.NaN()); err == nil {
		t.Error("Inverse(NaN) accepted")
	}
}
