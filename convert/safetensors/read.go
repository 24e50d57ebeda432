package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
)

// MaxHeaderSize is the largest JSON header this package accepts (100 MiB).
const MaxHeaderSize = 100 << 20

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
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// Read reads a whole safetensors stream from r and validates it. The header
// length is checked against MaxHeaderSize before anything else is read.
func Read(r io.Reader) (*File, error) {
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return nil, fmt.Errorf("safetensors: reading header length: %w", err)
	}
	n := binary.LittleEndian.Uint64(pre[:])
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: header length %d exceeds limit %d", n, MaxHeaderSize)
	}
	var buf bytes.Buffer
	buf.Write(pre[:])
	if _, err := io.CopyN(&buf, r, int64(n)); err != nil {
		return nil, fmt.Errorf("safetensors: header of %d bytes: %w", n, noEOF(err))
	}
	if _, err := io.Copy(&buf, r); err != nil {
		return nil, fmt.Errorf("safetensors: reading data: %w", err)
	}
	return Parse(buf.Bytes())
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

type entry struct {
	DType       *string   `json:"dtype"`
	Shape       *[]uint64 `json:"shape"`
	DataOffsets *[]uint64 `json:"data_offsets"`
}

// Parse validates a complete safetensors file held in data. The returned
// tensors' Data slices alias data.
//
// Validation: header length at most MaxHeaderSize and within the file;
// the header is a JSON object with no duplicate keys; every entry has a
// known dtype, a shape and two data_offsets (and no other fields);
// byte size == prod(shape)·dtype size; the offset ranges do not overlap
// and cover the data region exactly.
func Parse(data []byte) (*File, error) {
	if len(data) < 8 {
		return nil, fmt.Errorf("safetensors: file of %d bytes is shorter than the 8-byte header length", len(data))
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderSize {
		return nil, fmt.Errorf("safetensors: header length %d exceeds limit %d", n, MaxHeaderSize)
	}
	if n > uint64(len(data)-8) {
		return nil, fmt.Errorf("safetensors: header length %d exceeds the %d bytes after it", n, len(data)-8)
	}
	header := data[8 : 8+int(n)]
	body := data[8+int(n):]

	f := &File{Metadata: map[string]string{}, index: map[string]int{}}
	type span struct {
		begin, end uint64
		i          int
	}
	var spans []span

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
			return nil, fmt.Errorf("safetensors: header: duplicate key %q", key)
		}
		seen[key] = true
		if key == MetadataKey {
			var m map[string]string
			if err := dec.Decode(&m); err != nil {
				return nil, fmt.Errorf("safetensors: header %s: must map strings to strings: %w", MetadataKey, err)
			}
			for k, v := range m {
				f.Metadata[k] = v
			}
			continue
		}
		var e entry
		sub := json.RawMessage{}
		if err := dec.Decode(&sub); err != nil {
			return nil, fmt.Errorf("safetensors: header entry %q: %w", key, err)
		}
		ed := json.NewDecoder(bytes.NewReader(sub))
		ed.DisallowUnknownFields()
		if err := ed.Decode(&e); err != nil {
			return nil, fmt.Errorf("safetensors: header entry %q: %w", key, err)
		}
		if e.DType == nil || e.Shape == nil || e.DataOffsets == nil {
			return nil, fmt.Errorf("safetensors: tensor %q: needs dtype, shape and data_offsets", key)
		}
		dt := DType(*e.DType)
		if !dt.Valid() {
			return nil, fmt.Errorf("safetensors: tensor %q: unknown dtype %q", key, *e.DType)
		}
		if len(*e.DataOffsets) != 2 {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets has %d values, want 2", key, len(*e.DataOffsets))
		}
		begin, end := (*e.DataOffsets)[0], (*e.DataOffsets)[1]
		if begin > end || end > uint64(len(body)) {
			return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] outside the %d-byte data region", key, begin, end, len(body))
		}
		elems := uint64(1)
		shape := make([]int, len(*e.Shape))
		for i, d := range *e.Shape {
			if d > math.MaxInt32 {
				return nil, fmt.Errorf("safetensors: tensor %q: dimension %d = %d too large", key, i, d)
			}
			shape[i] = int(d)
			hi, lo := mulU64(elems, d)
			if hi != 0 {
				return nil, fmt.Errorf("safetensors: tensor %q: shape %v overflows", key, *e.Shape)
			}
			elems = lo
		}
		hi, size := mulU64(elems, uint64(dt.Size()))
		if hi != 0 || size != end-begin {
			return nil, fmt.Errorf("safetensors: tensor %q: shape %v of %s needs %d elements × %d bytes but data_offsets span %d bytes", key, *e.Shape, dt, elems, dt.Size(), end-begin)
		}
		spans = append(spans, span{begin, end, len(f.Tensors)})
		f.Tensors = append(f.Tensors, Tensor{Name: key, DType: dt, Shape: shape, Data: body[begin:end:end]})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("safetensors: header: %w", err)
	}
	// Only padding whitespace may follow the object.
	if len(bytes.TrimRight(header[dec.InputOffset():], " \t\r\n")) != 0 {
		return nil, fmt.Errorf("safetensors: header: trailing data after the JSON object")
	}

	sort.SliceStable(spans, func(a, b int) bool {
		if spans[a].begin != spans[b].begin {
			return spans[a].begin < spans[b].begin
		}
		return spans[a].end < spans[b].end
	})
	pos := uint64(0)
	ordered := make([]Tensor, len(spans))
	for k, s := range spans {
		if s.begin != pos {
			name := f.Tensors[s.i].Name
			if s.begin < pos {
				return nil, fmt.Errorf("safetensors: tensor %q: data_offsets [%d, %d] overlap the previous tensor (ends at %d)", name, s.begin, s.end, pos)
			}
			return nil, fmt.Errorf("safetensors: tensor %q: gap in data region before offset %d (previous tensor ends at %d)", name, s.begin, pos)
		}
		pos = s.end
		ordered[k] = f.Tensors[s.i]
	}
	if pos != uint64(len(body)) {
		return nil, fmt.Errorf("safetensors: tensors cover %d bytes but the data region has %d", pos, len(body))
	}
	f.Tensors = ordered
	for i := range f.Tensors {
		f.index[f.Tensors[i].Name] = i
	}
	return f, nil
}
