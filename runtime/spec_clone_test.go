package runtime_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestSpecClone: Spec.Clone shares no slice, pointer or JSON text with the original, however
// deep (residual blocks, posteriors' optional caps, the FA and global sections) — checked by a
// walk over every field, so that a field added later cannot be missed — and equals it; a
// Model's Spec() is such a copy, and New keeps one of the Spec it is given: editing either left
// the model's description (and its validation of a deployment) following the edit.
func TestSpecClone(t *testing.T) {
	one, two := 1.0, 2.0
	post := &runtime.PosteriorSpec{Kind: "inducing", MaxLamda: &one, MaxSDU: &two, MaxSD: &one}
	s := runtime.Spec{InputShape: []int{1, 4}, Info: json.RawMessage(`{"a":1}`),
		FA: &runtime.FASpec{Dim: 3, Rank: 1}, GlobalU: post,
		Layers: []runtime.LayerSpec{{Name: "b", Op: runtime.OpResidual,
			Body:     []runtime.LayerSpec{{Name: "b.0", Op: runtime.OpLinear, In: 4, Out: 4, Posterior: post}},
			Shortcut: []runtime.LayerSpec{{Name: "b.s", Op: runtime.OpLinear, In: 4, Out: 4}}}}}
	c := s.Clone()
	if !reflect.DeepEqual(s, c) {
		t.Fatalf("clone differs:\n%+v\n%+v", s, c)
	}
	shared := 0
	var walk func(a, b reflect.Value, path string)
	walk = func(a, b reflect.Value, path string) {
		switch a.Kind() {
		case reflect.Pointer:
			if a.IsNil() {
				return
			}
			if a.Pointer() == b.Pointer() {
				t.Errorf("%s: pointer shared", path)
				shared++
			}
			walk(a.Elem(), b.Elem(), path)
		case reflect.Slice:
			if a.Len() > 0 && a.Pointer() == b.Pointer() {
				t.Errorf("%s: slice shared", path)
				shared++
			}
			for i := range a.Len() {
				walk(a.Index(i), b.Index(i), path+"[]")
			}
		case reflect.Struct:
			for i := range a.NumField() {
				walk(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		case reflect.Map:
			t.Errorf("%s: a map in Spec: Clone must copy it", path)
		}
	}
	walk(reflect.ValueOf(s), reflect.ValueOf(c), "Spec")

	spec := mlpSpec()
	m, err := runtime.New(spec, runtime.MemorySource{Tensors: randomTensors(spec, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want := append([]int(nil), spec.InputShape...)
	spec.InputShape[0] = 99 // the caller's Spec, after New
	got := m.Spec()
	got.InputShape[0] = 77 // the copy Spec() returned
	if again := m.Spec(); !reflect.DeepEqual(again.InputShape, want) {
		t.Errorf("the model's input shape is %v after edits of the caller's Spec and of a copy, want %v", again.InputShape, want)
	}
}
