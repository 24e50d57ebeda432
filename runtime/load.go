package runtime

import (
	"fmt"

	"github.com/edgebnn/edgebnn/format"
)

// MetaBlob is the name of the model file's blob section holding the Spec as JSON.
const MetaBlob = "meta"

// Load opens a model file written by the converter (docs/FORMAT.md), validates it and builds the
// Model. Dense float32 tensors stay in the memory-mapped file; Close the Model to release it.
func Load(path string) (*Model, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	m, err := FromFile(f)
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
func LoadBytes(data []byte) (*Model, error) {
	f, err := format.Decode(data)
	if err != nil {
		return nil, err
	}
	return FromFile(f)
}

// FromFile builds a Model from an open model file. The file must stay open while the Model is
// used.
func FromFile(f *format.File) (*Model, error) {
	meta, err := f.Blob(MetaBlob)
	if err != nil {
		return nil, fmt.Errorf("runtime: reading the model description: %w", err)
	}
	spec, err := ParseSpec(meta)
	if err != nil {
		return nil, err
	}
	m, err := New(spec, fileSource{f})
	if err != nil {
		return nil, err
	}
	if err := m.loadDeploy(f); err != nil {
		return nil, err
	}
	return m, nil
}

// fileSource reads tensors from a model file.
type fileSource struct{ f *format.File }

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
