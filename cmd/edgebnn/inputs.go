package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/csvrecords"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"path/filepath"
)

// DefaultInputMaxBytes is the default inputLimits.MaxBytes: the largest input file predict reads
// (1 GiB).
const DefaultInputMaxBytes = 1 << 30

// inputLimits bound what predict reads from its --input file. A zero field takes its default.
type inputLimits struct {
	// MaxBytes bounds the file's size (DefaultInputMaxBytes).
	MaxBytes int64
	// CSV bounds a CSV file's rows, line length and columns (csvrecords.Limits' defaults; its
	// MaxBytes is MaxBytes).
	CSV csvrecords.Limits
}

func (l inputLimits) withDefaults() inputLimits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultInputMaxBytes
	}
	l.CSV.MaxBytes = l.MaxBytes
	l.CSV = l.CSV.WithDefaults()
	return l
}

// inputSource yields prediction inputs a chunk at a time, so that predict's memory does not
// grow with the number of inputs.
type inputSource interface {
	// next returns up to max inputs (width values each) in a slice reused by the next call;
	// an empty slice means the inputs are exhausted.
	next(max int) ([]float32, error)
	// count returns the number of inputs (reading the file once more if needed).
	count() (int, error)
	Close() error
}

// openInputs opens prediction inputs: a safetensors file (the tensor named key, or "inputs",
// or its only floating-point tensor; the first dimension indexes the inputs) or a CSV file
// with one input per row (floats; the first row is a header when header is set or when none
// of its fields is a number). Each input must have width values, all finite. Only regular
// files within lim are read; every error names the file (and the tensor, or the line).
func openInputs(path, key string, width int, header bool, lim inputLimits) (inputSource, error) {
	lim = lim.withDefaults()
	ext := strings.ToLower(filepath.Ext(path))
	switch ext {
	case ".png", ".jpg", ".jpeg", ".gif", ".bmp", ".pgm", ".ppm", ".npy", ".npz", ".json", ".jsonl", ".pt", ".pth":
		return nil, fmt.Errorf("%s: inputs are read from CSV files (one input per row) or safetensors files, not %s files", path, ext)
	}
	if ext == ".safetensors" {
		if header {
			return nil, fmt.Errorf("%s: --header applies to CSV files only", path)
		}
		return openSafetensorsInputs(path, key, width, lim)
	}
	if key != "" {
		return nil, fmt.Errorf("%s: --input-key applies to safetensors files only", path)
	}
	return newCSVInputs(func() (io.ReadCloser, error) { return readlimit.Open(path, lim.MaxBytes) }, path, width, header, lim.CSV)
}

// newCSVInputs streams the CSV text that open returns (called again by count).
func newCSVInputs(open func() (io.ReadCloser, error), path string, width int, header bool, lim csvrecords.Limits) (*csvInputs, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	if width > 0 && width < lim.MaxColumns {
		// A row wider than the model's input is refused while it streams past, before the CSV
		// reader has built it (width+1: the width check below names the line and both counts).
		lim.MaxColumns = width + 1
	}
	return &csvInputs{open: open, f: f, path: path, width: width, header: header, lim: lim,
		recs: csvrecords.New(f, path, lim), first: true}, nil
}

// csvInputs streams a CSV file's rows.
type csvInputs struct {
	open    func() (io.ReadCloser, error)
	f       io.ReadCloser
	path    string
	width   int
	header  bool
	lim     csvrecords.Limits
	recs    *csvrecords.Records
	first   bool
	skipped bool // line 1 was taken as a header
	rows    int
	buf     []float32
}

func (c *csvInputs) next(max int) ([]float32, error) {
	c.buf = c.buf[:0]
	for n := 0; n < max; {
		rec, line, err := c.recs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, csvrecords.ErrTooManyFields) {
			return nil, fmt.Errorf("%w; the model takes %d values", err, c.width)
		}
		if err != nil {
			return nil, err
		}
		first := c.first
		c.first = false
		if first && (c.header || csvrecords.IsHeaderRow(rec)) {
			c.skipped = true
			continue
		}
		hint := ""
		if first {
			hint = " (if the first row is a header, give --header)"
		}
		if len(rec) != c.width {
			return nil, fmt.Errorf("%s: line %d has %d values; the model takes %d%s", c.path, line, len(rec), c.width, hint)
		}
		for i, s := range rec {
			v, err := csvrecords.ParseFinite(s)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d, column %d: %w%s", c.path, line, i+1, err, hint)
			}
			c.buf = append(c.buf, v)
		}
		c.rows++
		n++
	}
	if c.rows == 0 {
		if c.skipped {
			return nil, fmt.Errorf("%s: no inputs (line 1 was taken as a header)", c.path)
		}
		return nil, fmt.Errorf("%s: no inputs", c.path)
	}
	return c.buf, nil
}

// count reads the file once more, checking its structure (not its numbers), and returns its
// number of data rows.
func (c *csvInputs) count() (int, error) {
	f, err := c.open()
	if err != nil {
		return 0, err
	}
	defer f.Close()
	recs := csvrecords.New(f, c.path, c.lim)
	n := 0
	for first := true; ; first = false {
		rec, _, err := recs.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if first && (c.header || csvrecords.IsHeaderRow(rec)) {
			continue
		}
		n++
	}
}

func (c *csvInputs) Close() error { return c.f.Close() }

// stInputs streams a safetensors tensor's rows from the file, reading and converting one chunk
// at a time.
type stInputs struct {
	f     *os.File
	path  string
	t     safetensors.TensorInfo
	width int
	n     int   // inputs
	pos   int   // next input
	rowB  int   // bytes per input
	off   int64 // file offset of the tensor's data
	raw   []byte
	buf   []float32
}

func openSafetensorsInputs(path, key string, width int, lim inputLimits) (inputSource, error) {
	f, err := readlimit.Open(path, lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	src, err := newSafetensorsInputs(f, path, key, width)
	if err != nil {
		f.Close()
		return nil, err
	}
	return src, nil
}

func newSafetensorsInputs(f *os.File, path, key string, width int) (*stInputs, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	h, err := safetensors.ReadHeader(f, fi.Size(), inputHeaderLimits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	ts := h.Tensors
	// Names are unique (ReadHeader rejects duplicate keys), so any sort gives this order;
	// sort.Slice reuses the binary's one reflection-based sort where slices.SortFunc would
	// instantiate its generic sort for TensorInfo (about 10 KB of code).
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	var t *safetensors.TensorInfo
	for i := range ts {
		if ts[i].Name == key || (key == "" && ts[i].Name == "inputs") {
			t = &ts[i]
		}
	}
	switch {
	case key != "" && t == nil:
		return nil, fmt.Errorf("%s: no tensor %s (it has %s)", path, clip.Q(key), tensorNames(ts))
	case t == nil:
		for i := range ts {
			if ts[i].DType.IsFloat() {
				if t != nil {
					return nil, fmt.Errorf("%s: several tensors; choose one with --input-key", path)
				}
				t = &ts[i]
			}
		}
		if t == nil {
			return nil, fmt.Errorf("%s: no floating-point tensor", path)
		}
	}
	shapeErr := func(what string) error {
		return fmt.Errorf("%s: tensor %q has shape %v: %s; the model takes inputs of %d values (shape [N, ...] with %d values per input)",
			path, t.Name, t.Shape, what, width, width)
	}
	if len(t.Shape) == 0 {
		return nil, shapeErr("a scalar")
	}
	per := 1
	for _, d := range t.Shape[1:] {
		if d == 0 {
			return nil, shapeErr("no values per input")
		}
		if per > width {
			break
		}
		per *= d
	}
	switch {
	case t.Shape[0] == 0:
		return nil, shapeErr("no inputs")
	case per != width:
		return nil, shapeErr("wrong number of values per input")
	}
	return &stInputs{f: f, path: path, t: *t, width: width, n: t.Shape[0], rowB: width * t.DType.Size(), off: h.DataOffset + t.Begin}, nil
}

// inputHeaderLimits bound the header of a safetensors input file: predict reads one tensor of
// it, so a few thousand tensors and 16 MiB of header are plenty (the package's defaults, meant
// for checkpoints, let 99 MiB of empty rank-64 tensors cost 0.9 GB and 14 s).
var inputHeaderLimits = safetensors.Limits{MaxHeaderBytes: 16 << 20, MaxTensors: 4096}

// tensorNames lists the first names of ts (sorted), clipped, for an error message: a header may
// hold a million tensors, or names of megabytes.
func tensorNames(ts []safetensors.TensorInfo) string {
	const most = 8
	var b strings.Builder
	for i, t := range ts[:min(len(ts), most)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(clip.S(t.Name))
	}
	if len(ts) > most {
		fmt.Fprintf(&b, " and %d more", len(ts)-most)
	}
	return b.String()
}

func (s *stInputs) next(max int) ([]float32, error) {
	n := min(max, s.n-s.pos)
	if n <= 0 {
		return s.buf[:0], nil
	}
	if cap(s.raw) < n*s.rowB {
		s.raw = make([]byte, n*s.rowB)
	}
	s.raw = s.raw[:n*s.rowB]
	if _, err := s.f.ReadAt(s.raw, s.off+int64(s.pos)*int64(s.rowB)); err != nil {
		return nil, fmt.Errorf("%s: tensor %q: reading inputs %d to %d: %w", s.path, s.t.Name, s.pos, s.pos+n-1, err)
	}
	// 64-bit floats and 32/64-bit integers round to float32 here, one value at a time (a value
	// too large for float32 becomes ±Inf, refused below naming its input and position); the
	// other dtypes go through the safetensors package's widening.
	s.buf = s.buf[:0]
	switch le := binary.LittleEndian; s.t.DType {
	case safetensors.F64:
		for i := 0; i < len(s.raw); i += 8 {
			s.buf = append(s.buf, float32(math.Float64frombits(le.Uint64(s.raw[i:]))))
		}
	case safetensors.I64:
		for i := 0; i < len(s.raw); i += 8 {
			s.buf = append(s.buf, float32(int64(le.Uint64(s.raw[i:]))))
		}
	case safetensors.I32:
		for i := 0; i < len(s.raw); i += 4 {
			s.buf = append(s.buf, float32(int32(le.Uint32(s.raw[i:]))))
		}
	default:
		chunk := safetensors.Tensor{Name: s.t.Name, DType: s.t.DType, Shape: []int{n, s.width}, Data: s.raw}
		var err error
		if s.buf, err = chunk.Float32s(); err != nil {
			return nil, fmt.Errorf("%s: %w", s.path, err)
		}
	}
	for i, v := range s.buf {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("%s: tensor %q: input %d, value %d is %v (not a finite float32)", s.path, s.t.Name, s.pos+i/s.width, i%s.width, v)
		}
	}
	s.pos += n
	return s.buf, nil
}

func (s *stInputs) count() (int, error) { return s.n, nil }

func (s *stInputs) Close() error { return s.f.Close() }
