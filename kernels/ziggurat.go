package kernels

import "math"

// Ziggurat tables for the standard normal (Marsaglia & Tsang 2000, 128 layers), laid out for
// one 32-bit word per draw: bits 0-6 pick the layer, bit 7 the sign and bits 8-31 the
// 24-bit position within the layer, so the layer index and the magnitude use disjoint bits.
const (
	zigLayers = 128
	zigR      = 3.442619855899              // right edge of the base layer's rectangle part
	zigV      = 9.91256303526217e-3         // area of every layer (unnormalised density exp(−x²/2))
	zigScale  = 1 << 24                     // range of the 24-bit position
	zigInvR   = 1 / 3.442619855899          // 1/zigR for the tail sampler
	_         = zigLayers & (zigLayers - 1) // power of two (bit-mask layer index)
)

// zigTables holds, per layer i, the acceptance threshold k (accept position u if u < k[i]),
// the scale w (x = u·w[i]) and the density f at the layer's right edge. They are computed once
// and never written afterwards.
type zigTables struct {
	k [zigLayers]uint32
	w [zigLayers]float64
	// w32 is w rounded to float32: the fast path computes x = float32(u)·w32[i] in float32
	// (u < 2²⁴ is exact), the same product in Go and in SIMD.
	w32 [zigLayers]float32
	f   [zigLayers]float64
	// fast holds, for every low byte b of a word (layer b & 127, sign bit 7), the pair {k, bits of
	// ±w32} of b's layer, the sign negated when bit 7 is set: the SIMD fast path loads both with
	// one 64-bit load and gets the sign from the product, since float32(u)·(−w) = −(float32(u)·w)
	// exactly (−0 for u = 0, as or-ing the sign bit in gives).
	fast [2 * zigLayers][2]uint32
	// tbl is the fast path's tables for byte-wise lookups (NEON TBL); see zigTBL.
	tbl zigTBL
	// wedge holds, per layer i ≥ 1, what the wedge test of zigRun needs (see zigWedge); of entry
	// 0 only w is set (the base layer's slow path is the tail, which zigRun leaves to Go).
	wedge [zigLayers]zigWedge
}

// zigTBL holds the fast path's tables one byte per layer, for a lookup of sixteen words at once
// by TBL/TBX over 128-byte tables: khi[l] = k[l] >> 16, so that u >> 16 < khi[l] implies u < k[l]
// (a word with u >> 16 = khi[l] is left to the exact test), and w[b][l] = byte b of the bits of
// w32[l].
type zigTBL struct {
	khi [zigLayers]uint8
	w   [4][zigLayers]uint8
}

// zigWedge is one layer's row of the wedge test without exp: x = float64(u)·w, the uniform
// height y = f + U·d (d = f[i−1] − f[i], the same double Stream.Normal computes), and two lines
// in q = x·x with the common slope b that bound the density over every x the wedge can give:
// alo + b·q < exp(−x²/2) < ahi + b·q, with a margin far above the rounding of these products and
// of math.Exp. A draw with y below the lower line is accepted and one above the upper line
// rejected exactly as y < math.Exp(−x²/2) decides; only a y between the lines needs exp. The row
// is 64 bytes (two fields spare) so that the assembly indexes it with a shift.
type zigWedge struct {
	w, f, d, b, alo, ahi float64
	_                    [2]float64
}

// zigWedgeMargin is how far the lines of zigWedge are moved apart beyond the bound on the
// density's distance from its chord: the rounding of y, of the lines' fused multiply-adds and of
// math.Exp(−0.5·x·x) (argument rounding included) are all below 1e-14 for x ≤ r.
const zigWedgeMargin = 1e-12

var zig = newZigTables()

// newZigTables computes the layer boundaries x_127 = r > x_126 > … > x_1 > x_0 = 0 from
// x_i = f⁻¹(v/x_{i+1} + f(x_{i+1})), with f(x) = exp(−x²/2).
func newZigTables() *zigTables {
	t := new(zigTables)
	x := zigR
	fx := math.Exp(-0.5 * x * x)
	q := zigV / fx // width of the base layer's rectangle (it also covers the tail)
	t.k[0] = uint32(x / q * zigScale)
	t.w[0] = q / zigScale
	t.f[0] = 1
	t.w[zigLayers-1] = x / zigScale
	t.f[zigLayers-1] = fx
	for i := zigLayers - 2; i >= 1; i-- {
		xn := math.Sqrt(-2 * math.Log(zigV/x+math.Exp(-0.5*x*x)))
		t.k[i+1] = uint32(xn / x * zigScale)
		x = xn
		t.f[i] = math.Exp(-0.5 * x * x)
		t.w[i] = x / zigScale
	}
	t.k[1] = 0
	for i, w := range t.w {
		t.w32[i] = float32(w)
	}
	for b := range t.fast {
		l := b & (zigLayers - 1)
		t.fast[b] = [2]uint32{t.k[l], math.Float32bits(t.w32[l]) | uint32(b&0x80)<<24}
	}
	for l := range zigLayers {
		t.tbl.khi[l] = uint8(t.k[l] >> 16)
		bits := math.Float32bits(t.w32[l])
		for b := range t.tbl.w {
			t.tbl.w[b][l] = uint8(bits >> (8 * b))
		}
	}
	t.wedge[0].w = t.w[0] // for a retry word in the base layer's rectangle
	for i := 1; i < zigLayers; i++ {
		t.wedge[i] = newZigWedge(t.w[i], t.k[i], t.f[i], t.f[i-1])
	}
	return t
}

// newZigWedge computes a layer's zigWedge from its scale w, threshold k and the densities at its
// right edge (f) and at the edge above (fUp). The wedge's x run over [a, c] = [k·w, (2²⁴−1)·w];
// as a function of q = x², the density G(q) = exp(−q/2) is convex, so over [a², c²] it lies below
// its chord and above the tangent parallel to the chord (at q* where G′(q*) = −G(q*)/2 is the
// chord's slope).
func newZigWedge(w float64, k uint32, f, fUp float64) zigWedge {
	G := func(q float64) float64 { return math.Exp(-0.5 * q) }
	a, c := float64(k)*w, float64(zigScale-1)*w
	qa, qc := a*a, c*c
	b := (G(qc) - G(qa)) / (qc - qa)
	chord := G(qa) - b*qa
	qs := -2 * math.Log(-2*b)
	tangent := G(qs) - b*qs
	return zigWedge{
		w: w, f: f, d: fUp - f,
		b: b, alo: tangent - zigWedgeMargin, ahi: chord + zigWedgeMargin,
	}
}

// uniformOpen maps a word to (0, 1).
func uniformOpen(w uint32) float64 { return (float64(w) + 0.5) * (1.0 / (1 << 32)) }

// zigSlow completes a ziggurat draw (whose fast path is inlined in Stream.Normal) whose first word w fell outside its layer's inner rectangle:
// the wedge test, the tail of the base layer, or a retry.
func (s *Stream) zigSlow(w uint32) float64 {
	for {
		i := w & (zigLayers - 1)
		u := w >> 8
		x := float64(u) * zig.w[i]
		switch {
		case u < zig.k[i]:
			// Inside the inner rectangle (only reached on retries).
		case i == 0:
			// Tail beyond r (Marsaglia 1964): x = r + e1/r with e1, e2 exponential, accepted if
			// 2·e2 ≥ (e1/r)².
			for {
				e1 := -math.Log(uniformOpen(s.word())) * zigInvR
				e2 := -math.Log(uniformOpen(s.word()))
				if e2+e2 >= e1*e1 {
					x = zigR + e1
					break
				}
			}
		default:
			// Wedge: accept if a uniform height in [f(x_i), f(x_{i-1})] lies under the density.
			y := zig.f[i] + uniformOpen(s.word())*(zig.f[i-1]-zig.f[i])
			if y >= math.Exp(-0.5*x*x) {
				w = s.word()
				continue
			}
		}
		if w&0x80 != 0 {
			return -x
		}
		return x
	}
}
