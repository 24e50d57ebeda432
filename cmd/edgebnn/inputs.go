package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/train/data"
)

// DefaultInputMaxBytes is the default inputLimits.MaxBytes: the largest input file predict reads
// (1 GiB).
const DefaultInputMaxBytes = 1 << 30

// inputLimits bound what predict reads from its --input file. A zero field takes its default.
type inputLimits struct {
	// MaxBytes bounds the file's size (DefaultInputMaxBytes).
	MaxBytes int64
	// CSV bounds a CSV file's rows, line length and columns (data.CSVLimits' defaults; its
	// MaxBytes is MaxBytes).
	CSV data.CSVLimits
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
	if strings.HasSuffix(path, ".safetensors") {
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
func newCSVInputs(open func() (io.ReadCloser, error), path string, width int, header bool, lim data.CSVLimits) (*csvInputs, error) {
	f, err := open()
	if err != nil {
		return nil, err
	}
	return &csvInputs{open: open, f: f, path: path, width: width, header: header, lim: lim,
		recs: data.NewCSVRecords(f, path, lim), first: true}, nil
}

// csvInputs streams a CSV file's rows.
type csvInputs struct {
	open   func() (io.ReadCloser, error)
	f      io.ReadCloser
	path   string
	width  int
	header bool
	lim    data.CSVLimits
	recs   *data.CSVRecords
	first  bool
	rows   int
	buf    []float32
}

func (c *csvInputs) next(max int) ([]float32, error) {
	c.buf = c.buf[:0]
	for n := 0; n < max; {
		rec, line, err := c.recs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		first := c.first
		c.first = false
		if first && (c.header || data.IsHeaderRow(rec)) {
			continue
		}
		if len(rec) != c.width {
			return nil, fmt.Errorf("%s: line %d has %d values; the model takes %d", c.path, line, len(rec), c.width)
		}
		for i, s := range rec {
			v, err := data.ParseFinite(s)
			if err != nil {
				return nil, fmt.Errorf("%s: line %d, column %d: %w", c.path, line, i+1, err)
			}
			c.buf = append(c.buf, v)
		}
		c.rows++
		n++
	}
	if c.rows == 0 {
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
	recs := data.NewCSVRecords(f, c.path, c.lim)
	n := 0
	for first := true; ; first = false {
		rec, _, err := recs.Next()
		if errors.Is(err, io.EOF) {
			return n, nil
		}
		if err != nil {
			return 0, err
		}
		if first && (c.header || data.IsHeaderRow(rec)) {
			continue
		}
		n++
	}
}

func (c *csvInputs) Close() error { return c.f.Close() }

// stInputs serves a safetensors tensor's rows, converting one chunk at a time.
type stInputs struct {
	path  string
	t     *safetensors.Tensor
	width int
	n     int // inputs
	pos   int // next input
	rowB  int // bytes per input
	buf   []float32
}

func openSafetensorsInputs(path, key string, width int, lim inputLimits) (inputSource, error) {
	b, err := readlimit.ReadFile(path, lim.MaxBytes)
	if err != nil {
		return nil, err
	}
	st, err := safetensors.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var t *safetensors.Tensor
	switch {
	case key != "":
		var ok bool
		if t, ok = st.Tensor(key); !ok {
			return nil, fmt.Errorf("%s: no tensor %q (it has %s)", path, key, strings.Join(st.Names(), ", "))
		}
	default:
		if in, ok := st.Tensor("inputs"); ok {
			t = in
			break
		}
		for i := range st.Tensors {
			if st.Tensors[i].DType.IsFloat() {
				if t != nil {
					return nil, fmt.Errorf("%s: several tensors; choose one with --input-key", path)
				}
				t = &st.Tensors[i]
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
	case t.DType.Size() == 0 || len(t.Data) != t.Shape[0]*width*t.DType.Size():
		return nil, shapeErr(fmt.Sprintf("%d bytes of %s data", len(t.Data), t.DType))
	}
	return &stInputs{path: path, t: t, width: width, n: t.Shape[0], rowB: width * t.DType.Size()}, nil
}

func (s *stInputs) next(max int) ([]float32, error) {
	n := min(max, s.n-s.pos)
	if n <= 0 {
		return s.buf[:0], nil
	}
	chunk := safetensors.Tensor{Name: s.t.Name, DType: s.t.DType, Shape: []int{n, s.width},
		Data: s.t.Data[s.pos*s.rowB : (s.pos+n)*s.rowB]}
	var err error
	switch s.t.DType {
	case safetensors.F64, safetensors.I32, safetensors.I64:
		var v64 []float64
		if v64, err = chunk.Float64s(); err == nil {
			s.buf = s.buf[:0]
			for _, v := range v64 {
				s.buf = append(s.buf, float32(v))
			}
		}
	default:
		s.buf, err = chunk.Float32s()
	}
	if err != nil {
		return nil, fmt.Errorf("%s: tensor %q: %w", s.path, s.t.Name, err)
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

func (s *stInputs) Close() error { return nil }
