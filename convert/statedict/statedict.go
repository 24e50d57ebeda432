// Package statedict gives one in-memory form to PyTorch state_dicts read
// from either a torch.save zip (.pt, via convert/torchpt) or a
// .safetensors file (via convert/safetensors).
//
// Values are decoded into exactly one of F32 (dtypes F32, F16, BF16 — the
// half types widen exactly), F64 (F64) or I64 (I64, I32, I16, I8, U8,
// BOOL), so a .pt file and its .safetensors export give identical Tensor
// values.
//
// Scalars: a 0-dimensional tensor (shape ()) is represented with Shape
// [1] and Scalar set. Exporters commonly write PyTorch scalars to
// safetensors as shape [1] (the bayesianize fixtures do, for _lamda), so
// this normalisation makes both formats give the same Shape; Scalar keeps
// what the file said.
package statedict

import (
	"bytes"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/convert/torchpt"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// Tensor is one decoded entry of a state_dict.
type Tensor struct {
	// Name is the state_dict key, e.g. "1.z_row".
	Name string
	// DType is the element type in the source file, as a safetensors
	// dtype string ("F32", "F16", "I64", ...).
	DType string
	// Shape is the tensor shape; a 0-d scalar has Shape [1] (see Scalar).
	Shape []int
	// Scalar is true if the source tensor was 0-dimensional.
	Scalar bool
	// F32 holds the values of F32, F16 and BF16 tensors.
	F32 []float32
	// F64 holds the values of F64 tensors.
	F64 []float64
	// I64 holds the values of integer and BOOL tensors.
	I64 []int64
}

// Len returns the number of elements.
func (t *Tensor) Len() int {
	switch {
	case t.F32 != nil:
		return len(t.F32)
	case t.F64 != nil:
		return len(t.F64)
	}
	return len(t.I64)
}

// Float64s returns the values widened to float64 (integers converted,
// exact for magnitudes up to 2^53).
func (t *Tensor) Float64s() []float64 {
	switch {
	case t.F32 != nil:
		out := make([]float64, len(t.F32))
		for i, v := range t.F32 {
			out[i] = float64(v)
		}
		return out
	case t.F64 != nil:
		return append([]float64(nil), t.F64...)
	}
	out := make([]float64, len(t.I64))
	for i, v := range t.I64 {
		out[i] = float64(v)
	}
	return out
}

// StateDict is an ordered collection of tensors.
type StateDict struct {
	// Tensors in the source's key order (the state_dict order for .pt,
	// the data order for .safetensors).
	Tensors []Tensor
	// Metadata holds the safetensors __metadata__ (empty for .pt).
	Metadata map[string]string
	index    map[string]int
}

// Get returns the tensor called name.
func (s *StateDict) Get(name string) (*Tensor, bool) {
	i, ok := s.index[name]
	if !ok {
		return nil, false
	}
	return &s.Tensors[i], true
}

// Names returns the keys in order.
func (s *StateDict) Names() []string {
	out := make([]string, len(s.Tensors))
	for i := range s.Tensors {
		out[i] = s.Tensors[i].Name
	}
	return out
}

// SortedNames returns the keys sorted lexicographically.
func (s *StateDict) SortedNames() []string {
	out := s.Names()
	sort.Strings(out)
	return out
}

// Load reads a state_dict from path. Files starting with a zip signature
// are read as torch.save archives; anything else as safetensors (so a
// legacy non-zip .pt gets a clear error from convert/torchpt when its
// extension is .pt/.pth/.bin).
func Load(path string) (*StateDict, error) {
	return LoadLimits(path, Limits{})
}

// Limits are the resource limits of the two readers; zero fields take
// the readers' defaults (torchpt.DefaultLimits, safetensors.DefaultLimits).
type Limits struct {
	Torch       torchpt.Limits
	Safetensors safetensors.Limits
}

// LoadLimits is Load within lim.
func LoadLimits(path string, lim Limits) (*StateDict, error) {
	ext := strings.ToLower(filepath.Ext(path))
	return readlimit.ParseFile("statedict", path, 0, func(b []byte) (*StateDict, error) {
		return ParseLimits(b, ext, lim)
	})
}

// Parse decodes a state_dict held in memory. ext is the file extension
// (".pt", ".safetensors", ...) used only when the content is neither a zip
// nor plainly safetensors.
func Parse(data []byte, ext string) (*StateDict, error) {
	return ParseLimits(data, ext, Limits{})
}

// ParseLimits is Parse within lim.
func ParseLimits(data []byte, ext string, lim Limits) (*StateDict, error) {
	var ts []safetensors.Tensor
	md := map[string]string{}
	switch {
	case torchpt.IsZip(data) || ext == ".pt" || ext == ".pth" || ext == ".bin" || ext == ".ckpt":
		var err error
		if ts, err = torchpt.ParseLimits(data, lim.Torch); err != nil {
			return nil, err
		}
	default:
		f, err := safetensors.ParseLimits(data, lim.Safetensors)
		if err != nil {
			return nil, err
		}
		ts, md = f.Tensors, f.Metadata
	}
	return FromTensors(ts, md)
}

// FromTensors decodes raw tensors (as returned by the safetensors and
// torchpt readers) into a StateDict, keeping their order.
func FromTensors(ts []safetensors.Tensor, metadata map[string]string) (*StateDict, error) {
	sd := &StateDict{Tensors: make([]Tensor, 0, len(ts)), Metadata: metadata, index: map[string]int{}}
	if sd.Metadata == nil {
		sd.Metadata = map[string]string{}
	}
	for i := range ts {
		t, err := decode(&ts[i])
		if err != nil {
			return nil, fmt.Errorf("statedict: %w", err)
		}
		if _, dup := sd.index[t.Name]; dup {
			return nil, fmt.Errorf("statedict: duplicate key %s", clip.Q(t.Name))
		}
		sd.index[t.Name] = len(sd.Tensors)
		sd.Tensors = append(sd.Tensors, t)
	}
	return sd, nil
}

func decode(r *safetensors.Tensor) (Tensor, error) {
	t := Tensor{Name: r.Name, DType: string(r.DType), Shape: append([]int{}, r.Shape...)}
	if len(t.Shape) == 0 {
		t.Shape, t.Scalar = []int{1}, true
	}
	var err error
	switch r.DType {
	case safetensors.F32, safetensors.F16, safetensors.BF16:
		t.F32, err = r.Float32s()
	case safetensors.F64:
		t.F64, err = r.Float64s()
	default:
		t.I64, err = r.Int64s()
	}
	if err != nil {
		return Tensor{}, err
	}
	return t, nil
}

// Equal reports whether a and b have the same names in the same order,
// the same dtypes and shapes, and bit-identical values. If not, the error
// describes the first difference. Metadata and Scalar are not compared.
func Equal(a, b *StateDict) error {
	if len(a.Tensors) != len(b.Tensors) {
		return fmt.Errorf("%d tensors vs %d", len(a.Tensors), len(b.Tensors))
	}
	for i := range a.Tensors {
		x, y := &a.Tensors[i], &b.Tensors[i]
		if x.Name != y.Name {
			return fmt.Errorf("tensor %d: name %s vs %s", i, clip.Q(x.Name), clip.Q(y.Name))
		}
		if x.DType != y.DType || fmt.Sprint(x.Shape) != fmt.Sprint(y.Shape) {
			return fmt.Errorf("tensor %s: %s%v vs %s%v", clip.Q(x.Name), x.DType, x.Shape, y.DType, y.Shape)
		}
		if !bytes.Equal(bitsOf(x), bitsOf(y)) {
			return fmt.Errorf("tensor %s: values differ", clip.Q(x.Name))
		}
	}
	return nil
}

// bitsOf returns the exact bit patterns of a tensor's values.
func bitsOf(t *Tensor) []byte {
	var r safetensors.Tensor
	var err error
	switch {
	case t.F32 != nil:
		r, err = safetensors.NewF32(t.Name, []int{len(t.F32)}, t.F32)
	case t.F64 != nil:
		r, err = safetensors.NewF64(t.Name, []int{len(t.F64)}, t.F64)
	default:
		r, err = safetensors.NewI64(t.Name, []int{len(t.I64)}, t.I64)
	}
	if err != nil {
		return nil
	}
	return r.Data
}
