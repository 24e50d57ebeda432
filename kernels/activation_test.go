package kernels

import (
	"math"
	"testing"

	"github.com/x448/float16"
)

// activationInputs covers ordinary values and extremes.
func activationInputs() []float32 {
	x := []float32{0, -0, 1e-30, -1e-30, 0.5, -0.5, 1, -1, 3, -3, 10, -10, 20, -20, 50, -50, 88, -88, 100, -100, 1e4, -1e4, 3e38, -3e38}
	r := newRand(7)
	for i := 0; i < 200; i++ {
		x = append(x, float32(8*(2*r.Float64()-1)))
	}
	return x
}

func TestActivations(t *testing.T) {
	cases := []struct {
		name string
		f    func([]float32)
		ref  func(float64) float64
		tol  float64 // relative, plus the same absolute
	}{
		{"ReLU", ReLU, func(v float64) float64 { return math.Max(v, 0) }, 0},
		{"Tanh", Tanh, math.Tanh, 2 * eps32},
		{"Sigmoid", Sigmoid, func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }, 4 * eps32},
		// Φ(v) = erfc(−v/√2)/2 evaluated independently via the complementary tail.
		{"GELU", GELU, func(v float64) float64 {
			if v < 0 {
				return v * 0.5 * math.Erfc(-v/math.Sqrt2)
			}
			return v * (1 - 0.5*math.Erfc(v/math.Sqrt2))
		}, 4 * eps32},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := activationInputs()
			in := append([]float32(nil), x...)
			tc.f(x)
			for i, v := range x {
				want := float64(float32(tc.ref(float64(in[i]))))
				if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) && !math.IsInf(want, 0) {
					t.Fatalf("%s(%g) = %g", tc.name, in[i], v)
				}
				if !closeTo(float64(v), want, tc.tol*math.Abs(want)+1e-37) {
					t.Fatalf("%s(%g) = %g, want %g", tc.name, in[i], v, want)
				}
			}
		})
	}
	// Signs of zero and NaN propagation of ReLU.
	x := []float32{float32(math.NaN())}
	ReLU(x)
	if !math.IsNaN(float64(x[0])) {
		t.Errorf("ReLU(NaN) = %g, want NaN", x[0])
	}
}

func TestSoftmax(t *testing.T) {
	inputs := [][]float32{
		{0},
		{1, 2, 3},
		{1e4, -1e4, 0},
		{-1e4, -1e4 + 1, -1e4 + 2},
		{1e4, 1e4, 1e4, 1e4},
		{88, 89, 90, -3e38, 3e38},
		activationInputs()[24:],
	}
	for k, x := range inputs {
		// float64 reference
		mx := math.Inf(-1)
		for _, v := range x {
			mx = math.Max(mx, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - mx)
		}
		lse := mx + math.Log(s)

		dst := make([]float32, len(x))
		Softmax(dst, x)
		var total float64
		for i, p := range dst {
			want := math.Exp(float64(x[i]) - lse)
			if math.IsNaN(float64(p)) || !closeTo(float64(p), want, 4*eps32*want+1e-38) {
				t.Fatalf("input %d: softmax[%d] = %g, want %g", k, i, p, want)
			}
			total += float64(p)
		}
		if !closeTo(total, 1, 1e-5) {
			t.Fatalf("input %d: softmax sums to %g", k, total)
		}

		alias := append([]float32(nil), x...)
		Softmax(alias, alias)
		for i := range alias {
			if alias[i] != dst[i] {
				t.Fatalf("input %d: aliased softmax differs at %d", k, i)
			}
		}

		alias = append([]float32(nil), x...)
		got := LogSoftmax(alias, alias)
		if !closeTo(float64(got), lse, 2*eps32*math.Abs(lse)+1e-6) {
			t.Fatalf("input %d: logsumexp = %g, want %g", k, got, lse)
		}
		for i, v := range alias {
			want := float64(float32(float64(x[i]) - lse))
			if math.IsNaN(float64(v)) || !closeTo(float64(v), want, 2*eps32*(math.Abs(float64(x[i]))+math.Abs(lse))+1e-6) {
				t.Fatalf("input %d: logsoftmax[%d] = %g, want %g", k, i, v, want)
			}
		}
	}
	if got := LogSoftmax(nil, nil); !math.IsInf(float64(got), -1) {
		t.Fatalf("LogSoftmax of empty = %g, want -Inf", got)
	}
}

func TestF16ToF32AllPatterns(t *testing.T) {
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	F16ToF32(dst, src)
	for i, h := range src {
		want := float16.Frombits(h).Float32()
		got := dst[i]
		if math.IsNaN(float64(want)) {
			if !math.IsNaN(float64(got)) || math.Signbit(float64(got)) != math.Signbit(float64(want)) {
				t.Fatalf("%#04x: got %g (%#08x), want NaN %#08x", h, got, math.Float32bits(got), math.Float32bits(want))
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("%#04x: got %g (%#08x), want %g (%#08x)", h, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	// Spot checks against closed forms.
	for _, c := range []struct {
		h    uint16
		want float32
	}{{0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, 1.0 / (1 << 24)}, {0x0400, 1.0 / (1 << 14)}, {0x3555, 0.333251953125}} {
		if got := f16ToF32(c.h); got != c.want {
			t.Errorf("%#04x: got %g, want %g", c.h, got, c.want)
		}
	}
}
