package quant

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// dec16 decodes a binary16 bit pattern to float64 (independent of x448/float16).
func dec16(h uint16) float64 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 0x1f
	m := float64(h & 0x3ff)
	switch e {
	case 0:
		return s * m * math.Ldexp(1, -24)
	case 31:
		if m == 0 {
			return s * math.Inf(1)
		}
		return math.NaN()
	}
	return s * (1 + m/1024) * math.Ldexp(1, e-15)
}

// ref16 rounds x to binary16, to nearest, ties to the even bit pattern, overflow to ±Inf (IEEE
// 754: |x| ≥ 65520 overflows).
func ref16(x float32) float64 {
	v := math.Abs(float64(x))
	var pos []uint16
	for h := uint16(0); h < 0x7c00; h++ {
		pos = append(pos, h)
	}
	var r float64
	if v >= 65520 {
		r = math.Inf(1)
	} else if v > 65504 {
		r = 65504
	} else {
		i := sort.Search(len(pos), func(i int) bool { return dec16(pos[i]) >= v })
		if dec16(pos[i]) == v {
			r = v
		} else {
			lo, hi := pos[i-1], pos[i]
			dl, dh := v-dec16(lo), dec16(hi)-v
			switch {
			case dl < dh:
				r = dec16(lo)
			case dh < dl:
				r = dec16(hi)
			case lo&1 == 0:
				r = dec16(lo)
			default:
				r = dec16(hi)
			}
		}
	}
	if math.Signbit(float64(x)) {
		return -r
	}
	return r
}

// TestRoundRNE: Round against an independent round-to-nearest-even reference, on edge
// cases (halfway points, the overflow threshold, subnormals and their halfway points, −0) and
// random float32 values across the binary16 range.
func TestRoundRNE(t *testing.T) {
	xs := []float32{0, float32(math.Copysign(0, -1)), 65504, 65519.99, 65520, 65535, -65520, 1 + 1.0/2048, 1 + 3.0/2048,
		float32(math.Ldexp(1, -24)), float32(math.Ldexp(1, -25)), float32(math.Ldexp(1.0000001, -25)), float32(math.Ldexp(3, -25)),
		float32(math.Ldexp(1, -26)), float32(math.Ldexp(1, -14)), float32(math.Ldexp(1023.5, -24)), float32(math.Ldexp(2047, -25)),
		2049, 2051, 4097, -4099}
	r := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		e := r.IntN(45) - 28
		xs = append(xs, float32(math.Ldexp(r.Float64()*2-1, e)))
		b := r.Uint32()
		x := math.Float32frombits(b)
		if !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) && math.Abs(float64(x)) < 70000 {
			xs = append(xs, x)
		}
	}
	bad := 0
	for _, x := range xs {
		got := float64(Round(x))
		want := ref16(x)
		if got != want || math.Signbit(got) != math.Signbit(want) {
			if bad < 10 {
				t.Errorf("Round(%g [%08x]) = %g, want %g", x, math.Float32bits(x), got, want)
			}
			bad++
		}
	}
}

// TestQuantizeNearMax: binary16 rounds (to nearest even) every |x| < 65520 to a finite value;
// 65504 < |x| < 65520 rounds to ±65504 exactly as clamping would, so Quantize stores them without
// allowClamp (it had refused them as outside the range); from 65520 on they round to ±Inf and are
// refused.
func TestQuantizeNearMax(t *testing.T) {
	for _, x := range []float32{65505, 65519, -65519.99} {
		if r := Round(x); math.IsInf(float64(r), 0) {
			t.Fatalf("Round(%g) = %g (the premise of this test is wrong)", x, r)
		}
		if _, _, err := Quantize("t", []float32{x}, false); err != nil {
			t.Errorf("Quantize(%g) without clamping: %v; Round gives the finite %g", x, err, Round(x))
		}
	}
	for _, x := range []float32{65520, -65520, 70000} {
		if r := Round(x); !math.IsInf(float64(r), 0) {
			t.Fatalf("Round(%g) = %g, want ±Inf (the premise of this test is wrong)", x, r)
		}
		if _, _, err := Quantize("t", []float32{x}, false); err == nil {
			t.Errorf("Quantize(%g) without clamping stored a value that rounds to ±Inf", x)
		}
	}
}
