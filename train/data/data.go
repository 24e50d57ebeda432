// Package data loads the trainer's data sets into memory: Fashion-MNIST IDX files, CSV tables,
// the toy 1-D regression problem of paper 003 and class subsets of classification data (so that
// held-out classes can serve as out-of-distribution inputs).
package data

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/clip"
)

// Dataset is a labelled data set held in memory. Inputs are row-major: example i occupies
// X[i*Dim : (i+1)*Dim], images channel-major (C×H×W).
type Dataset struct {
	// Name describes where the data came from (for logs and error messages).
	Name string
	// X holds N×Dim input values.
	X []float32
	// N is the number of examples and Dim the number of values per example.
	N, Dim int
	// Shape is one example's shape: [features] or [channels, height, width].
	Shape []int
	// Labels holds N class indices in [0, Classes) for classification data (nil otherwise).
	Labels []int
	// Classes is the number of classes (0 for regression).
	Classes int
	// Targets holds N×Outputs regression targets (nil for classification).
	Targets []float32
	// Outputs is the number of regression targets per example (0 for classification).
	Outputs int
	// Scale is what the loader multiplied the values stored in the file by to make X (1/255 for
	// 8-bit image pixels); 0 means 1. A model trained on X records it as its input
	// preprocessing, so that a device gives it raw values from the same kind of file.
	Scale float64
	// ClassNames names the classes when the data set defines them (nil otherwise).
	ClassNames []string
	// NamedLabels reports that the file's labels were names, not class numbers (a CSV column
	// with a value that is not a non-negative integer), numbered in sorted order of ClassNames:
	// those numbers mean something to a model only through the names it records.
	NamedLabels bool
	// NamedBecause says, for NamedLabels, which label made the column names (the first that is
	// not a class number, with its line), for errors that would otherwise name another label.
	NamedBecause string
}

// Regression reports whether the data set has regression targets rather than labels.
func (d *Dataset) Regression() bool { return d.Targets != nil }

// Row returns example i's input values (a view into X).
func (d *Dataset) Row(i int) []float32 { return d.X[i*d.Dim : (i+1)*d.Dim] }

// Validate checks that the slices and sizes agree.
func (d *Dataset) Validate() error {
	if d.N < 0 || d.Dim < 1 || len(d.X) != d.N*d.Dim {
		return fmt.Errorf("data %s: %d input values for %d examples of %d values", d.Name, len(d.X), d.N, d.Dim)
	}
	n := 1
	for _, s := range d.Shape {
		n *= s
	}
	if n != d.Dim || (len(d.Shape) != 1 && len(d.Shape) != 3) {
		return fmt.Errorf("data %s: shape %v does not hold %d values", d.Name, d.Shape, d.Dim)
	}
	if d.Targets != nil {
		if d.Outputs < 1 || len(d.Targets) != d.N*d.Outputs || d.Labels != nil {
			return fmt.Errorf("data %s: %d targets for %d examples of %d outputs", d.Name, len(d.Targets), d.N, d.Outputs)
		}
		return nil
	}
	if len(d.Labels) != d.N || d.Classes < 1 {
		return fmt.Errorf("data %s: %d labels for %d examples (%d classes)", d.Name, len(d.Labels), d.N, d.Classes)
	}
	for i, y := range d.Labels {
		if y < 0 || y >= d.Classes {
			return fmt.Errorf("data %s: label %d of example %d outside [0, %d)", d.Name, y, i, d.Classes)
		}
	}
	return nil
}

// Subset returns the examples with the given indices (copied), in that order.
func (d *Dataset) Subset(idx []int) (*Dataset, error) {
	out := &Dataset{Name: d.Name, N: len(idx), Dim: d.Dim, Shape: append([]int(nil), d.Shape...),
		Classes: d.Classes, Outputs: d.Outputs, Scale: d.Scale, ClassNames: d.ClassNames, NamedLabels: d.NamedLabels,
		NamedBecause: d.NamedBecause}
	out.X = make([]float32, 0, len(idx)*d.Dim)
	if d.Labels != nil {
		out.Labels = make([]int, 0, len(idx))
	}
	if d.Targets != nil {
		out.Targets = make([]float32, 0, len(idx)*d.Outputs)
	}
	for _, i := range idx {
		if i < 0 || i >= d.N {
			return nil, fmt.Errorf("data %s: subset index %d outside [0, %d)", d.Name, i, d.N)
		}
		out.X = append(out.X, d.Row(i)...)
		if d.Labels != nil {
			out.Labels = append(out.Labels, d.Labels[i])
		}
		if d.Targets != nil {
			out.Targets = append(out.Targets, d.Targets[i*d.Outputs:(i+1)*d.Outputs]...)
		}
	}
	return out, nil
}

// Head returns the first n examples (all of them when n ≤ 0 or n ≥ N).
func (d *Dataset) Head(n int) *Dataset {
	if n <= 0 || n >= d.N {
		return d
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	out, _ := d.Subset(idx) // indices are in range
	return out
}

// SelectClasses returns the examples whose label is in classes. With remap the labels are
// renumbered 0..len(classes)-1 in the order given (so that a network trained on classes 0–4 has
// five outputs); otherwise they keep their values. The result of remapping has len(classes)
// classes.
func (d *Dataset) SelectClasses(classes []int, remap bool) (*Dataset, error) {
	if d.Labels == nil {
		return nil, fmt.Errorf("data %s: class subsets need a classification data set", d.Name)
	}
	pos := map[int]int{}
	for i, c := range classes {
		if c < 0 || c >= d.Classes {
			return nil, fmt.Errorf("data %s: class %d outside [0, %d)", d.Name, c, d.Classes)
		}
		if _, dup := pos[c]; dup {
			return nil, fmt.Errorf("data %s: class %d listed twice", d.Name, c)
		}
		pos[c] = i
	}
	var idx []int
	for i, y := range d.Labels {
		if _, ok := pos[y]; ok {
			idx = append(idx, i)
		}
	}
	out, err := d.Subset(idx)
	if err != nil {
		return nil, err
	}
	out.Name = fmt.Sprintf("%s[classes %s]", d.Name, FormatClasses(classes))
	if remap {
		for i, y := range out.Labels {
			out.Labels[i] = pos[y]
		}
		out.Classes = len(classes)
		if d.ClassNames != nil {
			out.ClassNames = make([]string, len(classes))
			for i, c := range classes {
				out.ClassNames[i] = d.ClassNames[c]
			}
		}
	}
	return out, nil
}

// MaxClass is the largest class number ParseClasses accepts.
const MaxClass = 1<<16 - 1

// MatchClassNames renumbers d's labels by the class names a model records (names, in its
// output order): a CSV file's string labels are numbered in sorted order of the names that file
// holds, which need not be the order — or the set — of the training file's. Nothing changes when
// either side has no names, except that labels that were names (NamedLabels) and a model
// without names (names nil) are an error: a single label such as -1 in a column of class
// numbers makes the whole column names, and their sorted order would shift every label. A label
// the model does not know is an error naming it.
func (d *Dataset) MatchClassNames(names []string) error {
	if names == nil && d.NamedLabels {
		ex := d.ClassNames[:min(len(d.ClassNames), 3)]
		why := ""
		if d.NamedBecause != "" {
			why = " (" + d.NamedBecause + ")"
		}
		return fmt.Errorf("data %s: the labels are not all class numbers 0, 1, 2, …%s, so they are class names (%d names: %s, …), and the model records no class names to match them to", d.Name, why, len(d.ClassNames), clip.Q(strings.Join(ex, ", ")))
	}
	if d.ClassNames == nil || names == nil {
		return nil
	}
	idx := make(map[string]int, len(names))
	for i, n := range names {
		idx[n] = i
	}
	remap := make([]int, len(d.ClassNames))
	for i, n := range d.ClassNames {
		j, ok := idx[n]
		if !ok {
			why := ""
			if d.NamedBecause != "" {
				why = fmt.Sprintf(" (the labels are read as class names, not numbers, because %s)", d.NamedBecause)
			}
			return fmt.Errorf("data %s: class %s is not one of the model's %d classes%s", d.Name, clip.Q(n), len(names), why)
		}
		remap[i] = j
	}
	for i, l := range d.Labels {
		d.Labels[i] = remap[l]
	}
	d.ClassNames, d.Classes = slices.Clone(names), len(names)
	return nil
}

// ParseClasses parses a class list such as "0-4", "0,2,4" or "0-2,7" of classes 0 to MaxClass.
func ParseClasses(s string) ([]int, error) {
	var out []int
	seen := map[int]bool{}
	q := clip.Q(s)
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(strings.TrimSpace(lo))
		if err != nil || a < 0 {
			return nil, fmt.Errorf("classes %s: %s is not a class number or range", q, clip.Q(part))
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil || b < a {
				return nil, fmt.Errorf("classes %s: %s is not a range lo-hi", q, clip.Q(part))
			}
		}
		// Every class is at most MaxClass, so the list holds at most MaxClass+1 classes
		// whatever the number of ranges (a 3 KB list of ranges once expanded to a gigabyte).
		if b > MaxClass {
			return nil, fmt.Errorf("classes %s: class %d above %d", q, b, MaxClass)
		}
		for c := a; c <= b; c++ {
			if seen[c] {
				return nil, fmt.Errorf("classes %s: class %d listed twice", q, c)
			}
			seen[c] = true
			out = append(out, c)
		}
	}
	return out, nil
}

// FormatClasses writes a class list compactly ("0-4", "0,2,7-9").
func FormatClasses(cs []int) string {
	var b strings.Builder
	for i := 0; i < len(cs); {
		j := i
		for j+1 < len(cs) && cs[j+1] == cs[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		if j > i {
			fmt.Fprintf(&b, "%d-%d", cs[i], cs[j])
		} else {
			fmt.Fprintf(&b, "%d", cs[i])
		}
		i = j + 1
	}
	return b.String()
}

// Complement returns the classes in [0, n) that are not in cs, in increasing order.
func Complement(cs []int, n int) []int {
	in := map[int]bool{}
	for _, c := range cs {
		in[c] = true
	}
	var out []int
	for c := 0; c < n; c++ {
		if !in[c] {
			out = append(out, c)
		}
	}
	return out
}

// Split divides d into a first part with n−m examples and a second with m, after shuffling the
// example order with seed (a validation split). m must lie in [0, N].
func (d *Dataset) Split(m int, seed uint64) (*Dataset, *Dataset, error) {
	if m < 0 || m > d.N {
		return nil, nil, fmt.Errorf("data %s: cannot split off %d of %d examples", d.Name, m, d.N)
	}
	perm := rand.New(rand.NewPCG(seed, 0x5eed)).Perm(d.N)
	a, err := d.Subset(perm[:d.N-m])
	if err != nil {
		return nil, nil, err
	}
	b, err := d.Subset(perm[d.N-m:])
	if err != nil {
		return nil, nil, err
	}
	return a, b, nil
}
