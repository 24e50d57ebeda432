package format

import (
	"encoding/binary"
	"math"
	"os"
	"slices"
	"sync"
	"unicode/utf8"
	"unsafe"

	"github.com/x448/float16"
)

// ReadOptions tunes Open and Decode. The zero value gives the defaults.
type ReadOptions struct {
	// AllocLimit caps the total number of bytes the reader may allocate for
	// this file (parsed table, decompression buffers and zstd state, decoded
	// tensors), beyond the file bytes themselves. Zero means
	// DefaultAllocLimit(file size). Very sparse models can legitimately
	// expand more than the default allows; pass a larger limit for them.
	AllocLimit int64
	// NoMmap makes Open read the file into memory instead of mapping it.
	NoMmap bool
	// Name is used in error messages by Decode (Open uses the path).
	Name string

	// noZeroCopy forces decoding of dense F32 tensors, exercising the path
	// big-endian hosts take (tests only).
	noZeroCopy bool
}

// DefaultAllocLimit is the allocation budget used when ReadOptions.AllocLimit
// is zero: 4 × size + 64 MiB.
func DefaultAllocLimit(size int64) int64 {
	const constant = 64 << 20
	if size < 0 {
		size = 0
	}
	if size > (math.MaxInt64-constant)/4 {
		return math.MaxInt64
	}
	return 4*size + constant
}

// sectionCost is the budget charged per section for the parsed table entry
// and the name index, in addition to the name bytes (an over-estimate of
// unsafe.Sizeof(section{}) plus map overhead; see TestDecodeAllocAccounting).
const sectionCost = 512

// fileCost is the budget charged for the File itself and the empty index.
const fileCost = 1024

// File is an opened container. Its methods are safe for concurrent use.
// Slices returned by Float32s and Blob may alias the file's memory: they are
// read-only and must not be used after Close.
type File struct {
	name     string // path or ReadOptions.Name, for errors
	data     []byte
	size     int64
	unmap    func() error
	major    uint16
	minor    uint16
	sections []section
	index    map[string]int
	zeroCopy bool
	mapped   bool  // data is a memory mapping of the file (Open), not bytes in memory
	released int64 // bytes of decoded sections' whole pages given back (ReleasedBytes)

	mu     sync.Mutex
	closed bool
	limit  int64
	used   int64

	// zstd state shared by all sections, see inflateLocked and
	// scratchLocked (docs/FORMAT.md §8, allocation budget).
	zWindow        uint64    // window the decoder is sized for; 0: none needed
	zdec           *inflater // created on first decompression
	zPending       int       // compressed sections not yet decompressed
	scratch        []byte    // raw payload buffer for compressed tensors
	scratchMax     uint64    // largest raw_size that goes through scratch
	scratchPending int       // such tensors not yet decoded
}

// section is one parsed, validated table entry plus its lazily filled state.
type section struct {
	entry
	kind       Kind
	geom       geometry
	crcChecked bool
	decoded    []float32 // tensor cache
	decoded16  []uint16  // F16 tensor cache (Float16s)
	aliased16  bool      // decoded16 aliases the file's bytes
	blob       []byte    // decompressed blob cache
	err        error     // sticky decode error
}

// SectionInfo describes one section as recorded in the section table.
type SectionInfo struct {
	Name        string
	Kind        Kind
	Encoding    Encoding
	Compression Compression
	Shape       []int // nil for blobs
	NNZ         int64 // stored values of a sparse tensor, else 0
	Offset      int64 // absolute, a multiple of 64
	StoredSize  int64 // bytes in the file
	RawSize     int64 // bytes after decompression
	CRC         uint32
}

// Decode parses an in-memory container, validating the header, the section
// table and the layout (docs/FORMAT.md §8). The File aliases data, which must
// not be modified while the File is in use.
func Decode(data []byte) (*File, error) { return DecodeWith(data, ReadOptions{}) }

// DecodeWith is Decode with options.
func DecodeWith(data []byte, opt ReadOptions) (*File, error) {
	return parse(data, opt.Name, opt)
}

func parse(data []byte, name string, opt ReadOptions) (*File, error) {
	size := uint64(len(data))
	le := binary.LittleEndian
	hdrErr := func(kind error, format string, args ...any) error {
		return newErr(name, "", kind, nil, format, args...)
	}
	if size < headerSize {
		return nil, hdrErr(ErrMalformed, "file is %d bytes, shorter than the %d-byte header", size, headerSize)
	}
	if string(data[:8]) != Magic {
		return nil, hdrErr(ErrMalformed, "bad magic %q, not an edgebnn container", data[:8])
	}
	major, minor := le.Uint16(data[hMajor:]), le.Uint16(data[hMinor:])
	if major != VersionMajor {
		return nil, hdrErr(ErrVersion, "major version %d not supported (this reader implements %d.%d)", major, VersionMajor, VersionMinor)
	}
	newer := minor > VersionMinor
	count := uint64(le.Uint32(data[hCount:]))
	if count > MaxSections {
		return nil, hdrErr(ErrLimit, "section count = %d exceeds limit %d", count, MaxSections)
	}
	es := uint64(le.Uint32(data[hEntrySize:]))
	if !newer && es != entrySize {
		return nil, hdrErr(ErrMalformed, "entry_size = %d, want %d for version %d.%d", es, entrySize, major, minor)
	}
	if newer && (es < entrySize || es%8 != 0 || es > maxEntry) {
		return nil, hdrErr(ErrMalformed, "entry_size = %d invalid (must be a multiple of 8 in [%d, %d])", es, entrySize, maxEntry)
	}
	tableEnd := headerSize + count*es // <= 64 + 2^16 * 2^12, no overflow
	if tableEnd > size {
		return nil, hdrErr(ErrMalformed, "section table of %d entries ends at %d, beyond the end of the %d-byte file (truncated?)", count, tableEnd, size)
	}
	crc := crc32c(data[:hCRC])
	crc = crc32Update(crc, data[headerSize:tableEnd])
	if want := le.Uint32(data[hCRC:]); crc != want {
		return nil, hdrErr(ErrChecksum, "header_crc = %#08x, computed %#08x over header and section table", want, crc)
	}
	if fs := le.Uint64(data[hFileSize:]); fs != size {
		return nil, hdrErr(ErrMalformed, "file_size = %d but the file is %d bytes (truncated or extended)", fs, size)
	}
	if !newer {
		if v := le.Uint32(data[hFlags:]); v != 0 {
			return nil, hdrErr(ErrMalformed, "flags = %#x, want 0", v)
		}
		if !allZero(data[hReserved:hCRC]) {
			return nil, hdrErr(ErrMalformed, "reserved header bytes [%d, %d) are not zero", hReserved, hCRC)
		}
	}

	limit := opt.AllocLimit
	if limit <= 0 {
		limit = DefaultAllocLimit(int64(size))
	}
	f := &File{
		name:     name,
		data:     data,
		size:     int64(size),
		major:    major,
		minor:    minor,
		limit:    limit,
		zeroCopy: !opt.noZeroCopy && hostLittleEndian(),
	}
	var names uint64
	for i := uint64(0); i < count; i++ {
		names += uint64(le.Uint16(data[headerSize+i*es+eNameLen:]))
	}
	if err := f.charge(fileCost+count*sectionCost+names, -1, "section table"); err != nil {
		return nil, err
	}
	f.sections = make([]section, count)
	f.index = make(map[string]int, count)

	prevEnd := tableEnd
	prev := -1 // previous section index, -1 for the table
	prevLabel := func() string {
		if prev < 0 {
			return "section table"
		}
		return sectionLabel(f.sections[prev].kind, f.sections[prev].name, prev)
	}
	for i := range f.sections {
		b := data[headerSize+uint64(i)*es : headerSize+uint64(i+1)*es]
		s := &f.sections[i]
		if err := f.parseEntry(s, b, i, newer); err != nil {
			return nil, err
		}
		if s.offset%alignment != 0 {
			return nil, f.entryErr(s, i, ErrMalformed, "offset = %d is not a multiple of %d", s.offset, alignment)
		}
		if s.offset > size || s.stored > size-s.offset {
			return nil, f.entryErr(s, i, ErrMalformed, "offset %d + stored_size %d exceeds the %d-byte file", s.offset, s.stored, size)
		}
		if s.offset < prevEnd {
			return nil, f.entryErr(s, i, ErrMalformed, "offset = %d overlaps %s, which ends at %d", s.offset, prevLabel(), prevEnd)
		}
		if want, _ := align64(prevEnd); s.offset != want {
			return nil, f.entryErr(s, i, ErrMalformed, "offset = %d, want %d (sections must be packed at 64-byte alignment)", s.offset, want)
		}
		prevEnd = s.offset + s.stored
		prev = i
	}
	if want, _ := align64(prevEnd); size != want {
		return nil, hdrErr(ErrMalformed, "file is %d bytes, want %d (end of %s aligned to %d)", size, want, prevLabel(), alignment)
	}
	f.planZstd()
	return f, nil
}

// planZstd sizes the shared zstd state: the decoder's window is the largest
// any compressed section may declare, and the scratch buffer's cap the
// largest raw payload decoded through it. Sections whose raw size exceeds the
// whole budget are left out: their output alone can never be charged.
func (f *File) planZstd() {
	var window uint64
	for i := range f.sections {
		s := &f.sections[i]
		if s.kind == KindUnknown || s.compression != Zstd || s.raw > uint64(f.limit) {
			continue
		}
		window = max(window, zstdWindowLimit(s.raw))
		f.zPending++
		if f.usesScratch(s) {
			f.scratchMax = max(f.scratchMax, s.raw)
			f.scratchPending++
		}
	}
	if window > 0 {
		f.zWindow, _ = zstdFrameWindow(window)
	}
}

// usesScratch reports whether compressed section s is decompressed into the
// scratch buffer and then decoded into a separate []float32 (everything but
// blobs and, on little-endian hosts, F32 tensors).
func (f *File) usesScratch(s *section) bool {
	return s.kind == KindTensor && (s.encoding != F32 || !f.zeroCopy)
}

// entryErr builds an error about table entry i.
func (f *File) entryErr(s *section, i int, kind error, format string, args ...any) error {
	return newErr(f.name, sectionLabel(s.kind, s.name, i), kind, nil, format, args...)
}

// parseEntry decodes and validates table entry i (b) into s. It allocates
// nothing but the name on success.
func (f *File) parseEntry(s *section, b []byte, i int, newer bool) error {
	le := binary.LittleEndian
	s.encoding = Encoding(b[eEncoding])
	s.compression = Compression(b[eCompression])
	s.kind = kindOf(s.encoding)

	// Name first, so that later errors can name the section.
	nl := int(le.Uint16(b[eNameLen:]))
	if nl < 1 || nl > MaxNameLen {
		return f.entryErr(s, i, ErrMalformed, "name_len = %d out of range [1, %d]", nl, MaxNameLen)
	}
	nb := b[eName : eName+nl]
	if !utf8.Valid(nb) {
		return f.entryErr(s, i, ErrMalformed, "name %q is not valid UTF-8", nb)
	}
	if slices.Contains(nb, 0) {
		return f.entryErr(s, i, ErrMalformed, "name %q contains NUL", nb)
	}
	if !allZero(b[eName+nl : eName+MaxNameLen]) {
		return f.entryErr(s, i, ErrMalformed, "name %q: bytes after name_len are not zero", nb)
	}
	s.name = string(nb)
	if j, dup := f.index[s.name]; dup {
		return f.entryErr(s, i, ErrMalformed, "duplicate name (also section #%d)", j)
	}
	f.index[s.name] = i

	s.offset = le.Uint64(b[eOffset:])
	s.stored = le.Uint64(b[eStored:])
	s.raw = le.Uint64(b[eRaw:])
	s.nnz = le.Uint64(b[eNNZ:])
	s.crc = le.Uint32(b[eCRC:])
	s.rank = b[eRank]
	for d := range s.dims {
		s.dims[d] = le.Uint64(b[eDims+8*d:])
	}

	if !newer {
		if !s.encoding.known() {
			return f.entryErr(s, i, ErrMalformed, "encoding = %d unknown", uint8(s.encoding))
		}
		if s.compression > Zstd {
			return f.entryErr(s, i, ErrMalformed, "compression = %d unknown", uint8(s.compression))
		}
		if b[eReserved3] != 0 || le.Uint16(b[eReserved6:]) != 0 || le.Uint32(b[eReserved44:]) != 0 || !allZero(b[eReserved240:entrySize]) {
			return f.entryErr(s, i, ErrMalformed, "reserved entry bytes are not zero")
		}
	}
	if s.stored > MaxSectionBytes {
		return f.entryErr(s, i, ErrLimit, "stored_size = %d exceeds limit %d", s.stored, MaxSectionBytes)
	}
	if s.raw > MaxSectionBytes {
		return f.entryErr(s, i, ErrLimit, "raw_size = %d exceeds limit %d", s.raw, MaxSectionBytes)
	}
	known := s.encoding.known() && s.compression <= Zstd
	if !known {
		return nil // newer minor: checked for layout and CRC only
	}
	if s.compression == None && s.stored != s.raw {
		return f.entryErr(s, i, ErrMalformed, "stored_size = %d differs from raw_size = %d in an uncompressed section", s.stored, s.raw)
	}
	if s.compression == Zstd && s.raw == 0 {
		return f.entryErr(s, i, ErrMalformed, "raw_size = 0 in a compressed section")
	}
	if s.rank > MaxRank {
		return f.entryErr(s, i, ErrLimit, "rank = %d exceeds limit %d", s.rank, MaxRank)
	}
	for d := int(s.rank); d < MaxRank; d++ {
		if s.dims[d] != 0 {
			return f.entryErr(s, i, ErrMalformed, "dim %d = %d beyond rank %d is not zero", d, s.dims[d], s.rank)
		}
	}
	if s.kind == KindBlob {
		if s.rank != 0 || s.nnz != 0 {
			return f.entryErr(s, i, ErrMalformed, "blob has rank = %d, nnz = %d, want 0", s.rank, s.nnz)
		}
		return nil
	}
	g, serr := checkShape(s.dims[:s.rank])
	if serr != nil {
		return f.entryErr(s, i, ErrLimit, "%s", serr.msg)
	}
	s.geom = g
	if s.encoding.IsSparse() {
		if s.nnz > g.n {
			return f.entryErr(s, i, ErrMalformed, "nnz = %d exceeds element count %d", s.nnz, g.n)
		}
	} else if s.nnz != 0 {
		return f.entryErr(s, i, ErrMalformed, "nnz = %d in a dense tensor, want 0", s.nnz)
	}
	if want := rawSize(s.encoding, g, s.nnz); s.raw != want {
		return f.entryErr(s, i, ErrMalformed, "raw_size = %d, want %d for %v shape %v nnz %d", s.raw, want, s.encoding, g.dims, s.nnz)
	}
	return nil
}

// secErr builds an error about section i.
func (f *File) secErr(i int, kind, cause error, format string, args ...any) error {
	s := &f.sections[i]
	return newErr(f.name, sectionLabel(s.kind, s.name, i), kind, cause, format, args...)
}

// charge reserves n bytes of the allocation budget for section i (-1: the
// file itself). The caller holds f.mu or has exclusive access.
func (f *File) charge(n uint64, i int, what string) error {
	left := uint64(f.limit - f.used)
	if n > left {
		const msg = "%s needs %d bytes, allocation budget has %d of %d left"
		if i < 0 {
			return newErr(f.name, "", ErrBudget, nil, msg, what, n, left, f.limit)
		}
		return f.secErr(i, ErrBudget, nil, msg, what, n, left, f.limit)
	}
	f.used += int64(n)
	return nil
}

// Allocated reports the bytes charged to the allocation budget so far and the
// budget's limit.
func (f *File) Allocated() (used, limit int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used, f.limit
}

// Version returns the file's major and minor version.
func (f *File) Version() (major, minor uint16) { return f.major, f.minor }

// Size returns the file's length in bytes.
func (f *File) Size() int64 { return f.size }

// Sections describes every section in file order.
func (f *File) Sections() []SectionInfo {
	out := make([]SectionInfo, len(f.sections))
	for i := range f.sections {
		s := &f.sections[i]
		out[i] = SectionInfo{
			Name: s.name, Kind: s.kind, Encoding: s.encoding, Compression: s.compression,
			NNZ: int64(s.nnz), Offset: int64(s.offset), StoredSize: int64(s.stored),
			RawSize: int64(s.raw), CRC: s.crc,
		}
		if s.kind == KindTensor {
			out[i].Shape = intShape(s.geom.dims)
		}
	}
	return out
}

// Tensors returns the names of the tensor sections in file order.
func (f *File) Tensors() []string {
	var out []string
	for i := range f.sections {
		if f.sections[i].kind == KindTensor {
			out = append(out, f.sections[i].name)
		}
	}
	return out
}

func intShape(dims []uint64) []int {
	out := make([]int, len(dims))
	for i, d := range dims {
		out[i] = int(d) // d <= MaxElements fits in int on every platform
	}
	return out
}

// lookup finds the section called name and checks its kind.
func (f *File) lookup(name string, want Kind) (int, error) {
	i, ok := f.index[name]
	if !ok {
		return 0, newErr(f.name, sectionLabel(want, name, 0), ErrNotFound, nil, "no such section")
	}
	s := &f.sections[i]
	switch {
	case s.kind == KindUnknown:
		return 0, newErr(f.name, sectionLabel(want, name, i), ErrUnsupported, nil,
			"encoding = %d, compression = %d from version %d.%d not supported", uint8(s.encoding), uint8(s.compression), f.major, f.minor)
	case s.kind != want:
		return 0, newErr(f.name, sectionLabel(want, name, i), ErrNotFound, nil, "section is a %v", s.kind)
	case s.compression > Zstd:
		return 0, newErr(f.name, sectionLabel(want, name, i), ErrUnsupported, nil,
			"compression = %d from version %d.%d not supported", uint8(s.compression), f.major, f.minor)
	}
	return i, nil
}

// stored returns section i's stored bytes after checking its CRC once.
// Caller holds f.mu.
func (f *File) storedLocked(i int) ([]byte, error) {
	s := &f.sections[i]
	b := f.data[s.offset : s.offset+s.stored]
	if !s.crcChecked {
		if got := crc32c(b); got != s.crc {
			return nil, f.secErr(i, ErrChecksum, nil, "crc = %#08x, computed %#08x over %d stored bytes", s.crc, got, s.stored)
		}
		s.crcChecked = true
	}
	return b, nil
}

// inflateLocked decompresses section i's stored bytes src into dst (raw_size
// bytes, already charged by the caller). The File's single zstd decoder is
// created on first use and charged once; each call charges only
// zstdCallCost. Caller holds f.mu.
func (f *File) inflateLocked(i int, src, dst []byte) error {
	s := &f.sections[i]
	if w := zstdWindowLimit(s.raw); w > f.zWindow {
		// Only sections larger than the whole budget are left out of
		// zWindow, and charging their output fails first.
		return f.secErr(i, ErrBudget, nil, "zstd window %d exceeds the decoder's %d", w, f.zWindow)
	}
	if f.zdec == nil {
		// Created at most once: it is freed only when no section needs it.
		if err := f.charge(zstdDecoderCharge(f.zWindow), i, "zstd decoder"); err != nil {
			return err
		}
		z, err := newInflater(f.zWindow)
		if err != nil {
			return f.secErr(i, ErrIO, err, "zstd decoder")
		}
		f.zdec = z
	}
	if err := f.charge(zstdCallCost, i, "decompression"); err != nil {
		return err
	}
	if err := f.zdec.inflate(src, dst); err != nil {
		return f.secErr(i, ErrMalformed, err, "zstd payload (raw_size %d)", s.raw)
	}
	return nil
}

// scratchLocked returns the scratch buffer resized to n bytes, growing it
// (at least doubling, up to scratchMax) if needed. A new buffer is charged
// in full and the old one's charge is kept, so the charges add up to every
// buffer ever allocated: at most 3 × scratchMax. Caller holds f.mu.
func (f *File) scratchLocked(i int, n uint64) ([]byte, error) {
	if c := uint64(cap(f.scratch)); c < n {
		size := max(n, min(2*c, f.scratchMax))
		if err := f.charge(size, i, "decompression buffer"); err != nil {
			return nil, err
		}
		f.scratch = nil
		f.scratch = make([]byte, size)
	}
	return f.scratch[:n], nil
}

// Blob returns the bytes of the blob section called name. For uncompressed
// blobs the slice aliases the file: do not modify it or use it after Close.
func (f *File) Blob(name string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil, newErr(f.name, sectionLabel(KindBlob, name, 0), ErrClosed, nil, "read after Close")
	}
	i, err := f.lookup(name, KindBlob)
	if err != nil {
		return nil, err
	}
	s := &f.sections[i]
	if s.blob != nil || s.err != nil {
		return s.blob, s.err
	}
	if f.zstdPlanned(s) {
		defer f.zstdDone(s)
	}
	b, err := f.blobLocked(i)
	if err != nil {
		s.err = err
		return nil, err
	}
	if s.compression != None {
		s.blob = b
	}
	return b, nil
}

// blobLocked returns blob i's bytes, decompressing them (charged: the blob
// keeps them) if needed. Caller holds f.mu.
func (f *File) blobLocked(i int) ([]byte, error) {
	s := &f.sections[i]
	b, err := f.storedLocked(i)
	if err != nil || s.compression == None {
		return b, err
	}
	if err := f.charge(s.raw, i, "decompression"); err != nil {
		return nil, err
	}
	out := make([]byte, s.raw)
	if err := f.inflateLocked(i, b, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Tensor is a handle to one tensor section of a File.
type Tensor struct {
	f *File
	i int
}

// Tensor returns the tensor called name. It does not touch the payload.
func (f *File) Tensor(name string) (*Tensor, error) {
	i, err := f.lookup(name, KindTensor)
	if err != nil {
		return nil, err
	}
	return &Tensor{f: f, i: i}, nil
}

// Name returns the tensor's name.
func (t *Tensor) Name() string { return t.f.sections[t.i].name }

// Shape returns a copy of the tensor's shape (outermost dimension first).
func (t *Tensor) Shape() []int { return intShape(t.f.sections[t.i].geom.dims) }

// Encoding returns how the tensor is stored.
func (t *Tensor) Encoding() Encoding { return t.f.sections[t.i].encoding }

// NumElements returns the number of elements (the product of the shape).
func (t *Tensor) NumElements() int { return int(t.f.sections[t.i].geom.n) }

// Float32s returns the tensor's elements in row-major order. A dense,
// uncompressed F32 tensor on a little-endian host is returned without
// copying: the slice aliases the (read-only, possibly memory-mapped) file.
// Anything else is decoded once, charged to the allocation budget, validated
// (bitmap and CSR structure, exact decompressed size) and cached. The result
// is shared: never modify it, and do not use it after Close.
func (t *Tensor) Float32s() ([]float32, error) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.sections[t.i]
	if f.closed {
		return nil, f.secErr(t.i, ErrClosed, nil, "read after Close")
	}
	if s.decoded != nil || s.err != nil {
		return s.decoded, s.err
	}
	var out []float32
	var err error
	if s.decoded16 != nil && !s.aliased16 {
		// Decompressed by Float16s already: widen that copy, do not decompress again.
		if err = f.charge(4*s.geom.n, t.i, "decoding"); err == nil {
			out = make([]float32, len(s.decoded16))
			for i, h := range s.decoded16 {
				out[i] = float16.Frombits(h).Float32()
			}
		}
	} else {
		out, err = f.decodeLocked(t.i)
	}
	if err != nil {
		s.err = err
		return nil, err
	}
	s.decoded = out
	if !f.aliases(out) && !s.aliased16 {
		f.releaseLocked(t.i)
	}
	return out, nil
}

// Float16s returns a dense F16 tensor's elements as IEEE 754 binary16 bit patterns in row-major
// order, for a consumer that widens them as it computes instead of holding a float32 copy (half
// the memory). An uncompressed tensor on a little-endian host is returned without copying: the
// slice aliases the (read-only, possibly memory-mapped) file. A compressed one is decompressed
// once into memory of its own (2 bytes per element, charged to the allocation budget) and
// cached. Any other encoding is an error wrapping ErrUnsupported. The result is shared: never
// modify it, and do not use it after Close.
func (t *Tensor) Float16s() ([]uint16, error) {
	f := t.f
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &f.sections[t.i]
	if f.closed {
		return nil, f.secErr(t.i, ErrClosed, nil, "read after Close")
	}
	if s.decoded16 != nil {
		return s.decoded16, nil
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.encoding != F16 {
		return nil, f.secErr(t.i, ErrUnsupported, nil, "encoding %v is not dense float16", s.encoding)
	}
	out, aliased, err := f.decode16Locked(t.i)
	if err != nil {
		s.err = err
		return nil, err
	}
	s.decoded16, s.aliased16 = out, aliased
	return out, nil
}

// decode16Locked decodes dense F16 section i into binary16 bit patterns: aliasing the file when
// it can, else into a new slice (charged).
func (f *File) decode16Locked(i int) ([]uint16, bool, error) {
	s := &f.sections[i]
	n := s.geom.n
	if n == 0 {
		return []uint16{}, false, nil
	}
	if s.decoded != nil {
		// Float32s widened it already (the values are exact binary16 values): narrow that.
		if err := f.charge(2*n, i, "decoding"); err != nil {
			return nil, false, err
		}
		out := make([]uint16, n)
		for k, v := range s.decoded {
			out[k] = float16.Fromfloat32(v).Bits()
		}
		return out, false, nil
	}
	if s.compression == Zstd && f.zstdPlanned(s) {
		defer f.zstdDone(s)
	}
	b, err := f.storedLocked(i)
	if err != nil {
		return nil, false, err
	}
	if s.compression == None && f.zeroCopy && uintptr(unsafe.Pointer(&b[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), int(n)), true, nil
	}
	if err := f.charge(2*n, i, "decoding"); err != nil {
		return nil, false, err
	}
	out := make([]uint16, n)
	if s.compression == Zstd {
		if hostLittleEndian() {
			return out, false, f.inflateLocked(i, b, unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 2*int(n)))
		}
		raw, err := f.scratchLocked(i, s.raw)
		if err != nil {
			return nil, false, err
		}
		if err := f.inflateLocked(i, b, raw); err != nil {
			return nil, false, err
		}
		b = raw
	}
	for k := range out {
		out[k] = binary.LittleEndian.Uint16(b[2*k:])
	}
	return out, false, nil
}

// aliases reports whether v points into the file's bytes (a zero-copy F32 tensor).
func (f *File) aliases(v []float32) bool {
	if len(v) == 0 || len(f.data) == 0 {
		return false
	}
	p, base := uintptr(unsafe.Pointer(&v[0])), uintptr(unsafe.Pointer(&f.data[0]))
	return p >= base && p-base < uintptr(len(f.data))
}

// releaseLocked gives back the whole pages of section i's stored bytes once the section has been
// decoded into memory of its own (fp16, sparse or compressed tensors): on a memory-mapped file
// the kernel drops them from the process's resident set (they are read again from the file only
// if something reads the section's bytes again); either way they are counted in ReleasedBytes.
// Pages are those of the file (a mapping starts at offset 0), os.Getpagesize() bytes each.
func (f *File) releaseLocked(i int) {
	s := &f.sections[i]
	page := uint64(os.Getpagesize())
	lo := (s.offset + page - 1) / page * page
	hi := (s.offset + s.stored) / page * page
	if hi <= lo {
		return
	}
	if f.mapped {
		releasePages(f.data[lo:hi])
	}
	f.released += int64(hi - lo)
}

// ReleasedBytes returns how many bytes of the file the decoded tensors no longer need: the whole
// pages of every section that Float32s has decoded into memory of its own, which a
// memory-mapped File (Open) has given back to the kernel. The file's resident memory in a
// process that has loaded its model is about Size() − ReleasedBytes().
func (f *File) ReleasedBytes() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.released
}

func (f *File) decodeLocked(i int) ([]float32, error) {
	s := &f.sections[i]
	n := s.geom.n
	if s.encoding == F32 && s.compression == None {
		b, err := f.storedLocked(i)
		if err != nil {
			return nil, err
		}
		if n == 0 {
			return []float32{}, nil
		}
		if f.zeroCopy && uintptr(unsafe.Pointer(&b[0]))%4 == 0 {
			return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), int(n)), nil
		}
		if err := f.charge(4*n, i, "decoding"); err != nil {
			return nil, err
		}
		out := make([]float32, n)
		if err := decodePayload(s.encoding, s.geom, s.nnz, b, out); err != nil {
			return nil, f.secErr(i, ErrMalformed, nil, "%v", err)
		}
		return out, nil
	}
	if f.zstdPlanned(s) {
		defer f.zstdDone(s)
	}
	b, err := f.storedLocked(i)
	if err != nil {
		return nil, err
	}
	if s.compression == Zstd && !f.usesScratch(s) {
		// F32 on a little-endian host: decompress straight into the
		// result, no intermediate buffer.
		if err := f.charge(4*n, i, "decompression"); err != nil {
			return nil, err
		}
		out := make([]float32, n)
		if err := f.inflateLocked(i, b, unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), 4*int(n))); err != nil {
			return nil, err
		}
		return out, nil
	}
	if err := f.charge(4*n, i, "decoding"); err != nil {
		return nil, err
	}
	if s.compression == Zstd {
		raw, err := f.scratchLocked(i, s.raw)
		if err != nil {
			return nil, err
		}
		if err := f.inflateLocked(i, b, raw); err != nil {
			return nil, err
		}
		b = raw
	}
	out := make([]float32, n)
	if err := decodePayload(s.encoding, s.geom, s.nnz, b, out); err != nil {
		return nil, f.secErr(i, ErrMalformed, nil, "%v", err)
	}
	return out, nil
}

// zstdPlanned reports whether planZstd counted section s.
func (f *File) zstdPlanned(s *section) bool {
	return s.kind != KindUnknown && s.compression == Zstd && s.raw <= uint64(f.limit)
}

// zstdDone records that compressed section s (counted by planZstd) has been
// decompressed, or has failed for good (errors are sticky), and frees the
// scratch buffer and the decoder once no section needs them any more. Their
// charges stay. Caller holds f.mu.
func (f *File) zstdDone(s *section) {
	if f.usesScratch(s) {
		f.scratchPending--
		if f.scratchPending <= 0 {
			f.scratch = nil
		}
	}
	f.zPending--
	if f.zPending <= 0 && f.zdec != nil {
		f.zdec.close()
		f.zdec = nil
	}
}

// Verify checks the integrity of the whole file: the header checksum, every
// section's CRC and that every padding byte is zero. It allocates nothing and
// names the first corrupted section. Structural checks of sparse payloads and
// decompression happen when a tensor is decoded (Float32s), not here.
func (f *File) Verify() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return newErr(f.name, "", ErrClosed, nil, "Verify after Close")
	}
	le := binary.LittleEndian
	es := uint64(le.Uint32(f.data[hEntrySize:]))
	tableEnd := headerSize + uint64(len(f.sections))*es
	crc := crc32Update(crc32c(f.data[:hCRC]), f.data[headerSize:tableEnd])
	if want := le.Uint32(f.data[hCRC:]); crc != want {
		return newErr(f.name, "", ErrChecksum, nil, "header_crc = %#08x, computed %#08x over header and section table", want, crc)
	}
	prevEnd := tableEnd
	padErr := func(prev int, end uint64) error {
		what := "section table"
		if prev >= 0 {
			what = sectionLabel(f.sections[prev].kind, f.sections[prev].name, prev)
		}
		return newErr(f.name, "", ErrChecksum, nil, "padding after %s at [%d, %d) is not zero", what, prevEnd, end)
	}
	for i := range f.sections {
		s := &f.sections[i]
		if !allZero(f.data[prevEnd:s.offset]) {
			return padErr(i-1, s.offset)
		}
		s.crcChecked = false
		if _, err := f.storedLocked(i); err != nil {
			return err
		}
		prevEnd = s.offset + s.stored
	}
	if !allZero(f.data[prevEnd:]) {
		return padErr(len(f.sections)-1, uint64(len(f.data)))
	}
	return nil
}

// Close releases the file (unmapping it if it was mapped). Slices returned by
// Float32s and Blob must not be used afterwards. Close is idempotent.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	for i := range f.sections {
		f.sections[i].decoded, f.sections[i].blob, f.sections[i].decoded16 = nil, nil, nil
	}
	if f.zdec != nil {
		f.zdec.close()
		f.zdec = nil
	}
	f.scratch = nil
	f.data = nil
	if f.unmap != nil {
		if err := f.unmap(); err != nil {
			return newErr(f.name, "", ErrIO, err, "unmap")
		}
	}
	return nil
}

// hostLittleEndian reports whether the host stores integers little-endian.
func hostLittleEndian() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}
