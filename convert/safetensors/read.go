package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/strictjson"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// MaxHeaderSize is the largest JSON header this package accepts by
// default (100 MiB, DefaultLimits.MaxHeaderBytes) and writes.
const MaxHeaderSize = 100 << 20

// Limits bounds what Parse and Read accept, so that a hostile header
// cannot make the reader allocate much more than the file's size. A zero
// field takes its default (DefaultLimits).
type Limits struct {
	// MaxHeaderBytes bounds the JSON header. Default MaxHeaderSize.
	MaxHeaderBytes uint64
	// MaxRank bounds the dimensions of a tensor's shape. Default 64.
	MaxRank int
	// MaxTensors bounds the number of tensors. Default 1<<20.
	MaxTensors int
	// MaxFileBytes bounds the bytes Read takes from its stream (Parse
	// and ReadFile work on data already in memory or on disk).
	// Default 1<<40.
	MaxFileBytes int64
}

// DefaultLimits are the limits of Parse, Read and ReadFile.
var DefaultLimits = Limits{MaxHeaderBytes: MaxHeaderSize, MaxRank: 64, MaxTensors: 1 << 20, MaxFileBytes: 1 << 40}

func (l Limits) withDefaults() Limits {
	if l.MaxHeaderBytes == 0 {
		l.MaxHeaderBytes = DefaultLimits.MaxHeaderBytes
	}
	if l.MaxRank <= 0 {
		l.MaxRank = DefaultLimits.MaxRank
	}
	if l.MaxTensors <= 0 {
		l.MaxTensors = DefaultLimits.MaxTensors
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultLimits.MaxFileBytes
	}
	return l
}

// MetadataKey is the reserved header key holding the string→string
// metadata map.
const MetadataKey = "__metadata__"

// File is a parsed safetensors file.
type File struct {
	// Metadata is the header's "__metadata__" map (never nil).
	Metadata map[string]string
	// Tensors lists the tensors in file order (sorted by data offset).
	Tensors []Tensor
	index   map[string]int
}

// Tensor returns the tensor called name.
func (f *File) Tensor(name string) (*Tensor, bool) {
	i, ok := f.index[name]
	if !ok {
		return nil, false
	}
	return &f.Tensors[i], true
}

// Names returns the tensor names sorted lexicographically.
func (f *File) Names() []string {
	names := make([]string, len(f.Tensors))
	for i := range f.Tensors {
		names[i] = f.Tensors[i].Name
	}
	sort.Strings(names)
	return names
}

// ReadFile reads and validates the safetensors file at path.
func ReadFile(path string) (*File, error) {
	return ReadFileLimits(path, Limits{})
}

// ReadFileLimits is ReadFile within lim.
func ReadFileLimits(path string, lim Limits) (*File, error) {
	return readlimit.ParseFile("safetensors", path, lim.withDefaults().MaxFileBytes, func(b []byte) (*File, error) {
		return ParseLimits(b, lim)
	})
}

// Read reads a whole safetensors stream from r and validates it. The header
// length is checked against MaxHeaderSize before anything else is read.
func Read(r io.Reader) (*File, error) {
	return ReadLimits(r, Limits{})
}

// ReadLimits is Read within lim: the header length is checked against
// lim.MaxHeaderBytes before anything else is read, and at most
// lim.MaxFileBytes are read.
func ReadLimits(r io.Reader, lim Limits) (*File, error) {
	lim = lim.withDefaults()
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(pre[:])
	if n > lim.MaxHeaderBytes {
		return nil, fmt.Errorf("safetensors: header length %d exceeds limit %d", n, lim.MaxHeaderBytes)
	}
	var buf bytes.Buffer
	buf.Write(pre[:])
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, fmt.Errorf("safetensors: header of %d bytes: %w", n, noEOF(err))
	}
	rest := lim.MaxFileBytes - int64(buf.Len())
	if m, err := io.Copy(&buf, io.LimitReader(r, rest+1)); err != nil {
		return nil, fmt.Errorf("safetensors: reading data: %w", err)
	} else if m > rest {
		return nil, fmt.Errorf("safetensors: stream longer than the %d-byte limit", lim.MaxFileBytes)
	}
	return ParseLimits(buf.Bytes(), lim)
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// entry is one tensor of the header. Shape and data_offsets are kept raw
// and read by uints, which bounds their length before allocating.
type entry struct {
	DType       *string         `json:"dtype"`
	Shape       json.RawMessage `json:"shape"`
	DataOffsets json.RawMessage `json:"data_offsets"`
}

// uints reads a JSON array of non-negative integers of at most max
// elements.
func uints(raw json.RawMessage, max int, what string) ([]uint64, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, fmt.Errorf("%s is not an array", what)
	}
	out := []uint64{}
	for dec.More() {
		if len(out) == max {
			return nil, fmt.Errorf("%s has more than %d values", what, max)
		}
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		num, ok := tok.(json.Number)
		if !ok {
			return nil, fmt.Errorf("%s holds %s, not an integer", what, clip.V(tok))
		}
		v, err := strconv.ParseUint(string(num), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: %s is not a non-negative integer", what, clip.S(string(num)))
		}
		out = append(out, v)
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// Parse validates a complete safetensors file held in data. The returned
// tensors' Data slices alias data.
//
// Validation: header length at most MaxHeaderSize and within the file;
// the header is a JSON object with no duplicate keys; every entry has a
// known dtype, a shape and two data_offsets (and no other fields);
// byte size == prod(shape)·dtype size; the offset ranges do not overlap
// and cover the data region exactly. DefaultLimits bound the header, the
// rank of shapes and the number of tensors.
func Parse(data []byte) (*File, error) {
	return ParseLimits(data, Limits{})
}

// ParseLimits is Parse within lim.
func ParseLimits(data []byte, lim Limits) (*File, error) {
	lim = lim.withDefaults()
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: file of %d bytes is shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > lim.MaxHeaderBytes {
		return nil, fmt.Errorf("safetensors: header length %d exceeds limit %d", n, lim.MaxHeaderBytes)
	}
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d bytes after it", n, len(data)-8)
	}
	body := data[8+int(n):]
	h, err := parseHeader(data[8:8+int(n)], int64(len(body)), lim)
	if err != nil {
		return nil, err
	}
	f := &File{Metadata: h.Metadata, Tensors: make([]Tensor, len(h.Tensors)), index: make(map[string]int, len(h.Tensors))}
	for i, t := range h.Tensors {
		f.Tensors[i] = Tensor{Name: t.Name, DType: t.DType, Shape: t.Shape, Data: body[t.Begin:t.End:t.End]}
		f.index[t.Name] = i
	}
	return f, nil
}

// TensorInfo is one tensor of a header: what Tensor holds but its data, which is bytes
// [Begin, End) of the data region (the file from Header.DataOffset on).
type TensorInfo struct {
	Name       string
	DType      DType
	Shape      []int
	Begin, End int64
}

// Header is a safetensors header read without the data (ReadHeader).
type Header struct {
	// Metadata is the header's "__metadata__" map (never nil).
	Metadata map[string]string
	// Tensors lists the tensors in data order.
	Tensors []TensorInfo
	// DataOffset is the file offset of the data region: 8 + the header's length.
	DataOffset int64
}

// ReadHeader reads the header of a safetensors file of size bytes from r, positioned at the
// file's start, and validates it as ParseLimits does — the same limits, and data ranges that
// tile the size − DataOffset bytes of data exactly — without reading the data: for files too
// large to hold, whose tensors the caller then reads by range.
func ReadHeader(r io.Reader, size int64, lim Limits) (*Header, error) {
	lim = lim.withDefaults()
	var pre [8]byte
	if size < 8 {
		return nil, fmt.Errorf("safetensors: file of %d bytes is shorter than the 8-byte header length", size)
	}
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", noEOF(err))
	}
	n := binary.LittleEndian.Uint64(pre[:])
	if n > lim.MaxHeaderBytes {
		return nil, fmt.Errorf("safetensors: header length %d exceeds limit %d", n, lim.MaxHeaderBytes)
	}
	if n > uint64(size-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d bytes after it", n, size-8)
	}
	hdr := make([]byte, n)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, fmt.Errorf("safetensors: header of %d bytes: %w", n, noEOF(err))
	}
	h, err := parseHeader(hdr, size-8-int64(n), lim)
	if err != nil {
		return nil, err
	}
	h.DataOffset = 8 + int64(n)
	return h, nil
}

// parseHeader validates the JSON header of a file whose data region has body bytes.
func parseHeader(header []byte, body int64, lim Limits) (*Header, error) {
	h := &Header{Metadata: map[string]string{}}
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("safetensors: header is not a JSON object")
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("safetensors: header: %w", err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("safetensors: header: key is not a string")
		}
		if seen[key] {
			return nil, fmt.Errorf("safetensors: header: duplicate key %s", clip.Q(key))
		}
		seen[key] = true
		if key == MetadataKey {
			var m map[string]string
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("safetensors: header %s: must map strings to strings: %w", MetadataKey, clip.Error(err))
			}
			for k, v := range m {
				h.Metadata[k] = v
			}
			continue
		}
		if len(h.Tensors) >= lim.MaxTensors {
			return nil, fmt.Errorf("safetensors: header: more than %d tensors", lim.MaxTensors)
		}
		var e entry
		sub := json.RawMessage{}
		if err := dec.Decode(&sub); err != nil {
			return nil, fmt.Errorf("safetensors: header entry %s: %w", clip.Q(key), clip.Error(err))
		}
		if err := strictjson.Decode(sub, &e); err != nil {
			return nil, fmt.Errorf("safetensors: header entry %s: %w", clip.Q(key), clip.Error(err))
		}
		if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
			return nil, fmt.Errorf("safetensors: tensor %s: needs dtype, shape and data_offsets", clip.Q(key))
		}
		dt := DType(*e.DType)
		if !dt.Valid() {
			return nil, fmt.Errorf("safetensors: tensor %s: unknown dtype %s", clip.Q(key), clip.Q(*e.DType))
		}
		offsets, err := uints(e.DataOffsets, 3, "data_offsets")
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %s: %w", clip.Q(key), err)
		}
		if len(offsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %s: data_offsets has %d values, want 2", clip.Q(key), len(offsets))
		}
		dims, err := uints(e.Shape, lim.MaxRank, "shape")
		if err != nil {
			return nil, fmt.Errorf("safetensors: tensor %s: %w", clip.Q(key), err)
		}
		begin, end := offsets[0], offsets[1]
		if begin > end || end > uint64(body) {
			return nil, fmt.Errorf("safetensors: tensor %s: data_offsets [%d, %d] outside the %d-byte data region", clip.Q(key), begin, end, body)
		}
		elems := uint64(1)
		shape := make([]int, len(dims))
		for i, d := range dims {
			if d > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %s: dimension %d = %d too large", clip.Q(key), i, d)
			}
			shape[i] = int(d)
			hi, lo := mulU64(elems, d)
			if hi != 0 {
				return nil, fmt.Errorf("safetensors: tensor %s: shape %v overflows", clip.Q(key), dims)
			}
			elems = lo
		}
		hi, size := mulU64(elems, uint64(dt.Size()))
		if hi != 0 || size != end-begin {
			return nil, fmt.Errorf("safetensors: tensor %s: shape %v of %s needs %d elements × %d bytes but data_offsets span %d bytes", clip.Q(key), dims, dt, elems, dt.Size(), end-begin)
		}
		h.Tensors = append(h.Tensors, TensorInfo{Name: key, DType: dt, Shape: shape, Begin: int64(begin), End: int64(end)})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	// Only padding whitespace may follow the object.
	if len(bytes.TrimRight(header[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, fmt.Errorf("safetensors: header: trailing data after the JSON object")
	}
	sort.SliceStable(h.Tensors, func(a, b int) bool {
		if h.Tensors[a].Begin != h.Tensors[b].Begin {
			return h.Tensors[a].Begin < h.Tensors[b].Begin
		}
		return h.Tensors[a].End < h.Tensors[b].End
	})
	pos := int64(0)
	for _, t := range h.Tensors {
		if t.Begin != pos {
			if t.Begin < pos {
				return nil, fmt.Errorf("safetensors: tensor %s: data_offsets [%d, %d] overlap the previous tensor (ends at %d)", clip.Q(t.Name), t.Begin, t.End, pos)
			}
			return nil, fmt.Errorf("safetensors: tensor %s: gap in data region before offset %d (previous tensor ends at %d)", clip.Q(t.Name), t.Begin, pos)
		}
		pos = t.End
	}
	if pos != body {
		return nil, fmt.Errorf("safetensors: tensors cover %d bytes but the data region has %d", pos, body)
	}
	return h, nil
}
