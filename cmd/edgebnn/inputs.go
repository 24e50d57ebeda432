package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// readInputs reads prediction inputs: a safetensors file (the tensor named key, or "inputs", or
// its only floating-point tensor; the first dimension indexes the inputs) or a CSV file with one
// input per row (floats, with an optional header row). Each input must have width values.
func readInputs(path, key string, width int) ([]float32, int, error) {
	if strings.HasSuffix(path, ".safetensors") {
		return readSafetensorsInputs(path, key, width)
	}
	if key != "" {
		return nil, 0, fmt.Errorf("%s: --input-key applies to safetensors files only", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	return readCSVInputs(f, path, width)
}

func readSafetensorsInputs(path, key string, width int) ([]float32, int, error) {
	st, err := safetensors.ReadFile(path)
	if err != nil {
		return nil, 0, err
	}
	var t *safetensors.Tensor
	switch {
	case key != "":
		var ok bool
		if t, ok = st.Tensor(key); !ok {
			return nil, 0, fmt.Errorf("%s: no tensor %q (it has %s)", path, key, strings.Join(st.Names(), ", "))
		}
	default:
		if in, ok := st.Tensor("inputs"); ok {
			t = in
			break
		}
		for i := range st.Tensors {
			if st.Tensors[i].DType.IsFloat() {
				if t != nil {
					return nil, 0, fmt.Errorf("%s: several tensors; choose one with --input-key", path)
				}
				t = &st.Tensors[i]
			}
		}
		if t == nil {
			return nil, 0, fmt.Errorf("%s: no floating-point tensor", path)
		}
	}
	var vals []float32
	if t.DType == safetensors.F64 {
		v64, err := t.Float64s()
		if err != nil {
			return nil, 0, fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
		}
		vals = make([]float32, len(v64))
		for i, v := range v64 {
			vals[i] = float32(v)
		}
	} else if vals, err = t.Float32s(); err != nil {
		return nil, 0, fmt.Errorf("%s: tensor %q: %w", path, t.Name, err)
	}
	if len(t.Shape) == 0 || len(vals)%width != 0 || (len(t.Shape) > 0 && len(vals)/t.Shape[0] != width) {
		return nil, 0, fmt.Errorf("%s: tensor %q has shape %v; the model takes inputs of %d values (shape [N, ...] with %d values per input)", path, t.Name, t.Shape, width, width)
	}
	return vals, t.Shape[0], nil
}

func readCSVInputs(r io.Reader, path string, width int) ([]float32, int, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	var vals []float32
	n := 0
	for row := 1; ; row++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s: %w", path, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		parsed := make([]float32, 0, len(rec))
		var bad int = -1
		for i, s := range rec {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 32)
			if err != nil {
				bad = i
				break
			}
			parsed = append(parsed, float32(v))
		}
		if bad >= 0 {
			if row == 1 {
				continue // a header row
			}
			return nil, 0, fmt.Errorf("%s: row %d, column %d: %q is not a number", path, row, bad+1, rec[bad])
		}
		if len(parsed) != width {
			return nil, 0, fmt.Errorf("%s: row %d has %d values; the model takes %d", path, row, len(parsed), width)
		}
		for i, v := range parsed {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, 0, fmt.Errorf("%s: row %d, column %d is %v", path, row, i+1, v)
			}
		}
		vals = append(vals, parsed...)
		n++
	}
	if n == 0 {
		return nil, 0, fmt.Errorf("%s: no inputs", path)
	}
	return vals, n, nil
}
