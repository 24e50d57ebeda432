package data

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/csvrecords"
	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// CSVOptions select how a CSV table becomes a Dataset.
type CSVOptions struct {
	// Target is the target column: a header name, or a 0-based index as a decimal string; empty
	// means the last column.
	Target string
	// Regression makes the target a real number; otherwise it is a class label (an integer
	// in [0, classes), also written 1.0, or, if any label is not one, a name: classes are the
	// names in sorted order, kept as the Dataset's ClassNames). Either way there are at most
	// MaxClasses classes.
	Regression bool
	// Header says the first row holds column names. When false, the first row is a header
	// only if every field is a name (IsHeaderRow: not a number, not empty, with a letter); any
	// other row is data, and a field that is not a finite number is an error naming its line.
	Header bool
	// Limits bound the file (zero fields: the defaults).
	Limits CSVLimits
}

// MaxAbsValue bounds the magnitude of a data set's values (features and regression targets):
// training squares and sums them in float32, whose largest value is about 3.4e38, so 1e20 as a
// target made the first loss +Inf. 1e15 leaves room for squares (1e30) summed over millions of
// examples; standardise or rescale a column with larger values.
const MaxAbsValue = 1e15

// MaxClasses bounds the classes of a classification data set: class numbers 0 to MaxClass (as
// ParseClasses), or as many distinct label names. Every test input's prediction holds a
// probability per class, so 20 000 names in a 238 kB file once made evaluation take 2 GB.
const MaxClasses = MaxClass + 1

// parseValue parses a CSV field as a data value: a finite float32 within ±MaxAbsValue.
func parseValue(cell string) (float32, error) {
	v, err := csvrecords.ParseFinite(cell)
	if err != nil {
		return 0, err
	}
	if math.Abs(float64(v)) > MaxAbsValue {
		return 0, fmt.Errorf("%s is outside ±%.0e (float32 arithmetic overflows on values this large in training: rescale the column)", csvrecords.QuotePrefix(cell), MaxAbsValue)
	}
	return v, nil
}

// ReadCSV reads a CSV table: every column except the target is a numeric feature. Values
// (features and regression targets) lie within ±MaxAbsValue, and class labels make at most
// MaxClasses classes; anything else is an error naming the file, line and column.
func ReadCSV(r io.Reader, name string, opt CSVOptions) (*Dataset, error) {
	recs := csvrecords.New(r, "csv "+name, opt.Limits)
	var (
		header  []string
		cols    int
		tc      int
		d       = &Dataset{Name: name}
		targets []string
		// firstLine is the line of each distinct label's first row, up to MaxClasses of them;
		// overLine the line of the first label beyond those (0: none), whose row would make a
		// class too many if the labels are names.
		firstLine = map[string]int{}
		overLine  int
		overLabel string
	)
	for first := true; ; first = false {
		rec, line, err := recs.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if first {
			cols = len(rec)
			if cols < 2 {
				return nil, fmt.Errorf("csv %s: need at least one feature and a target column, got %d columns", name, cols)
			}
			if opt.Header || csvrecords.IsHeaderRow(rec) {
				header = append([]string(nil), rec...)
			}
			if tc, err = targetColumn(opt.Target, header, cols); err != nil {
				return nil, fmt.Errorf("csv %s: %w", name, err)
			}
			if header != nil {
				continue
			}
		}
		if len(rec) != cols {
			return nil, fmt.Errorf("csv %s: line %d has %d fields, the first row %d", name, line, len(rec), cols)
		}
		for c, cell := range rec {
			if c == tc && opt.Regression {
				v, err := parseValue(cell)
				if err != nil {
					return nil, fmt.Errorf("csv %s: line %d column %d (the target): %w", name, line, c+1, err)
				}
				d.Targets = append(d.Targets, v)
				continue
			}
			if c == tc {
				label := strings.TrimSpace(cell)
				targets = append(targets, label)
				if _, seen := firstLine[label]; !seen && overLine == 0 {
					if len(firstLine) < MaxClasses {
						firstLine[label] = line
					} else {
						overLine, overLabel = line, label
					}
				}
				continue
			}
			v, err := parseValue(cell)
			if err != nil {
				return nil, fmt.Errorf("csv %s: line %d column %d: %w", name, line, c+1, err)
			}
			d.X = append(d.X, v)
		}
	}
	if cols == 0 {
		return nil, fmt.Errorf("csv %s: empty", name)
	}
	d.N, d.Dim, d.Shape = len(targets)+len(d.Targets), cols-1, []int{cols - 1}
	if d.N == 0 {
		return nil, fmt.Errorf("csv %s: no data rows", name)
	}
	if opt.Regression {
		d.Outputs = 1
		return d, d.Validate()
	}
	d.Labels = make([]int, d.N)
	ints := true
	notNumber := ""
	for i, s := range targets {
		v, err := strconv.ParseFloat(s, 64) // 1 and 1.0 (pandas' float columns) alike
		if err != nil || v != math.Trunc(v) || v < 0 || v > 1<<20 {
			ints = false
			notNumber = "label " + csvrecords.QuotePrefix(s)
			if l, ok := firstLine[s]; ok {
				notNumber += fmt.Sprintf(" on line %d", l)
			}
			notNumber += " is not a class number"
			break
		}
		d.Labels[i] = int(v)
		d.Classes = max(d.Classes, int(v)+1)
	}
	if ints && d.Classes > MaxClasses {
		i := slices.IndexFunc(d.Labels, func(y int) bool { return y > MaxClass })
		where := ""
		if l, ok := firstLine[targets[i]]; ok {
			where = fmt.Sprintf("line %d column %d: ", l, tc+1)
		}
		return nil, fmt.Errorf("csv %s: %sclass label %s is above %d: at most MaxClasses = %d classes", name, where, csvrecords.QuotePrefix(targets[i]), MaxClass, MaxClasses)
	}
	if !ints {
		// Names: numbered in sorted order, not in order of first appearance — which differs
		// between files — and kept as ClassNames (the model records them; eval and calibrate
		// map another file's labels by name, MatchClassNames).
		if overLine > 0 {
			return nil, fmt.Errorf("csv %s: line %d column %d: label %s makes %d distinct class names, more than MaxClasses = %d (is column %d the labels?)",
				name, overLine, tc+1, csvrecords.QuotePrefix(overLabel), MaxClasses+1, MaxClasses, tc+1)
		}
		d.ClassNames = slices.Sorted(maps.Keys(firstLine))
		for i, s := range targets {
			d.Labels[i], _ = slices.BinarySearch(d.ClassNames, s)
		}
		d.Classes, d.NamedLabels, d.NamedBecause = len(d.ClassNames), true, notNumber
	}
	return d, d.Validate()
}

// targetColumn finds the target column: a header name, a 0-based index, or the last column.
func targetColumn(target string, header []string, cols int) (int, error) {
	if target == "" {
		return cols - 1, nil
	}
	for i, h := range header {
		if strings.TrimSpace(h) == target {
			return i, nil
		}
	}
	v, err := strconv.Atoi(target)
	if err != nil || v < 0 || v >= cols {
		return 0, fmt.Errorf("target column %s not found (have %d columns)", csvrecords.QuotePrefix(target), cols)
	}
	return v, nil
}

// ReadCSVFile reads the CSV file at path (see ReadCSV): a regular file (not a FIFO, device or
// directory) of at most opt.Limits.MaxBytes bytes.
func ReadCSVFile(path string, opt CSVOptions) (*Dataset, error) {
	f, err := readlimit.Open(path, opt.Limits.WithDefaults().MaxBytes)
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	defer f.Close()
	return ReadCSV(f, path, opt)
}
