package runtime

import (
	"fmt"

	"github.com/edgebnn/edgebnn/format"
)

// MetaBlob is the name of the model file's blob section holding the Spec as JSON.
const MetaBlob = "meta"

// LoadOptions tune how a model file becomes a Model. The zero value is what Load does.
type LoadOptions struct {
	// KeepF16 keeps the fp16 weights of deterministic layers (a network's, an Ensemble-W's
	// members') as the file stores them — in the memory-mapped file, or one fp16 copy of a
	// compressed section — and widens a layer's weights into the predictor's scratch each time
	// the layer runs, instead of decoding them to float32 at load: their memory halves, and each
	// forward pays one conversion per weight (small beside a convolution's multiply-adds, about
	// as much as the product itself for a fully connected layer applied to a single input).
	// Predictions are bit-identical to Load's. Other tensors, and float32 files, are unaffected.
	KeepF16 bool
	// NoMmap reads the file into memory instead of mapping it (format.ReadOptions.NoMmap): the
	// Model then costs the file's size in memory but no longer depends on the file, which may be
	// overwritten or truncated in place. A mapped file must only be replaced by rename: pages of
	// a file truncated under the mapping fault, and the fault (SIGBUS) ends the process.
	NoMmap bool
}

// Load opens a model file written by the converter (docs/FORMAT.md), validates it and builds the
// Model. Dense float32 tensors stay in the memory-mapped file; Close the Model to release it.
func Load(path string) (*Model, error) { return LoadWith(path, LoadOptions{}) }

// LoadWith is Load with options.
func LoadWith(path string, opt LoadOptions) (*Model, error) {
	f, err := format.OpenWith(path, format.ReadOptions{NoMmap: opt.NoMmap})
	if err != nil {
		return nil, err
	}
	m, err := FromFileWith(f, opt)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m.closer = f
	return m, nil
}

// LoadBytes builds a Model from the bytes of a model file — one embedded in the program with
// go:embed, received over a network or read by other means — validating them as Load does. Dense
// float32 tensors are used in place, so data must stay unmodified while the Model is used (an
// embedded file's bytes are read-only). Close releases nothing for such a Model but is allowed.
func LoadBytes(data []byte) (*Model, error) { return LoadBytesWith(data, LoadOptions{}) }

// LoadBytesWith is LoadBytes with options; with KeepF16 the fp16 weights are used in place too.
func LoadBytesWith(data []byte, opt LoadOptions) (*Model, error) {
	f, err := format.Decode(data)
	if err != nil {
		return nil, err
	}
	return FromFileWith(f, opt)
}

// FromFile builds a Model from an open model file. The file must stay open while the Model is
// used; the caller closes it (after the Model's Close, which does not).
func FromFile(f *format.File) (*Model, error) { return FromFileWith(f, LoadOptions{}) }

// FromFileWith is FromFile with options.
func FromFileWith(f *format.File, opt LoadOptions) (*Model, error) {
	meta, err := f.Blob(MetaBlob)
	if err != nil {
		return nil, fmt.Errorf("runtime: reading the model description: %w", err)
	}
	spec, err := ParseSpec(meta)
	if err != nil {
		return nil, err
	}
	m, err := New(spec, fileSource{f: f, keep16: opt.KeepF16})
	if err != nil {
		return nil, err
	}
	if err := m.loadDeploy(f); err != nil {
		return nil, err
	}
	return m, nil
}

// fileSource reads tensors from a model file; with keep16 it also hands out dense fp16 tensors
// as they are stored (float16Source).
type fileSource struct {
	f      *format.File
	keep16 bool
}

// float16 implements float16Source.
func (s fileSource) float16(name string) ([]uint16, []int, bool, error) {
	if !s.keep16 {
		return nil, nil, false, nil
	}
	t, err := s.f.Tensor(name)
	if err != nil || t.Encoding() != format.F16 {
		return nil, nil, false, nil // not there or not fp16: Tensor reads (or reports) it
	}
	v, err := t.Float16s()
	if err != nil {
		return nil, nil, false, err
	}
	return v, t.Shape(), true, nil
}

func (s fileSource) Tensor(name string) ([]float32, []int, error) {
	t, err := s.f.Tensor(name)
	if err != nil {
		if !s.has(name) {
			return nil, nil, fmt.Errorf("%q: %w", name, ErrNoTensor)
		}
		return nil, nil, err
	}
	data, err := t.Float32s()
	if err != nil {
		return nil, nil, err
	}
	return data, t.Shape(), nil
}

// Blob implements BlobSource.
func (s fileSource) Blob(name string) ([]byte, error) {
	b, err := s.f.Blob(name)
	if err != nil && !s.hasBlob(name) {
		return nil, fmt.Errorf("%q: %w", name, ErrNoTensor)
	}
	return b, err
}

func (s fileSource) hasBlob(name string) bool {
	for _, sec := range s.f.Sections() {
		if sec.Name == name {
			return true
		}
	}
	return false
}

func (s fileSource) has(name string) bool {
	for _, n := range s.f.Tensors() {
		if n == name {
			return true
		}
	}
	return false
}
