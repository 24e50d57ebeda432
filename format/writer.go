package format

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode/utf8"
)

// AddOptions selects how Writer.AddTensor stores a tensor.
type AddOptions struct {
	// F16 stores values as IEEE binary16 (round to nearest even) instead of
	// float32. Overflows to ±Inf are counted in the report, not rejected.
	F16 bool
	// Sparse stores the tensor in whichever of dense, SparseBitmap and CSR
	// has the smallest raw payload (ties prefer dense, then bitmap).
	Sparse bool
	// Compress applies zstd when that makes the section strictly smaller.
	Compress bool
}

// TensorReport describes how Writer.AddTensor stored a tensor.
type TensorReport struct {
	Name          string
	Encoding      Encoding
	Compressed    bool  // zstd was applied
	NonZeros      int64 // elements that are not +0 in the stored value type
	RawBytes      int64 // payload size before compression
	StoredBytes   int64 // bytes the section occupies in the file (without padding)
	DenseF32Bytes int64 // 4 × number of elements, for comparison
	F16Overflows  int   // finite inputs that became ±Inf in float16
}

// WriteOptions tunes Writer.WriteFile.
type WriteOptions struct {
	// Sources lists files the caller read to build this container (for
	// instance the model being converted or re-packed). WriteFile refuses to
	// replace any of them (compared with os.SameFile).
	Sources []string
	// Perm is the permission of the new file; zero means 0644. The process's
	// umask clears bits from it, as for os.WriteFile.
	Perm os.FileMode
}

// Writer accumulates sections in memory (or, added by AddBlobFunc, their
// generators) and writes a container. It is not safe for concurrent use. The
// zero value is not usable; call NewWriter.
type Writer struct {
	sections []pending
	names    map[string]bool
	comp     compressor
}

// pending is one encoded section waiting to be written.
type pending struct {
	entry
	payload []byte                // stored bytes
	gen     func(io.Writer) error // or their generator (AddBlobFunc)
}

// NewWriter returns an empty Writer.
func NewWriter() *Writer { return &Writer{names: map[string]bool{}} }

// checkName validates a new section name (docs/FORMAT.md §4).
func (w *Writer) checkName(kind Kind, name string) error {
	label := sectionLabel(kind, name, len(w.sections))
	switch {
	case len(name) == 0:
		return newErr("", label, ErrInvalid, nil, "empty name")
	case len(name) > MaxNameLen:
		return newErr("", label, ErrInvalid, nil, "name is %d bytes, limit %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return newErr("", label, ErrInvalid, nil, "name is not valid UTF-8")
	case strings.IndexByte(name, 0) >= 0:
		return newErr("", label, ErrInvalid, nil, "name contains NUL")
	case w.names[name]:
		return newErr("", label, ErrInvalid, nil, "duplicate name")
	case len(w.sections) >= MaxSections:
		return newErr("", label, ErrLimit, nil, "section count exceeds limit %d", MaxSections)
	}
	return nil
}

// AddTensor encodes a tensor of the given shape (row-major data) and queues
// it. The data is copied. A rank-0 shape is a scalar with one element.
func (w *Writer) AddTensor(name string, shape []int, data []float32, opt AddOptions) (TensorReport, error) {
	if err := w.checkName(KindTensor, name); err != nil {
		return TensorReport{}, err
	}
	label := sectionLabel(KindTensor, name, 0)
	if len(shape) > MaxRank {
		return TensorReport{}, newErr("", label, ErrLimit, nil, "rank = %d exceeds limit %d", len(shape), MaxRank)
	}
	dims := make([]uint64, len(shape))
	for i, d := range shape {
		if d < 0 {
			return TensorReport{}, newErr("", label, ErrInvalid, nil, "dim %d = %d is negative", i, d)
		}
		dims[i] = uint64(d)
	}
	g, serr := checkShape(dims)
	if serr != nil {
		return TensorReport{}, newErr("", label, ErrLimit, nil, "%s", serr.msg)
	}
	if uint64(len(data)) != g.n {
		return TensorReport{}, newErr("", label, ErrInvalid, nil, "shape %v has %d elements but data has %d", shape, g.n, len(data))
	}
	n := int(g.n)
	rep := TensorReport{Name: name, DenseF32Bytes: 4 * int64(n)}
	var v values
	dense, bitmap, csr := F32, SparseBitmapF32, CSRF32
	if opt.F16 {
		v.f16, rep.F16Overflows = toF16(data)
		dense, bitmap, csr = F16, SparseBitmapF16, CSRF16
	} else {
		v.f32 = data // only read, by the encoders below, which copy it into the payload
	}
	nnz := 0
	for i := 0; i < n; i++ {
		if !v.isZero(i) {
			nnz++
		}
	}
	rep.NonZeros = int64(nnz)
	enc := dense
	if opt.Sparse {
		best := rawSize(dense, g, 0)
		if s := rawSize(bitmap, g, uint64(nnz)); s < best {
			enc, best = bitmap, s
		}
		if s := rawSize(csr, g, uint64(nnz)); s < best {
			enc = csr
		}
	}
	var payload []byte
	e := entry{encoding: enc, rank: uint8(len(dims)), name: name}
	copy(e.dims[:], dims)
	switch enc {
	case F32, F16:
		payload = encodeDense(v, n)
	case SparseBitmapF32, SparseBitmapF16:
		payload = encodeBitmap(v, n, nnz)
		e.nnz = uint64(nnz)
	default:
		payload = encodeCSR(v, int(g.rows), int(g.cols), nnz)
		e.nnz = uint64(nnz)
	}
	if err := w.add(&e, payload, opt.Compress, label); err != nil {
		return TensorReport{}, err
	}
	rep.Encoding = enc
	rep.Compressed = e.compression == Zstd
	rep.RawBytes = int64(e.raw)
	rep.StoredBytes = int64(e.stored)
	return rep, nil
}

// AddBlob queues a byte section (kind Blob), e.g. the converter's JSON
// metadata under the name "meta". The data is copied.
func (w *Writer) AddBlob(name string, data []byte, compress bool) error {
	if err := w.checkName(KindBlob, name); err != nil {
		return err
	}
	label := sectionLabel(KindBlob, name, 0)
	if uint64(len(data)) > MaxSectionBytes {
		return newErr("", label, ErrLimit, nil, "blob is %d bytes, limit %d", len(data), MaxSectionBytes)
	}
	e := entry{encoding: Blob, name: name}
	return w.add(&e, append([]byte(nil), data...), compress, label)
}

// AddBlobFunc queues a blob section of size bytes that write generates, without holding them:
// write is called now, to checksum them, and again by every WriteTo, to write them. Both calls
// must write the same size bytes (the data write encodes must not change until the Writer is
// done with): the Writer refuses (ErrInvalid) a first call that writes another count, and
// WriteTo fails (ErrIO) when a later call writes other bytes. The section is not compressed. For
// a large blob encoded from state held anyway (a learner's, say), it saves a copy of it.
func (w *Writer) AddBlobFunc(name string, size int64, write func(io.Writer) error) error {
	if err := w.checkName(KindBlob, name); err != nil {
		return err
	}
	label := sectionLabel(KindBlob, name, 0)
	if size < 0 || uint64(size) > MaxSectionBytes {
		return newErr("", label, ErrLimit, nil, "blob is %d bytes, limit %d", size, MaxSectionBytes)
	}
	g := genWriter{put: func([]byte) error { return nil }, size: uint64(size)}
	if err := write(&g); err != nil {
		return newErr("", label, ErrInvalid, err, "generate")
	}
	if g.n != uint64(size) {
		return newErr("", label, ErrInvalid, nil, "generated %d bytes, declared %d", g.n, size)
	}
	e := entry{encoding: Blob, name: name, raw: uint64(size), stored: uint64(size), crc: g.crc}
	w.sections = append(w.sections, pending{entry: e, gen: write})
	w.names[name] = true
	return nil
}

// genWriter passes an AddBlobFunc generator's bytes to put, counting and checksumming them, and
// refuses more than size.
type genWriter struct {
	put     func([]byte) error
	size, n uint64
	crc     uint32
}

func (g *genWriter) Write(b []byte) (int, error) {
	if uint64(len(b)) > g.size-g.n {
		return 0, fmt.Errorf("generated more than the %d bytes declared", g.size)
	}
	if err := g.put(b); err != nil {
		return 0, err
	}
	g.n += uint64(len(b))
	g.crc = crc32Update(g.crc, b)
	return len(b), nil
}

// add compresses if asked and worthwhile, fills sizes and CRC, and queues.
func (w *Writer) add(e *entry, payload []byte, compress bool, label string) error {
	e.raw = uint64(len(payload))
	stored := payload
	if compress && len(payload) > 0 {
		c, err := w.comp.compress(payload)
		if err != nil {
			return newErr("", label, ErrIO, err, "compress")
		}
		if len(c) < len(payload) {
			stored = c
			e.compression = Zstd
		}
	}
	e.stored = uint64(len(stored))
	e.crc = crc32c(stored)
	w.sections = append(w.sections, pending{entry: *e, payload: stored})
	w.names[e.name] = true
	return nil
}

// layout assigns canonical offsets and returns the header+table bytes and the
// total file size.
func (w *Writer) layout() ([]byte, uint64) {
	le := binary.LittleEndian
	count := uint64(len(w.sections))
	tableEnd := headerSize + count*entrySize
	head := make([]byte, tableEnd)
	pos, _ := align64(tableEnd)
	for i := range w.sections {
		p := &w.sections[i]
		p.offset = pos
		putEntry(head[headerSize+uint64(i)*entrySize:headerSize+uint64(i+1)*entrySize], &p.entry)
		pos, _ = align64(pos + p.stored)
	}
	copy(head, Magic)
	le.PutUint16(head[hMajor:], VersionMajor)
	le.PutUint16(head[hMinor:], VersionMinor)
	le.PutUint32(head[hCount:], uint32(count))
	le.PutUint32(head[hEntrySize:], entrySize)
	le.PutUint64(head[hFileSize:], pos)
	crc := crc32Update(crc32c(head[:hCRC]), head[headerSize:])
	le.PutUint32(head[hCRC:], crc)
	return head, pos
}

// WriteTo writes the container to out and returns the number of bytes
// written. The output is deterministic.
func (w *Writer) WriteTo(out io.Writer) (int64, error) {
	head, size := w.layout()
	var zeros [alignment]byte
	written := int64(0)
	put := func(b []byte) error {
		n, err := out.Write(b)
		written += int64(n)
		if err != nil {
			return newErr("", "", ErrIO, err, "write at offset %d", written)
		}
		return nil
	}
	if err := put(head); err != nil {
		return written, err
	}
	for i := range w.sections {
		p := &w.sections[i]
		if err := put(zeros[:p.offset-uint64(written)]); err != nil {
			return written, err
		}
		if p.gen == nil {
			if err := put(p.payload); err != nil {
				return written, err
			}
			continue
		}
		g := genWriter{put: put, size: p.stored}
		if err := p.gen(&g); err != nil {
			var fe *Error
			if errors.As(err, &fe) {
				return written, err // put's
			}
			return written, newErr("", sectionLabel(KindBlob, p.name, 0), ErrIO, err, "generate")
		}
		if g.n != p.stored || g.crc != p.crc {
			return written, newErr("", sectionLabel(KindBlob, p.name, 0), ErrIO, nil,
				"generated %d bytes with CRC %#x, not the %d bytes with CRC %#x checksummed when it was added", g.n, g.crc, p.stored, p.crc)
		}
	}
	if err := put(zeros[:size-uint64(written)]); err != nil {
		return written, err
	}
	return written, nil
}

// WriteFile writes the container to path atomically: it writes a temporary
// file in the same directory, fsyncs it, renames it over path and fsyncs the
// directory. On error path is untouched and the temporary file is removed.
// It refuses (ErrSameFile) to replace a file that is one of opts.Sources.
func (w *Writer) WriteFile(path string, opts WriteOptions) (err error) {
	if st, serr := os.Stat(path); serr == nil {
		for _, src := range opts.Sources {
			if sst, e := os.Stat(src); e == nil && os.SameFile(st, sst) {
				return newErr(path, "", ErrSameFile, nil, "refusing to overwrite source %s", src)
			}
		}
	}
	perm := opts.Perm
	if perm == 0 {
		perm = 0o644
	}
	dir := filepath.Dir(path)
	tmp, err := createExcl(dir, "."+filepath.Base(path)+".tmp", perm)
	if err != nil {
		return newErr(path, "", ErrIO, err, "create temporary file")
	}
	tmpName := tmp.Name()
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmpName)
		}
	}()
	bw := bufio.NewWriterSize(tmp, 1<<20)
	if _, err = w.WriteTo(bw); err != nil {
		return newErr(path, "", ErrIO, err, "write %s", tmpName)
	}
	if err = bw.Flush(); err != nil {
		return newErr(path, "", ErrIO, err, "write %s", tmpName)
	}
	if err = tmp.Sync(); err != nil {
		return newErr(path, "", ErrIO, err, "fsync %s", tmpName)
	}
	if err = tmp.Close(); err != nil {
		return newErr(path, "", ErrIO, err, "close %s", tmpName)
	}
	if err = os.Rename(tmpName, path); err != nil {
		return newErr(path, "", ErrIO, err, "rename %s", tmpName)
	}
	if serr := syncDir(dir); serr != nil {
		// The file is in place; only durability of the rename is in doubt.
		return newErr(path, "", ErrIO, serr, "fsync directory %s", dir)
	}
	return nil
}

// createExcl creates a new file dir/prefix<random digits> with perm (less the umask, which
// os.CreateTemp's fixed 0600 and a chmod would not honour), retrying on a name that exists.
func createExcl(dir, prefix string, perm os.FileMode) (*os.File, error) {
	var err error
	for try := 0; try < 100; try++ {
		var f *os.File
		name := filepath.Join(dir, prefix+strconv.FormatUint(rand.Uint64(), 36))
		f, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, err
}

// CopySection queues section name of f exactly as f stores it — encoding, compression, shape,
// sparse count and checksum — without decoding it, so that a tool can rewrite a container
// (add or replace a blob, say) and leave every other section byte for byte as it was. The
// stored bytes are checked against their CRC first; a corrupt section is not copied.
func (w *Writer) CopySection(f *File, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return newErr(f.name, sectionLabel(KindUnknown, name, 0), ErrClosed, nil, "copy after Close")
	}
	i, ok := f.index[name]
	if !ok {
		return newErr(f.name, sectionLabel(KindUnknown, name, 0), ErrNotFound, nil, "no such section")
	}
	s := &f.sections[i]
	if err := w.checkName(s.kind, name); err != nil {
		return err
	}
	stored, err := f.storedLocked(i)
	if err != nil {
		return err
	}
	e := s.entry
	e.offset = 0
	w.sections = append(w.sections, pending{entry: e, payload: append([]byte(nil), stored...)})
	w.names[name] = true
	return nil
}
