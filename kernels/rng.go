package kernels

import (
	"math"
	"math/bits"
)

// Philox4x32 round and key-schedule constants (Salmon et al. 2011, Random123).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9 // golden ratio
	philoxW1 = 0xBB67AE85 // sqrt(3) - 1
)

// philox4x32 returns the Philox4x32-10 block for counter ctr under key: ten rounds, the key
// bumped by the Weyl constants before every round but the first.
func philox4x32(ctr [4]uint32, key [2]uint32) [4]uint32 {
	c0, c1, c2, c3 := ctr[0], ctr[1], ctr[2], ctr[3]
	k0, k1 := key[0], key[1]
	w0, w1 := uint32(philoxW0), uint32(philoxW1) // variables: the multiples wrap mod 2³²
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0, k1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+1*w0, k1+1*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+2*w0, k1+2*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+3*w0, k1+3*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+4*w0, k1+4*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+5*w0, k1+5*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+6*w0, k1+6*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+7*w0, k1+7*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+8*w0, k1+8*w1)
	c0, c1, c2, c3 = philoxRound(c0, c1, c2, c3, k0+9*w0, k1+9*w1)
	return [4]uint32{c0, c1, c2, c3}
}

// philoxBlocksGeneric fills dst (len(dst)/4 blocks; len(dst) must be a multiple of 4) with the
// Philox4x32-10 blocks block, block+1, … of stream (a, b) under key.
func philoxBlocksGeneric(dst []uint32, key [2]uint32, block uint64, a, b uint32) {
	for i := 0; i+4 <= len(dst); i += 4 {
		r := philox4x32([4]uint32{uint32(block), uint32(block >> 32), a, b}, key)
		d := dst[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = r[0], r[1], r[2], r[3]
		block++
	}
}

// philoxRound is one Philox4x32 S-P round with round key (k0, k1).
// philoxRowsGeneric fills dst with the first nb blocks of the streams (a, b), (a+1, b), … one
// after the other, 4·nb words each (len(dst)/(4·nb) streams).
func philoxRowsGeneric(dst []uint32, key [2]uint32, a, b uint32, nb int) {
	for r := 0; r < len(dst)/(4*nb); r++ {
		philoxBlocks(dst[r*4*nb:(r+1)*4*nb], key, 0, a+uint32(r), b)
	}
}

func philoxRound(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	hi0, lo0 := bits.Mul32(philoxM0, c0)
	hi1, lo1 := bits.Mul32(philoxM1, c2)
	return hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
}

// Stream is a reproducible stream of random numbers from the counter-based generator
// Philox4x32-10: the key is the 64-bit seed and the 128-bit counter holds a 64-bit block index
// and the two stream identifiers (a, b). Streams with different (seed, a, b) are independent, and
// the output of a stream depends only on (seed, a, b) and the sequence of calls made on it, never
// on other streams or on scheduling. A Stream is a value with no pointers (about 2 KiB, most
// of them buffered words): copying it forks an identical sequence, and it must not be used from
// two goroutines at once. The zero Stream is the same as NewStream(0, 0, 0).
//
// Each Philox block yields four 32-bit words, buffered across calls (up to streamBlocks blocks
// are generated at once, in SIMD where the architecture has it), so splitting a request into
// several calls does not change the numbers. Uniform uses one word per value, Uint64 two, Normal
// (ziggurat) usually one per value, and Normal64 (Box–Muller) four per pair of values; a Normal64
// call of odd length drops the unused second value of its last pair.
type Stream struct {
	key   [2]uint32
	a, b  uint32
	block uint64                   // index of the next block to generate
	buf   [4 * streamBlocks]uint32 // generated words; the unconsumed ones are buf[n-avail:n]
	n     uint32                   // number of words generated into buf by the last refill
	avail uint32                   // number of words of buf not yet consumed (0 = generate more)
}

// streamBlocks is the most Philox blocks a Stream generates at once: a large draw pays the calls
// of a refill once per 512 words (on the Cortex-A53 this saves 1.8 of 17.7 instructions per
// normal against 32 blocks), a short one still generates only what it asks for.
const streamBlocks = 128

// NewStream returns the stream identified by (seed, a, b). The runtime uses a = sample index and
// b = layer index.
func NewStream(seed uint64, a, b uint32) Stream {
	return Stream{key: [2]uint32{uint32(seed), uint32(seed >> 32)}, a: a, b: b}
}

// Reset makes s the stream NewStream(seed, a, b) returns, without clearing its buffer (its words
// are never read before a refill writes them): cheaper than assigning NewStream's value to a
// Stream reused for many short draws, as the runtime does per sample and layer.
func (s *Stream) Reset(seed uint64, a, b uint32) {
	s.key = [2]uint32{uint32(seed), uint32(seed >> 32)}
	s.a, s.b = a, b
	s.block, s.n, s.avail = 0, 0, 0
}

// refill generates the next Philox blocks into the buffer, enough for want words (at least one
// block, rounded up to the blocks the architecture generates together, at most streamBlocks),
// once every buffered word has been consumed. How many blocks are generated ahead never changes
// the stream's values, only when they are computed.
func (s *Stream) refill(want int) {
	g := philoxGroup()
	nb := min((max((want+3)/4, 1)+g-1)/g*g, streamBlocks)
	philoxBlocks(s.buf[:4*nb], s.key, s.block, s.a, s.b)
	s.block += uint64(nb)
	s.n = uint32(4 * nb)
	s.avail = s.n
}

// word returns the next 32-bit word of the stream.
func (s *Stream) word() uint32 {
	if s.avail == 0 {
		s.refill(1)
	}
	w := s.buf[(s.n-s.avail)%uint32(len(s.buf))]
	s.avail--
	return w
}

// Uint64 returns 64 uniformly random bits (two words, the first one in the low half).
func (s *Stream) Uint64() uint64 {
	lo := s.word()
	hi := s.word()
	return uint64(hi)<<32 | uint64(lo)
}

// NormalRows fills rows rows of dst, row r at dst[r·ld : r·ld+n], with the first n normals of the
// stream (seed, a+r, b) (a+r wrapping as a uint32): the values Reset(seed, a+r, b) and then
// Normal(dst[r·ld : r·ld+n]) give, row after row. It generates the Philox blocks of several rows
// in one call, enough for n values and a margin of wedge words, and runs the ziggurat over each
// row's words; a row those words do not complete (a draw that needs Normal's slow path, or more
// words than the margin) goes on through Normal from where it stopped. Afterwards s is the fresh
// stream (seed, a+rows, b).
func (s *Stream) NormalRows(seed uint64, a, b uint32, dst []float32, rows, n, ld int) {
	if rows <= 0 || n <= 0 {
		s.Reset(seed, a+uint32(max(rows, 0)), b)
		return
	}
	_ = dst[(rows-1)*ld+n-1]
	// Words for n values: one per value, and a wedge's height word for about 2.8 % of them; the
	// margin n/32 + 4 is more than five standard deviations above that for n ≤ 512.
	g := philoxGroup()
	nb := ((n+n/32+4+3)/4 + g - 1) / g * g
	per := len(s.buf) / (4 * nb)
	if per == 0 {
		for r := 0; r < rows; r++ {
			s.Reset(seed, a+uint32(r), b)
			s.Normal(dst[r*ld : r*ld+n])
		}
		s.Reset(seed, a+uint32(rows), b)
		return
	}
	key := [2]uint32{uint32(seed), uint32(seed >> 32)}
	nw := 4 * nb
	for r0 := 0; r0 < rows; r0 += per {
		m := min(per, rows-r0)
		philoxRows(s.buf[:m*nw], key, a+uint32(r0), b, nb)
		for r := 0; ; r++ {
			k, c, p := zigRows(s.buf[r*nw:m*nw], nw, dst[(r0+r)*ld:], ld, n)
			if r += k; r == m {
				break
			}
			// Row r is not complete. On as the row's stream: its unconsumed words in place, then
			// its next blocks. A refill writes at most nb blocks, over this pass's first row, done
			// by now (or this row itself, its words all consumed by then).
			s.key, s.a, s.b, s.block = key, a+uint32(r0+r), b, uint64(nb)
			s.n, s.avail = uint32((r+1)*nw), uint32(nw-c)
			s.Normal(dst[(r0+r)*ld+p : (r0+r)*ld+n])
		}
	}
	s.Reset(seed, a+uint32(rows), b)
}

// Uniform fills dst with values uniform on [0, 1), each with 24 random bits.
func (s *Stream) Uniform(dst []float32) {
	// Whole runs of buffered words at a time, refilled for what is still wanted: the same words
	// in the same order as one word() per value (a stream does not depend on how a draw is
	// split), without word()'s call and refill check per value.
	for len(dst) > 0 {
		if s.avail == 0 {
			s.refill(len(dst))
		}
		words := s.buf[s.n-s.avail : s.n]
		m := min(len(words), len(dst))
		for i, w := range words[:m] {
			dst[i] = float32(w>>8) * (1.0 / (1 << 24))
		}
		s.avail -= uint32(m)
		dst = dst[m:]
	}
}

// Normal fills dst with independent standard normal values (ziggurat method, one word per value
// in about 97.2% of draws; 24-bit resolution within a layer, exact tails).
func (s *Stream) Normal(dst []float32) {
	for len(dst) > 0 {
		if s.avail == 0 {
			s.refill(len(dst))
		}
		// zigRun does the fast path and most wedges straight into dst; what it stops at (a word
		// of the base layer, a wedge whose height word is not buffered or whose test needs exp)
		// is done here, as zigSlow's first iteration would.
		words := s.buf[s.n-s.avail : s.n]
		c, p := zigRun(words, dst)
		words, dst = words[c:], dst[p:]
		s.avail = uint32(len(words))
		if len(words) == 0 || len(dst) == 0 {
			continue
		}
		w := words[0]
		words = words[1:]
		if i := w & (zigLayers - 1); i != 0 && len(words) > 0 {
			x := float64(w>>8) * zig.w[i]
			y := zig.f[i] + uniformOpen(words[0])*(zig.f[i-1]-zig.f[i])
			s.avail = uint32(len(words) - 1)
			if y < math.Exp(-0.5*x*x) {
				if w&0x80 != 0 {
					x = -x
				}
				dst[0] = float32(x)
			} else {
				// Rejected: zigSlow retries with the next word (in float64 even inside its
				// rectangle, unlike the fast path).
				dst[0] = float32(s.zigSlow(s.word()))
			}
			dst = dst[1:]
			continue
		}
		s.avail = uint32(len(words))
		dst[0] = float32(s.zigSlow(w))
		dst = dst[1:]
	}
}

// zigRowsGeneric runs zigRun over the rows of words, row r's words words[r·nw : (r+1)·nw] into
// out[r·ld : r·ld+n] (len(words)/nw rows), and stops at the first row they do not complete: it
// returns that row's index and what zigRun returned for it, or the number of rows and 0, 0.
func zigRowsGeneric(words []uint32, nw int, out []float32, ld, n int) (row, consumed, produced int) {
	m := len(words) / nw
	for r := 0; r < m; r++ {
		if c, p := zigRun(words[r*nw:(r+1)*nw], out[r*ld:r*ld+n]); p < n {
			return r, c, p
		}
	}
	return m, 0, 0
}

// zigRunGeneric is the portable zigRun: the ziggurat over the buffered words, writing out in
// order, until out is full, the words run out, or a word needs what only Stream.Normal has (the
// base layer's tail, a wedge whose height word is not in words, a wedge whose height lies between
// the lines of zigWedge, where only math.Exp decides, or a rejected wedge whose retry word is not
// in words). It returns the words consumed and the values written; words[consumed] is the word
// that stopped it, if any, and always one outside its layer's rectangle, which Stream.Normal
// completes as zigSlow would. The words of a draw are the ones zigSlow takes: a wedge uses the
// next word for its height and, rejected, the word after that starts the draw again, its value
// computed in float64 like the wedge's (zigSlow's retry), not by the float32 fast path.
func zigRunGeneric(words []uint32, out []float32) (consumed, produced int) {
	return zigRunWith(zigFastGeneric, words, out)
}

// zigRunWith is zigRunGeneric with fast as the fast path (zigFastGeneric or an assembly twin).
func zigRunWith(fast func(words []uint32, out []float32) int, words []uint32, out []float32) (consumed, produced int) {
	i, j := 0, 0
	for {
		n := min(len(words)-i, len(out)-j)
		if n == 0 {
			return i, j
		}
		k := fast(words[i:i+n], out[j:j+n])
		i, j = i+k, j+k
		if k == n {
			continue
		}
		// words[i] lies outside its layer's rectangle: wedge tests (with their retries) until a
		// value is written.
		for {
			w := words[i]
			l := w & (zigLayers - 1)
			if l == 0 || i+1 == len(words) {
				return i, j
			}
			e := &zig.wedge[l]
			x := float64(w>>8) * e.w
			y := e.f + uniformOpen(words[i+1])*e.d
			q := x * x
			if y < e.alo+e.b*q {
				if w&0x80 != 0 {
					x = -x
				}
				out[j] = float32(x)
				i, j = i+2, j+1
				break
			}
			if y <= e.ahi+e.b*q || i+2 == len(words) {
				// Between the lines (exp decides), or rejected without a retry word here.
				return i, j
			}
			i += 2
			w = words[i]
			l = w & (zigLayers - 1)
			if u := w >> 8; u < zig.k[l] {
				x := float64(u) * zig.wedge[l].w
				if w&0x80 != 0 {
					x = -x
				}
				out[j] = float32(x)
				i, j = i+1, j+1
				break
			}
		}
	}
}

// zigFastGeneric is the ziggurat's fast path over words, writing out[j] for each word until the
// first one outside its layer's rectangle, whose index it returns (len(words) if there is none).
// One table lookup, one float32 multiply and the sign bit or-ed in (no branch on the random sign).
func zigFastGeneric(words []uint32, out []float32) int {
	zk, zw := &zig.k, &zig.w32
	out = out[:len(words)]
	for j, w := range words {
		l := w & (zigLayers - 1)
		u := w >> 8
		if u >= zk[l] {
			return j
		}
		x := float32(u) * zw[l]
		out[j] = math.Float32frombits(math.Float32bits(x) | (w&0x80)<<24)
	}
	return len(words)
}

// Normal64 fills dst with independent standard normal values in float64 precision (53-bit
// uniforms; four words per pair).
func (s *Stream) Normal64(dst []float64) {
	for i := 0; i < len(dst); i += 2 {
		x, y := s.Uint64(), s.Uint64()
		u1 := (float64(x>>11) + 0.5) * (1.0 / (1 << 53))
		r := math.Sqrt(-2 * math.Log(u1))
		sn, cs := math.Sincos(float64(y>>11) * (2 * math.Pi / (1 << 53)))
		dst[i] = r * cs
		if i+1 < len(dst) {
			dst[i+1] = r * sn
		}
	}
}
