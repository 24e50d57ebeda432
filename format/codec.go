package format

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"

	"github.com/x448/float16"
)

// values is a tensor's elements in their stored value type: exactly one of
// f32 and f16 is non-nil (or both are empty).
type values struct {
	f32 []float32
	f16 []uint16 // float16 bit patterns
}

func (v values) isZero(i int) bool {
	if v.f16 != nil {
		return v.f16[i] == 0
	}
	return math.Float32bits(v.f32[i]) == 0
}

func (v values) put(b []byte, i int) []byte {
	if v.f16 != nil {
		return binary.LittleEndian.AppendUint16(b, v.f16[i])
	}
	return binary.LittleEndian.AppendUint32(b, math.Float32bits(v.f32[i]))
}

// toF16 converts data to float16 bit patterns (round to nearest even) and
// counts the finite inputs that overflowed to ±Inf.
func toF16(data []float32) ([]uint16, int) {
	out := make([]uint16, len(data))
	overflows := 0
	for i, x := range data {
		h := float16.Fromfloat32(x)
		out[i] = uint16(h)
		if h.IsInf(0) && !math.IsInf(float64(x), 0) {
			overflows++
		}
	}
	return out, overflows
}

// encodeDense appends the dense payload.
func encodeDense(v values, n int) []byte {
	vs := 4
	if v.f16 != nil {
		vs = 2
	}
	b := make([]byte, 0, vs*n)
	for i := 0; i < n; i++ {
		b = v.put(b, i)
	}
	return b
}

// encodeBitmap builds the SparseBitmap payload (docs/FORMAT.md §5).
func encodeBitmap(v values, n, nnz int) []byte {
	p := int(bitmapBytes(uint64(n)))
	vs := 4
	if v.f16 != nil {
		vs = 2
	}
	b := make([]byte, p, p+vs*nnz)
	for i := 0; i < n; i++ {
		if !v.isZero(i) {
			b[i>>3] |= 1 << (i & 7)
			b = v.put(b, i)
		}
	}
	return b
}

// encodeCSR builds the CSR payload for a rows × cols view.
func encodeCSR(v values, rows, cols, nnz int) []byte {
	vs := 4
	if v.f16 != nil {
		vs = 2
	}
	le := binary.LittleEndian
	b := make([]byte, 0, 4*(rows+1)+(4+vs)*nnz)
	count := uint32(0)
	b = le.AppendUint32(b, 0)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if !v.isZero(r*cols + c) {
				count++
			}
		}
		b = le.AppendUint32(b, count)
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			if !v.isZero(r*cols + c) {
				b = le.AppendUint32(b, uint32(c))
			}
		}
	}
	for i := 0; i < rows*cols; i++ {
		if !v.isZero(i) {
			b = v.put(b, i)
		}
	}
	return b
}

// loadValue reads stored value i (f32 when vs == 4, f16 when vs == 2).
func loadValue(vals []byte, i uint64, vs uint64) float32 {
	if vs == 2 {
		return float16.Frombits(binary.LittleEndian.Uint16(vals[2*i:])).Float32()
	}
	return math.Float32frombits(binary.LittleEndian.Uint32(vals[4*i:]))
}

// decodePayload decodes a validated-size raw payload into out (len(out) ==
// g.n, zero-initialised), checking the structural rules of the encoding. The
// returned message names the field at fault.
func decodePayload(e Encoding, g geometry, nnz uint64, raw []byte, out []float32) error {
	le := binary.LittleEndian
	vs := e.valueSize()
	switch e {
	case F32, F16:
		for i := range out {
			out[i] = loadValue(raw, uint64(i), vs)
		}
		return nil
	case SparseBitmapF32, SparseBitmapF16:
		p := bitmapBytes(g.n)
		bm, vals := raw[:p], raw[p:]
		full := g.n / 8
		count := uint64(0)
		for _, c := range bm[:full] {
			count += uint64(bits.OnesCount8(c))
		}
		if rem := g.n % 8; rem != 0 {
			last := bm[full]
			if last>>rem != 0 {
				return fmt.Errorf("bitmap: bits set beyond element count %d", g.n)
			}
			count += uint64(bits.OnesCount8(last))
			full++
		}
		if !allZero(bm[full:]) {
			return fmt.Errorf("bitmap: non-zero padding byte")
		}
		if count != nnz {
			return fmt.Errorf("bitmap: %d bits set but nnz = %d", count, nnz)
		}
		k := uint64(0)
		for i := uint64(0); i < g.n; i++ {
			if bm[i>>3]>>(i&7)&1 != 0 {
				out[i] = loadValue(vals, k, vs)
				k++
			}
		}
		return nil
	case CSRF32, CSRF16:
		rowptr := raw[:4*(g.rows+1)]
		colidx := raw[4*(g.rows+1) : 4*(g.rows+1)+4*nnz]
		vals := raw[4*(g.rows+1)+4*nnz:]
		if first := le.Uint32(rowptr); first != 0 {
			return fmt.Errorf("rowptr[0] = %d, want 0", first)
		}
		prev := uint64(0)
		for r := uint64(0); r < g.rows; r++ {
			end := uint64(le.Uint32(rowptr[4*(r+1):]))
			if end < prev || end > nnz {
				return fmt.Errorf("rowptr[%d] = %d out of range [%d, %d]", r+1, end, prev, nnz)
			}
			lastCol := int64(-1)
			for k := prev; k < end; k++ {
				c := uint64(le.Uint32(colidx[4*k:]))
				if c >= g.cols {
					return fmt.Errorf("colidx[%d] = %d out of range (columns = %d)", k, c, g.cols)
				}
				if int64(c) <= lastCol {
					return fmt.Errorf("colidx[%d] = %d not increasing in row %d", k, c, r)
				}
				lastCol = int64(c)
				out[r*g.cols+c] = loadValue(vals, k, vs)
			}
			prev = end
		}
		if prev != nnz {
			return fmt.Errorf("rowptr[%d] = %d, want nnz = %d", g.rows, prev, nnz)
		}
		return nil
	}
	return fmt.Errorf("encoding %v is not a tensor encoding", e)
}
