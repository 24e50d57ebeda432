// Package modeltest holds helpers for tests that read model files. It imports format and
// runtime, so their own tests cannot use it.
package modeltest

import (
	"encoding/json"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// Open opens the model file at path; it is closed when the test ends.
func Open(t testing.TB, path string) *format.File {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// Tensor reads tensor name of f as float32 values (a copy, valid after f is closed).
func Tensor(t testing.TB, f *format.File, name string) runtime.Tensor {
	t.Helper()
	tn, err := f.Tensor(name)
	if err != nil {
		t.Fatal(err)
	}
	v, err := tn.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return runtime.Tensor{Shape: tn.Shape(), Data: append([]float32(nil), v...)}
}

// Spec parses f's model description (its meta blob).
func Spec(t testing.TB, f *format.File) *runtime.Spec {
	t.Helper()
	meta, err := f.Blob(runtime.MetaBlob)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := runtime.ParseSpec(meta)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// AddSpec adds spec (a runtime.Spec or what marshals like one) to w as the model's meta blob.
func AddSpec(t testing.TB, w *format.Writer, spec any) {
	t.Helper()
	meta, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob(runtime.MetaBlob, meta, false); err != nil {
		t.Fatal(err)
	}
}

// Save writes w's model file to path.
func Save(t testing.TB, w *format.Writer, path string) {
	t.Helper()
	if err := w.WriteFile(path, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Rewrite copies the model file src to dst with section name replaced — a tensor's values and
// shape by tensor's result, a blob's bytes by blob's (the other one nil) — and every other section
// as it is: a doctored file for tests of what a reader refuses. It fails t if src has no section
// name.
func Rewrite(t testing.TB, src, dst, name string, tensor func(data []float32, shape []int) ([]float32, []int), blob func([]byte) []byte) {
	t.Helper()
	f := Open(t, src)
	w := format.NewWriter()
	found := false
	for _, s := range f.Sections() {
		switch {
		case s.Name == name && tensor != nil:
			tn := Tensor(t, f, name)
			data, shape := tensor(tn.Data, tn.Shape)
			if _, err := w.AddTensor(name, shape, data, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
			found = true
		case s.Name == name && blob != nil:
			b, err := f.Blob(name)
			if err != nil {
				t.Fatal(err)
			}
			if err := w.AddBlob(name, blob(b), false); err != nil {
				t.Fatal(err)
			}
			found = true
		default:
			if err := w.CopySection(f, s.Name); err != nil {
				t.Fatal(err)
			}
		}
	}
	if !found {
		t.Fatalf("%s has no section %q", src, name)
	}
	Save(t, w, dst)
}
