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
