package safetensors

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/x448/float16"
)

// Tensor is one named tensor of a safetensors file: its dtype, shape and
// raw little-endian bytes (row-major, contiguous).
type Tensor struct {
	Name  string
	DType DType
	Shape []int
	// Data holds the raw element bytes. For tensors returned by Parse it
	// aliases the parsed buffer.
	Data []byte
}

// NumElements returns the product of the shape (1 for a scalar, shape []).
// It returns -1 if the product overflows int.
func (t *Tensor) NumElements() int {
	n, ok := numElements(t.Shape)
	if !ok || n > uint64(math.MaxInt) {
		return -1
	}
	return int(n)
}

// numElements multiplies the dimensions in uint64, reporting overflow or
// negative dimensions as !ok.
func numElements(shape []int) (uint64, bool) {
	n := uint64(1)
	for _, d := range shape {
		if d < 0 {
			return 0, false
		}
		hi, lo := mulU64(n, uint64(d))
		if hi != 0 {
			return 0, false
		}
		n = lo
	}
	return n, true
}

func mulU64(a, b uint64) (hi, lo uint64) {
	if a == 0 || b == 0 {
		return 0, 0
	}
	lo = a * b
	if lo/b != a {
		return 1, lo
	}
	return 0, lo
}

// check verifies that the tensor's byte length matches dtype and shape.
func (t *Tensor) check() (int, error) {
	size := t.DType.Size()
	if size == 0 {
		return 0, fmt.Errorf("tensor %s: unknown dtype %s", clip.Q(t.Name), clip.Q(string(t.DType)))
	}
	n := t.NumElements()
	if n < 0 {
		return 0, fmt.Errorf("tensor %s: shape %s overflows or is negative", clip.Q(t.Name), clip.V(t.Shape))
	}
	hi, want := mulU64(uint64(n), uint64(size))
	if hi != 0 || want != uint64(len(t.Data)) {
		return 0, fmt.Errorf("tensor %s: %d bytes of data, shape %s of %s needs %d×%d", clip.Q(t.Name), len(t.Data), clip.V(t.Shape), clip.S(string(t.DType)), n, size)
	}
	return n, nil
}

// Float32s returns the elements as float32. It accepts F32, F16 and BF16
// (all exactly representable) and the small integer types I8, I16, U8 and
// BOOL. F64, I32 and I64 are refused because the conversion could lose
// precision; use Float64s or Int64s for those.
func (t *Tensor) Float32s() ([]float32, error) {
	n, err := t.check()
	if err != nil {
		return nil, err
	}
	out := make([]float32, n)
	b := t.Data
	switch t.DType {
	case F32:
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	case F16:
		for i := range out {
			out[i] = float16.Frombits(binary.LittleEndian.Uint16(b[2*i:])).Float32()
		}
	case BF16:
		for i := range out {
			out[i] = math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16)
		}
	default:
		if err := smallInts(t, out, "tensor %s: cannot convert %s to float32 without loss"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// smallInts converts the elements of an I16, I8, U8 or BOOL tensor into out (of the tensor's
// length). Any other dtype is the error that format other makes of the tensor's name and dtype.
func smallInts[T float32 | int64](t *Tensor, out []T, other string) error {
	b := t.Data
	switch t.DType {
	case I16:
		for i := range out {
			out[i] = T(int16(binary.LittleEndian.Uint16(b[2*i:])))
		}
	case I8:
		for i := range out {
			out[i] = T(int8(b[i]))
		}
	case U8:
		for i := range out {
			out[i] = T(b[i])
		}
	case BOOL: // one byte each, 0 or 1 as torch writes them; anything else is not a bool
		for i := range out {
			if b[i] > 1 {
				return fmt.Errorf("tensor %s: element %d is byte %d, not a BOOL (0 or 1)", clip.Q(t.Name), i, b[i])
			}
			out[i] = T(b[i])
		}
	default:
		return fmt.Errorf(other, clip.Q(t.Name), clip.S(string(t.DType)))
	}
	return nil
}

// Float64s returns the elements as float64. Every float dtype and the
// integer types I32, I16, I8, U8 and BOOL convert exactly; I64 converts
// when every value has magnitude at most 2^53, otherwise an error is
// returned.
func (t *Tensor) Float64s() ([]float64, error) {
	n, err := t.check()
	if err != nil {
		return nil, err
	}
	out := make([]float64, n)
	b := t.Data
	switch t.DType {
	case F64:
		for i := range out {
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case I64:
		const lim = 1 << 53
		for i := range out {
			v := int64(binary.LittleEndian.Uint64(b[8*i:]))
			if v > lim || v < -lim {
				return nil, fmt.Errorf("tensor %s: element %d = %d is not exactly representable as float64", clip.Q(t.Name), i, v)
			}
			out[i] = float64(v)
		}
	case I32:
		for i := range out {
			out[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	default:
		f, err := t.Float32s()
		if err != nil {
			return nil, err
		}
		for i, v := range f {
			out[i] = float64(v)
		}
	}
	return out, nil
}

// Int64s returns the elements of an integer or BOOL tensor as int64.
// Float dtypes are refused.
func (t *Tensor) Int64s() ([]int64, error) {
	n, err := t.check()
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	b := t.Data
	switch t.DType {
	case I64:
		for i := range out {
			out[i] = int64(binary.LittleEndian.Uint64(b[8*i:]))
		}
	case I32:
		for i := range out {
			out[i] = int64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		}
	default:
		if err := smallInts(t, out, "tensor %s: dtype %s is not an integer type"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// NewF32 returns an F32 tensor holding a copy of data. It returns an error
// if len(data) does not match the shape.
func NewF32(name string, shape []int, data []float32) (Tensor, error) {
	return encode(name, F32, shape, data, func(b []byte, v float32) { binary.LittleEndian.PutUint32(b, math.Float32bits(v)) })
}

// NewF64 returns an F64 tensor holding a copy of data. It returns an error
// if len(data) does not match the shape.
func NewF64(name string, shape []int, data []float64) (Tensor, error) {
	return encode(name, F64, shape, data, func(b []byte, v float64) { binary.LittleEndian.PutUint64(b, math.Float64bits(v)) })
}

// NewI64 returns an I64 tensor holding a copy of data. It returns an error
// if len(data) does not match the shape.
func NewI64(name string, shape []int, data []int64) (Tensor, error) {
	return encode(name, I64, shape, data, func(b []byte, v int64) { binary.LittleEndian.PutUint64(b, uint64(v)) })
}

// NewI32 returns an I32 tensor holding a copy of data. It returns an error
// if len(data) does not match the shape.
func NewI32(name string, shape []int, data []int32) (Tensor, error) {
	return encode(name, I32, shape, data, func(b []byte, v int32) { binary.LittleEndian.PutUint32(b, uint32(v)) })
}

// encode returns a tensor of dtype dt whose data are the elements of data, each put in its
// dt.Size() bytes by put.
func encode[T any](name string, dt DType, shape []int, data []T, put func(b []byte, v T)) (Tensor, error) {
	size := dt.Size()
	b := make([]byte, size*len(data))
	for i, v := range data {
		put(b[size*i:], v)
	}
	return newTensor(name, dt, shape, b)
}

func newTensor(name string, dt DType, shape []int, b []byte) (Tensor, error) {
	t := Tensor{Name: name, DType: dt, Shape: append([]int{}, shape...), Data: b}
	if _, err := t.check(); err != nil {
		return Tensor{}, err
	}
	return t, nil
}
