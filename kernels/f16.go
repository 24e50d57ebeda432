package kernels

import (
	"fmt"
	"math"
)

// F16ToF32 converts IEEE 754 binary16 bit patterns to float32, exactly (zeros, subnormals,
// infinities and NaN payloads are preserved; the NEON and F16C conversions set a signalling
// NaN's quiet bit, as the hardware does). It converts len(src) values into dst[:len(src)]
// and panics if dst is shorter than src.
func F16ToF32(dst []float32, src []uint16) {
	if len(dst) < len(src) {
		panic(fmt.Sprintf("kernels.F16ToF32: len(dst)=%d < len(src)=%d", len(dst), len(src)))
	}
	f16ToF32s(dst[:len(src)], src)
}

// f16ToF32sGeneric is the portable f16ToF32s: dst[i] = f16ToF32(src[i]) for len(src) values,
// a normal number (the common case) by moving its exponent and mantissa into place and
// rebiasing the exponent (+112), the rest through f16ToF32.
func f16ToF32sGeneric(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	for i, h := range src {
		if e := h & 0x7c00; e != 0 && e != 0x7c00 {
			dst[i] = math.Float32frombits(uint32(h&0x8000)<<16 | (uint32(h&0x7fff)<<13 + (127-15)<<23))
			continue
		}
		dst[i] = f16ToF32(h)
	}
}

// f16ToF32 converts one binary16 bit pattern.
func f16ToF32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// Zero or subnormal: man·2⁻²⁴ is exact in float32.
		v := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	default:
		return math.Float32frombits(sign | (exp+(127-15))<<23 | man<<13)
	}
}
