package autodiff

import (
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits32 fails unless got and want hold the same float32 bits.
func sameBits32(t *testing.T, what string, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %g (%#x), want %g (%#x)", what, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
		}
	}
}

// TestAddMulSoftplusCachedBits: AddMul(m, SoftplusCached(ρ), ε) twice on one cache — the first
// from an empty cache, the second from a full one — give the values and gradients
// Add(m, Mul(Softplus(ρ), ε)) twice gives, bit for bit (the weight sampling of an ffg layer with
// whole weights, twice a step).
func TestAddMulSoftplusCachedBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1000
	vals := func(scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		v[0], v[1] = 0, float32(math.Copysign(0, -1))
		return v
	}
	mu, rho := vals(1), vals(6)
	e1, e2, up := vals(1), vals(1), vals(1)
	up[2] = float32(math.Copysign(0, -1))
	run := func(fused bool) (out1, out2, gm, gr []float32) {
		pm, _ := NewParam("m", mu, n)
		pr, _ := NewParam("r", rho, n)
		tp := NewTape[float32]()
		var cache SoftplusCache
		sample := func(e []float32) *Var[float32] {
			if fused {
				return tp.AddMul(tp.Param(pm), tp.SoftplusCached(tp.Param(pr), &cache), tp.Const(e, n))
			}
			return tp.Add(tp.Param(pm), tp.Mul(tp.Softplus(tp.Param(pr)), tp.Const(e, n)))
		}
		w1 := sample(e1)
		w2 := sample(e2)
		loss := tp.Add(tp.Sum(tp.Mul(w1, tp.Const(up, n))), tp.Sum(tp.Mul(tp.Square(w2), tp.Const(up, n))))
		if err := tp.Backward(loss); err != nil {
			t.Fatal(err)
		}
		return append([]float32(nil), w1.Value()...), append([]float32(nil), w2.Value()...), pm.Grad, pr.Grad
	}
	a1, a2, am, ar := run(false)
	b1, b2, bm, br := run(true)
	sameBits32(t, "first sample", b1, a1)
	sameBits32(t, "second sample", b2, a2)
	sameBits32(t, "μ gradient", bm, am)
	sameBits32(t, "ρ gradient", br, ar)
}

// TestReLUMaxPool2DBits: ReLUMaxPool2D gives MaxPool2D(ReLU(x))'s values and gradient into x
// bit for bit, on inputs with ties, zeros of both signs, negative windows, NaNs and odd sizes,
// and falls back to the two ops for other windows.
func TestReLUMaxPool2DBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		shape []int
		opt   Pool2DOptions
	}{
		{[]int{3, 2, 6, 8}, Pool2DOptions{KH: 2, KW: 2}},
		{[]int{2, 3, 7, 5}, Pool2DOptions{KH: 2, KW: 2}},
		{[]int{2, 2, 7, 7}, Pool2DOptions{KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}},
	} {
		n := c.shape[0] * c.shape[1] * c.shape[2] * c.shape[3]
		x := make([]float32, n)
		for i := range x {
			switch rng.IntN(8) {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(math.Copysign(0, -1))
			case 2:
				x[i] = float32(rng.IntN(3)) // ties
			default:
				x[i] = float32(rng.NormFloat64())
			}
		}
		x[5] = float32(math.NaN())
		run := func(fused bool) (out, grad []float32) {
			p, _ := NewParam("x", x, c.shape...)
			tp := NewTape[float32]()
			var y *Var[float32]
			if fused {
				y = tp.ReLUMaxPool2D(tp.Param(p), c.opt)
			} else {
				y = tp.MaxPool2D(tp.ReLU(tp.Param(p)), c.opt)
			}
			urng := rand.New(rand.NewPCG(7, 8))
			up := make([]float32, y.Len())
			for i := range up {
				up[i] = float32(urng.NormFloat64())
			}
			up[0] = float32(math.Copysign(0, -1))
			if err := tp.BackwardFrom(y, up); err != nil {
				t.Fatal(err)
			}
			return append([]float32(nil), y.Value()...), p.Grad
		}
		a, ga := run(false)
		b, gb := run(true)
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
				t.Fatalf("%v: value %d = %g, want %g", c.shape, i, b[i], a[i])
			}
		}
		sameBits32(t, "gradient", gb, ga)
	}
}

// TestSoftplusCachedBits: SoftplusCached gives Softplus's values and gradients bit for bit over
// a sequence of inputs of which some elements change (to other values, to ±0 and NaN) between
// calls, starting from an empty cache; a cache of another length is refilled.
func TestSoftplusCachedBits(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const n = 500
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.NormFloat64() * 8)
	}
	var cache SoftplusCache
	for round := 0; round < 6; round++ {
		if round == 4 {
			x = x[:n-3] // another length
		}
		for k := 0; k < 20; k++ {
			i := rng.IntN(len(x))
			switch k % 4 {
			case 0:
				x[i] = 0
			case 1:
				x[i] = float32(math.Copysign(0, -1))
			case 2:
				x[i] = float32(math.NaN())
			default:
				x[i] = math.Nextafter32(x[i], 100)
			}
		}
		up := make([]float32, len(x))
		for i := range up {
			up[i] = float32(rng.NormFloat64())
		}
		run := func(c *SoftplusCache) (y, g []float32) {
			p, _ := NewParam("x", x, len(x))
			tp := NewTape[float32]()
			s := tp.SoftplusCached(tp.Param(p), c)
			if err := tp.BackwardFrom(s, up); err != nil {
				t.Fatal(err)
			}
			return append([]float32(nil), s.Value()...), p.Grad
		}
		want, wantG := run(nil)
		got, gotG := run(&cache)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) && !(got[i] != got[i] && want[i] != want[i]) {
				t.Fatalf("round %d: softplus(%g) = %g, want %g", round, x[i], got[i], want[i])
			}
			if math.Float32bits(gotG[i]) != math.Float32bits(wantG[i]) && !(gotG[i] != gotG[i] && wantG[i] != wantG[i]) {
				t.Fatalf("round %d: gradient at %g = %g, want %g", round, x[i], gotG[i], wantG[i])
			}
		}
	}
}
