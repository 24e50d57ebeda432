package data

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// CSVOptions select how a CSV table becomes a Dataset.
type CSVOptions struct {
	// Target is the target column: a header name, or a 0-based index as a decimal string; empty
	// means the last column.
	Target string
	// Regression makes the target a real number; otherwise it is a class label (an integer
	// in [0, classes) or, if any label is not an integer, a name mapped to classes in order of
	// first appearance).
	Regression bool
	// Header says the first row holds column names. When false, a first row with any
	// non-numeric feature cell is treated as a header anyway.
	Header bool
}

// ReadCSV reads a CSV table: every column except the target is a numeric feature.
func ReadCSV(r io.Reader, name string, opt CSVOptions) (*Dataset, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	rows, err := cr.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("csv %s: %w", name, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("csv %s: empty", name)
	}
	cols := len(rows[0])
	if cols < 2 {
		return nil, fmt.Errorf("csv %s: need at least one feature and a target column, got %d columns", name, cols)
	}
	var header []string
	if opt.Header || !numericRow(rows[0]) {
		header, rows = rows[0], rows[1:]
	}
	tc := cols - 1
	if opt.Target != "" {
		tc = -1
		for i, h := range header {
			if strings.TrimSpace(h) == opt.Target {
				tc = i
			}
		}
		if tc < 0 {
			v, err := strconv.Atoi(opt.Target)
			if err != nil || v < 0 || v >= cols {
				return nil, fmt.Errorf("csv %s: target column %q not found (have %d columns)", name, opt.Target, cols)
			}
			tc = v
		}
	}
	d := &Dataset{Name: name, N: len(rows), Dim: cols - 1, Shape: []int{cols - 1}}
	d.X = make([]float32, 0, d.N*d.Dim)
	targets := make([]string, d.N)
	for r, row := range rows {
		line := r + 1
		if header != nil {
			line++
		}
		for c, cell := range row {
			if c == tc {
				targets[r] = strings.TrimSpace(cell)
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(cell), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("csv %s: line %d column %d: %q is not a finite number", name, line, c+1, cell)
			}
			d.X = append(d.X, float32(v))
		}
	}
	if opt.Regression {
		d.Outputs = 1
		d.Targets = make([]float32, d.N)
		for i, s := range targets {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("csv %s: row %d: target %q is not a finite number", name, i+1, s)
			}
			d.Targets[i] = float32(v)
		}
		return d, d.Validate()
	}
	d.Labels = make([]int, d.N)
	ints := true
	for i, s := range targets {
		v, err := strconv.Atoi(s)
		if err != nil || v < 0 || v > 1<<20 {
			ints = false
			break
		}
		d.Labels[i] = v
		d.Classes = max(d.Classes, v+1)
	}
	if !ints {
		ids := map[string]int{}
		for i, s := range targets {
			id, ok := ids[s]
			if !ok {
				id = len(ids)
				ids[s] = id
			}
			d.Labels[i] = id
		}
		d.Classes = len(ids)
	}
	return d, d.Validate()
}

func numericRow(row []string) bool {
	for _, c := range row {
		if _, err := strconv.ParseFloat(strings.TrimSpace(c), 64); err != nil {
			return false
		}
	}
	return true
}

// ReadCSVFile reads the CSV file at path (see ReadCSV).
func ReadCSVFile(path string, opt CSVOptions) (*Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	defer f.Close()
	return ReadCSV(f, path, opt)
}
