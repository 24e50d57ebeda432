package runtime

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
)

// The encodings of a pruned layer's kept-weight index (the blob <name>.weight_keep, docs/FORMAT.md
// "Pruned FFG layers").
const (
	// KeptIndexBitmap stores one bit per weight, least significant bit first.
	KeptIndexBitmap = 1
	// KeptIndexDelta stores the gaps between consecutive kept indices as LEB128 varints.
	KeptIndexDelta = 2
)

// keptIndexHeader is the size of the index blob's header: encoding (u8), three zero bytes, rows,
// cols and kept (u32 each).
const keptIndexHeader = 16

// maxVarint is the longest LEB128 encoding of a u32.
const maxVarint = 5

// EncodeKeptIndex encodes the kept weights of a rows × cols weight matrix, given by their
// row-major indices idx (strictly increasing, each < rows·cols), in whichever of the bitmap and
// delta encodings is shorter (the bitmap on a tie).
func EncodeKeptIndex(rows, cols int, idx []uint32) ([]byte, error) {
	n, ok := elements([]int{rows, cols})
	if !ok || uint64(n) > 1<<32-1 {
		return nil, fmt.Errorf("kept index: a %d × %d matrix is too large", rows, cols)
	}
	for i, v := range idx {
		if uint64(v) >= uint64(n) {
			return nil, fmt.Errorf("kept index: index %d (entry %d) is outside the %d × %d matrix", v, i, rows, cols)
		}
		if i > 0 && v <= idx[i-1] {
			return nil, fmt.Errorf("kept index: index %d (entry %d) does not increase", v, i)
		}
	}
	bitmapLen := (n + 7) / 8
	deltaLen := 0
	prev := int64(-1)
	for _, v := range idx {
		deltaLen += varintLen(uint32(int64(v) - prev - 1))
		prev = int64(v)
	}
	out := make([]byte, keptIndexHeader, keptIndexHeader+min(bitmapLen, deltaLen))
	binary.LittleEndian.PutUint32(out[4:], uint32(rows))
	binary.LittleEndian.PutUint32(out[8:], uint32(cols))
	binary.LittleEndian.PutUint32(out[12:], uint32(len(idx)))
	if bitmapLen <= deltaLen {
		out[0] = KeptIndexBitmap
		out = out[:keptIndexHeader+bitmapLen]
		for _, v := range idx {
			out[keptIndexHeader+int(v>>3)] |= 1 << (v & 7)
		}
		return out, nil
	}
	out[0] = KeptIndexDelta
	prev = -1
	for _, v := range idx {
		out = binary.AppendUvarint(out, uint64(int64(v)-prev-1))
		prev = int64(v)
	}
	return out, nil
}

func varintLen(v uint32) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// errKeptIndex is wrapped by every error DecodeKeptIndex returns.
var errKeptIndex = errors.New("invalid kept-weight index")

// DecodeKeptIndex validates a kept-weight index blob of a rows × cols weight matrix and returns
// the row-major indices of the kept weights, increasing. The header's rows and cols must match,
// the bitmap's bits past rows·cols must be zero and its population count equal the header's kept
// count; the delta encoding must hold exactly kept canonical varints (no overlong encodings)
// whose indices stay below rows·cols, and nothing after them.
func DecodeKeptIndex(b []byte, rows, cols int) ([]uint32, error) {
	fail := func(format string, args ...any) ([]uint32, error) {
		return nil, fmt.Errorf("%w: "+format, append([]any{errKeptIndex}, args...)...)
	}
	if len(b) < keptIndexHeader {
		return fail("%d bytes, shorter than the %d-byte header", len(b), keptIndexHeader)
	}
	if b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return fail("reserved header bytes are not zero")
	}
	hr, hc := binary.LittleEndian.Uint32(b[4:]), binary.LittleEndian.Uint32(b[8:])
	kept := uint64(binary.LittleEndian.Uint32(b[12:]))
	if uint64(hr) != uint64(rows) || uint64(hc) != uint64(cols) {
		return fail("header says %d × %d, the layer's weight is %d × %d", hr, hc, rows, cols)
	}
	n := uint64(rows) * uint64(cols)
	if kept > n {
		return fail("%d kept weights of %d", kept, n)
	}
	p := b[keptIndexHeader:]
	switch b[0] {
	case KeptIndexBitmap:
		if want := (n + 7) / 8; uint64(len(p)) != want {
			return fail("bitmap of %d bytes, want %d for %d weights", len(p), want, n)
		}
		if r := n % 8; r != 0 && p[len(p)-1]>>r != 0 {
			return fail("bitmap bits past weight %d are set", n)
		}
		c := uint64(0)
		for _, v := range p {
			c += uint64(bits.OnesCount8(v))
		}
		if c != kept {
			return fail("bitmap marks %d weights, the header says %d are kept", c, kept)
		}
		idx := make([]uint32, 0, kept)
		for i, v := range p {
			for v != 0 {
				j := bits.TrailingZeros8(v)
				idx = append(idx, uint32(i*8+j))
				v &= v - 1
			}
		}
		return idx, nil
	case KeptIndexDelta:
		// Each kept index takes at least one byte: bound the allocation by the payload.
		if kept > uint64(len(p)) {
			return fail("%d kept weights in %d bytes of varints (truncated)", kept, len(p))
		}
		idx := make([]uint32, 0, kept)
		next := uint64(0) // the smallest index the next entry may take
		for k := uint64(0); k < kept; k++ {
			gap, used := uint64(0), 0
			for {
				if used == len(p) {
					return fail("varint %d of %d is truncated", k, kept)
				}
				c := p[used]
				if used == maxVarint-1 && c > 0x0f {
					return fail("varint %d overflows 32 bits", k)
				}
				gap |= uint64(c&0x7f) << (7 * used)
				used++
				if c < 0x80 {
					if c == 0 && used > 1 {
						return fail("varint %d is not canonical (overlong)", k)
					}
					break
				}
			}
			p = p[used:]
			v := next + gap
			if v >= n {
				return fail("kept index %d (entry %d) is outside the %d × %d weight", v, k, rows, cols)
			}
			idx = append(idx, uint32(v))
			next = v + 1
		}
		if len(p) != 0 {
			return fail("%d bytes after the last of %d varints", len(p), kept)
		}
		return idx, nil
	}
	return fail("encoding %d is not %d (bitmap) or %d (delta)", b[0], KeptIndexBitmap, KeptIndexDelta)
}
