package format

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// Magic is the 8-byte signature at the start of every container.
const Magic = "EBNN\x00\r\n\x1a"

// Version implemented by this package. Readers reject other majors and accept
// any minor (see docs/FORMAT.md §7).
const (
	VersionMajor = 1
	VersionMinor = 0
)

// Limits enforced by readers and writers.
const (
	// MaxSections is the maximum number of sections in a file.
	MaxSections = 1 << 16
	// MaxNameLen is the maximum length of a section name in bytes.
	MaxNameLen = 128
	// MaxRank is the maximum number of tensor dimensions.
	MaxRank = 8
	// MaxElements caps every dimension and the product of the non-zero
	// dimensions of a tensor.
	MaxElements = 1 << 28
	// MaxSectionBytes caps the stored and the raw (decompressed) size of a
	// section.
	MaxSectionBytes = 1 << 30
	// MaxZstdWindow caps the zstd window of any compressed section.
	MaxZstdWindow = 8 << 20
)

// Layout constants (docs/FORMAT.md §3, §4).
const (
	headerSize = 64
	entrySize  = 256 // entry size of minor 0
	maxEntry   = 4096
	alignment  = 64
	// header field offsets
	hMajor     = 8
	hMinor     = 10
	hCount     = 12
	hEntrySize = 16
	hFlags     = 20
	hFileSize  = 24
	hReserved  = 32
	hCRC       = 60
	// entry field offsets
	eEncoding    = 0
	eCompression = 1
	eRank        = 2
	eReserved3   = 3
	eNameLen     = 4
	eReserved6   = 6
	eOffset      = 8
	eStored      = 16
	eRaw         = 24
	eNNZ         = 32
	eCRC         = 40
	eReserved44  = 44
	eDims        = 48
	eName        = 112
	eReserved240 = 240
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// crc32c returns the CRC-32C of b.
func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// crc32Update continues a CRC-32C with b.
func crc32Update(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }

// Encoding is how a section's payload is laid out (docs/FORMAT.md §5).
type Encoding uint8

// Known encodings.
const (
	F32             Encoding = 1 // dense float32
	F16             Encoding = 2 // dense float16
	SparseBitmapF32 Encoding = 3 // bitmap of non-zeros + packed float32 values
	SparseBitmapF16 Encoding = 4 // bitmap of non-zeros + packed float16 values
	CSRF32          Encoding = 5 // row pointers + column indices + float32 values
	CSRF16          Encoding = 6 // row pointers + column indices + float16 values
	Blob            Encoding = 7 // opaque bytes (not a tensor)
)

// String returns the encoding's name as used in docs/FORMAT.md.
func (e Encoding) String() string {
	switch e {
	case F32:
		return "F32"
	case F16:
		return "F16"
	case SparseBitmapF32:
		return "SparseBitmapF32"
	case SparseBitmapF16:
		return "SparseBitmapF16"
	case CSRF32:
		return "CSRF32"
	case CSRF16:
		return "CSRF16"
	case Blob:
		return "Blob"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// known reports whether e is an encoding of this version.
func (e Encoding) known() bool { return e >= F32 && e <= Blob }

// IsSparse reports whether e is one of the sparse tensor encodings.
func (e Encoding) IsSparse() bool { return e >= SparseBitmapF32 && e <= CSRF16 }

// valueSize is the width of one stored value (4 for f32, 2 for f16).
func (e Encoding) valueSize() uint64 {
	switch e {
	case F32, SparseBitmapF32, CSRF32:
		return 4
	case F16, SparseBitmapF16, CSRF16:
		return 2
	}
	return 1
}

// Compression identifies the compression applied to a section's stored bytes.
type Compression uint8

// Known compressions.
const (
	None Compression = 0 // stored bytes are the raw payload
	Zstd Compression = 1 // stored bytes are zstd frames
)

// String returns "none", "zstd" or "Compression(n)".
func (c Compression) String() string {
	switch c {
	case None:
		return "none"
	case Zstd:
		return "zstd"
	}
	return fmt.Sprintf("Compression(%d)", uint8(c))
}

// Kind tells tensors from blobs.
type Kind uint8

// Section kinds.
const (
	KindUnknown Kind = 0 // encoding from a newer minor version
	KindTensor  Kind = 1
	KindBlob    Kind = 2
)

// String returns "tensor", "blob" or "section".
func (k Kind) String() string {
	switch k {
	case KindTensor:
		return "tensor"
	case KindBlob:
		return "blob"
	}
	return "section"
}

func kindOf(e Encoding) Kind {
	switch {
	case e == Blob:
		return KindBlob
	case e.known():
		return KindTensor
	}
	return KindUnknown
}

// align64 rounds x up to a multiple of 64; ok is false on overflow.
func align64(x uint64) (uint64, bool) {
	if x > ^uint64(0)-(alignment-1) {
		return 0, false
	}
	return (x + alignment - 1) &^ (alignment - 1), true
}

// geometry is a validated tensor shape.
type geometry struct {
	dims []uint64
	n    uint64 // element count
	rows uint64 // CSR rows
	cols uint64 // CSR columns
}

// shapeError describes which dimension violated a limit.
type shapeError struct {
	field string
	msg   string
}

// checkShape validates dims against the limits of docs/FORMAT.md §4.
func checkShape(dims []uint64) (geometry, *shapeError) {
	if len(dims) > MaxRank {
		return geometry{}, &shapeError{"rank", fmt.Sprintf("rank = %d exceeds limit %d", len(dims), MaxRank)}
	}
	extent := uint64(1)
	n := uint64(1)
	for i, d := range dims {
		if d > MaxElements {
			return geometry{}, &shapeError{fmt.Sprintf("dim %d", i), fmt.Sprintf("dim %d = %d exceeds limit %d", i, d, uint64(MaxElements))}
		}
		if d == 0 {
			n = 0
			continue
		}
		hi, lo := bits.Mul64(extent, d)
		if hi != 0 || lo > MaxElements {
			return geometry{}, &shapeError{"shape", fmt.Sprintf("shape %v: element count exceeds limit %d", dims, uint64(MaxElements))}
		}
		extent = lo
	}
	if n != 0 {
		n = extent
	}
	g := geometry{dims: dims, n: n, rows: 1, cols: 1}
	if len(dims) >= 1 {
		g.cols = dims[len(dims)-1]
		for _, d := range dims[:len(dims)-1] {
			g.rows *= d // bounded: product of non-zero dims <= MaxElements
		}
	}
	return g, nil
}

// bitmapBytes is P of docs/FORMAT.md §5: ceil(n/8) rounded up to a multiple of 4.
func bitmapBytes(n uint64) uint64 { return ((n+7)/8 + 3) &^ 3 }

// rawSize is the exact payload size of a tensor (all inputs bounded by
// MaxElements, so the arithmetic cannot overflow).
func rawSize(e Encoding, g geometry, nnz uint64) uint64 {
	vs := e.valueSize()
	switch e {
	case F32, F16:
		return vs * g.n
	case SparseBitmapF32, SparseBitmapF16:
		return bitmapBytes(g.n) + vs*nnz
	case CSRF32, CSRF16:
		return 4*(g.rows+1) + (4+vs)*nnz
	}
	return 0
}

// entry is one decoded section-table entry.
type entry struct {
	encoding    Encoding
	compression Compression
	rank        uint8
	name        string
	offset      uint64
	stored      uint64
	raw         uint64
	nnz         uint64
	crc         uint32
	dims        [MaxRank]uint64
}

// putEntry serialises e into b (len(b) == entrySize, zeroed).
func putEntry(b []byte, e *entry) {
	le := binary.LittleEndian
	b[eEncoding] = byte(e.encoding)
	b[eCompression] = byte(e.compression)
	b[eRank] = e.rank
	le.PutUint16(b[eNameLen:], uint16(len(e.name)))
	le.PutUint64(b[eOffset:], e.offset)
	le.PutUint64(b[eStored:], e.stored)
	le.PutUint64(b[eRaw:], e.raw)
	le.PutUint64(b[eNNZ:], e.nnz)
	le.PutUint32(b[eCRC:], e.crc)
	for i, d := range e.dims {
		le.PutUint64(b[eDims+8*i:], d)
	}
	copy(b[eName:eName+MaxNameLen], e.name)
}

// allZero reports whether every byte of b is zero.
func allZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
