package safetensors

// DType is a safetensors element type, spelled as in the file header
// (for example "F32").
type DType string

// The element types this package accepts. Any other dtype string in a
// header is rejected.
const (
	F64  DType = "F64"  // IEEE 754 binary64
	F32  DType = "F32"  // IEEE 754 binary32
	F16  DType = "F16"  // IEEE 754 binary16
	BF16 DType = "BF16" // bfloat16 (upper half of a binary32)
	I64  DType = "I64"  // signed 64-bit integer
	I32  DType = "I32"  // signed 32-bit integer
	I16  DType = "I16"  // signed 16-bit integer
	I8   DType = "I8"   // signed 8-bit integer
	U8   DType = "U8"   // unsigned 8-bit integer
	BOOL DType = "BOOL" // one byte, 0 or 1
)

// Size returns the size in bytes of one element of d, or 0 if d is not a
// known dtype.
func (d DType) Size() int {
	switch d {
	case F64, I64:
		return 8
	case F32, I32:
		return 4
	case F16, BF16, I16:
		return 2
	case I8, U8, BOOL:
		return 1
	}
	return 0
}

// Valid reports whether d is one of the known dtypes.
func (d DType) Valid() bool { return d.Size() != 0 }

// IsFloat reports whether d is a floating-point dtype.
func (d DType) IsFloat() bool {
	switch d {
	case F64, F32, F16, BF16:
		return true
	}
	return false
}
