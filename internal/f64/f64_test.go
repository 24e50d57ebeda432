package f64

import (
	"math"
	"testing"
)

func TestSigmoid(t *testing.T) {
	for _, c := range []struct{ x, want float64 }{
		{0, 0.5}, {math.Log(3), 0.75}, {-math.Log(3), 0.25}, {800, 1}, {-800, 0},
	} {
		if got := Sigmoid(c.x); !(math.Abs(got-c.want) <= 1e-15) {
			t.Errorf("Sigmoid(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

func TestSoftplus(t *testing.T) {
	// log(1 + e⁰) = log 2, log(1 + e^{log 3}) = log 4; far out, x itself and eˣ.
	for _, c := range []struct{ x, want float64 }{
		{0, math.Log(2)}, {math.Log(3), math.Log(4)}, {-math.Log(3), math.Log(4.0 / 3)}, {800, 800}, {-800, 0}, {-40, math.Exp(-40)},
	} {
		if got := Softplus(c.x); !(math.Abs(got-c.want) <= 1e-15*math.Abs(c.want)) {
			t.Errorf("Softplus(%g) = %g, want %g", c.x, got, c.want)
		}
	}
}

// TestSoftplus32: the same bits as float32(Softplus(float64(x))) for every 61st float32 bit
// pattern (70 M values; all 2³² agreed when it was written) and the special values.
func TestSoftplus32(t *testing.T) {
	step := uint64(61)
	if testing.Short() {
		step = 4099
	}
	check := func(x float32) {
		want := float32(Softplus(float64(x)))
		if got := Softplus32(x); math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("Softplus32(%g) = %g (%#x), want %g (%#x)", x, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for b := uint64(0); b < 1<<32; b += step {
		check(math.Float32frombits(uint32(b)))
	}
	for _, x := range []float64{0, 7, -7, math.Nextafter(7, 0), math.Inf(1), math.Inf(-1), math.NaN(), -104, 89} {
		check(float32(x))
	}
}

// TestSoftplusSigmoid32: the same bits as Softplus32(x) and Sigmoid(float64(x)) for every 61st
// float32 bit pattern (all 2³² agreed when it was written) and the special values.
func TestSoftplusSigmoid32(t *testing.T) {
	step := uint64(61)
	if testing.Short() {
		step = 4099
	}
	check := func(x float32) {
		sp, sig := SoftplusSigmoid32(x)
		wsp, wsig := Softplus32(x), Sigmoid(float64(x))
		if math.Float32bits(sp) != math.Float32bits(wsp) && !(sp != sp && wsp != wsp) ||
			math.Float64bits(sig) != math.Float64bits(wsig) && !(sig != sig && wsig != wsig) {
			t.Fatalf("SoftplusSigmoid32(%g) = %g, %g, want %g, %g", x, sp, sig, wsp, wsig)
		}
	}
	for b := uint64(0); b < 1<<32; b += step {
		check(math.Float32frombits(uint32(b)))
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 7, -7, math.Nextafter(7, 0), math.Inf(1), math.Inf(-1), math.NaN(), -104, 89} {
		check(float32(x))
	}
}

func TestLogBeta(t *testing.T) {
	// B(1, 1) = 1, B(2, 3) = 1/12, B(0.5, 0.5) = π.
	for _, c := range []struct{ a, b, want float64 }{{1, 1, 0}, {2, 3, -math.Log(12)}, {0.5, 0.5, math.Log(math.Pi)}} {
		if got := LogBeta(c.a, c.b); !(math.Abs(got-c.want) <= 1e-13) {
			t.Errorf("LogBeta(%g, %g) = %g, want %g", c.a, c.b, got, c.want)
		}
	}
}

// TestLogBinomials: exp of each entry is the binomial coefficient, counted by Pascal's rule (a
// recurrence that shares nothing with the Lgamma formula), up to degree 60 (C(60, 30) ≈ 1.2e17);
// a negative degree has none.
func TestLogBinomials(t *testing.T) {
	// Pascal's rows in float64 up to the runtime's MaxBernsteinDegree (1000; C(1000, 500) ≈
	// 2.7e299 still fits), each entry within n·ε of exact. Up to 60 the coefficients must match
	// to 1e-12 relative; beyond, the log of a coefficient is a difference of log-gammas of up to
	// lgamma(n+1) ≈ 5912, so it is checked to 32·ε·(1 + lgamma(n+1)) absolute.
	row := []float64{1}
	for n := 0; n <= 1000; n++ {
		got := LogBinomials(n)
		if len(got) != n+1 {
			t.Fatalf("LogBinomials(%d) has %d entries, want %d", n, len(got), n+1)
		}
		lg, _ := math.Lgamma(float64(n + 1))
		tol := 32 * 0x1p-52 * (1 + lg)
		for i, c := range row {
			if n <= 60 && !(math.Abs(math.Exp(got[i])-c) <= 1e-12*c) {
				t.Errorf("exp LogBinomials(%d)[%d] = %g, want C(%d, %d) = %g", n, i, math.Exp(got[i]), n, i, c)
			}
			if !(math.Abs(got[i]-math.Log(c)) <= tol) {
				t.Errorf("LogBinomials(%d)[%d] = %.17g, want log C(%d, %d) = %.17g (± %.2g)", n, i, got[i], n, i, math.Log(c), tol)
			}
		}
		next := make([]float64, n+2)
		next[0], next[n+1] = 1, 1
		for i := 1; i <= n; i++ {
			next[i] = row[i-1] + row[i]
		}
		row = next
	}
	if got := LogBinomials(-1); got != nil {
		t.Errorf("LogBinomials(-1) = %v, want nil", got)
	}
}

func TestFrom(t *testing.T) {
	got := From([]float32{1.5, -2, 0.1})
	if len(got) != 3 || got[0] != 1.5 || got[1] != -2 || got[2] != float64(float32(0.1)) {
		t.Errorf("From = %v", got)
	}
}

func TestSoftplusInv(t *testing.T) {
	for _, x := range []float64{-30, -9.21, -1, 0, 0.5, 3, 40, 800} {
		y := Softplus(x)
		if got := SoftplusInv(y); !(math.Abs(got-x) <= 1e-9*max(1, math.Abs(x))) {
			t.Errorf("SoftplusInv(Softplus(%g) = %g) = %g", x, y, got)
		}
	}
	// log(e^y − 1) for a y where the direct form is exact enough to compare
	if got, want := SoftplusInv(2), math.Log(math.Expm1(2)); !(math.Abs(got-want) <= 1e-15) {
		t.Errorf("SoftplusInv(2) = %g, want %g", got, want)
	}
}

func TestInto(t *testing.T) {
	buf := make([]float64, 0, 4)
	got := Into(buf, []float32{1.5, -2})
	if len(got) != 2 || got[0] != 1.5 || got[1] != -2 || &got[0] != &buf[:1][0] {
		t.Fatalf("Into(cap 4, 2 values) = %v, want [1.5 -2] in the given memory", got)
	}
	if got := Into(buf, []float32{1, 2, 3, 4, 5}); len(got) != 5 || got[4] != 5 {
		t.Fatalf("Into(cap 4, 5 values) = %v, want a new slice [1 2 3 4 5]", got)
	}
	if got := Into(nil, []float64{}); len(got) != 0 {
		t.Fatalf("Into(nil, empty) = %v, want empty", got)
	}
}

func TestDot(t *testing.T) {
	a := []float64{1, 2, 3, 4, 5, 6, 7}
	b := []float64{7, 6, 5, 4, 3, 2, 1, 100} // longer than a: the tail is not read
	if got := Dot(a, b); got != 84 {
		t.Errorf("Dot = %g, want 84", got)
	}
	if got := Dot(nil, nil); got != 0 {
		t.Errorf("Dot(nil, nil) = %g", got)
	}
}
