// Package strictjson makes the JSON this project reads mean one thing: no object may name a
// member twice. encoding/json keeps the last of repeated names and matches names to struct
// fields ignoring case, so a settings file holding {"epochs": 1, "Epochs": 300} trains for 300
// epochs while a person, or another reader that keeps the first, sees 1.
//
// The check follows the type the JSON is decoded into: an object decoded into a struct may not
// name a field twice in any case (as encoding/json matches them); one decoded into a map, an
// interface or a type with its own UnmarshalJSON may not repeat a key exactly (map keys are
// case-sensitive: "Linear" and "linear" are two keys); a json.RawMessage is opaque and not
// looked into (whoever decodes it later checks it then). The readers of model files, settings
// and architectures decode with Decode.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/internal/clip"
)

// MaxDepth bounds the nesting of objects and arrays the check follows (encoding/json's own
// limit): deeper input is an error.
const MaxDepth = 10000

// Decode decodes data, which must hold one JSON value and nothing but white space after it,
// into v. A member that no field of v takes, a repeated name (see the package documentation)
// and anything after the value are errors; the last says "trailing data after the JSON object"
// and where.
func Decode(data []byte, v any) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return errors.New("empty: no JSON value (EOF)")
	}
	if err := Check(data, v); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	// Token, not More: More reports no further value at a stray ']' or '}' ({"a":1}]).
	if _, err := dec.Token(); err != io.EOF {
		return fmt.Errorf("trailing data after the JSON object at byte %d", dec.InputOffset())
	}
	return nil
}

// Check returns an error naming the first repeated name in data's first JSON value, read as it
// would be decoded into v (see the package documentation), without decoding it. Malformed JSON
// is not reported (nil): the decoder that follows reports it with its position. Members that no
// field of a struct takes are skipped unexamined, so the memory Check holds is at most that of
// the maps the decoder builds; its time is linear in len(data).
func Check(data []byte, v any) error {
	c := checker{dec: json.NewDecoder(bytes.NewReader(data)), fields: map[reflect.Type]map[string]field{}}
	c.dec.UseNumber() // no float parsing of values that are only walked
	err := c.value(reflect.TypeOf(v), 0)
	if errors.Is(err, errMalformed) {
		return nil
	}
	return err
}

// errMalformed stops the walk at JSON the decoder will refuse with a better message.
var errMalformed = errors.New("malformed JSON")

var (
	rawType         = reflect.TypeFor[json.RawMessage]()
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textType        = reflect.TypeFor[encoding.TextUnmarshaler]()
)

type field struct {
	name string       // as the struct declares it
	typ  reflect.Type // nil: a field the check does not look into
}

type checker struct {
	dec    *json.Decoder
	fields map[reflect.Type]map[string]field // per struct type, by Fold(name)
}

// value checks the next JSON value, to be decoded into t (nil: into an interface).
func (c *checker) value(t reflect.Type, depth int) error {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t != nil && !holdsObjects(t, 0) {
		// A RawMessage, or a type with no object inside: skip the value as bytes (a wrong value
		// is the decoder's error).
		return c.skip()
	}
	tok, err := c.dec.Token()
	if err != nil {
		return errMalformed
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar
	}
	if depth == MaxDepth {
		return fmt.Errorf("JSON nested deeper than %d objects and arrays at byte %d", MaxDepth, c.dec.InputOffset())
	}
	if d == '[' {
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) && !custom(t) {
			elem = t.Elem()
		}
		for c.dec.More() {
			if err := c.value(elem, depth+1); err != nil {
				return err
			}
		}
		return c.end()
	}
	var fields map[string]field
	var elem reflect.Type // a map's values
	switch {
	case t == nil || custom(t):
		t = nil
	case t.Kind() == reflect.Struct:
		fields = c.structFields(t)
	case t.Kind() == reflect.Map:
		elem = t.Elem()
	default:
		t = nil
	}
	seen := map[string]string{}
	for c.dec.More() {
		tok, err := c.dec.Token()
		if err != nil {
			return errMalformed
		}
		name, _ := tok.(string)
		key, sub := name, elem
		if fields != nil {
			f, ok := fields[Fold(name)]
			if !ok {
				// No field takes it: the decoder refuses it (DisallowUnknownFields) or skips it.
				if err := c.skip(); err != nil {
					return err
				}
				continue
			}
			key, sub = f.name, f.typ
		}
		if first, ok := seen[key]; ok {
			if first == name {
				return fmt.Errorf("member %s appears twice in one JSON object (byte %d)", clip.Q(name), c.dec.InputOffset())
			}
			return fmt.Errorf("member %s repeats %s in one JSON object (names are matched ignoring case; byte %d)",
				clip.Q(name), clip.Q(first), c.dec.InputOffset())
		}
		seen[key] = name
		if err := c.value(sub, depth+1); err != nil {
			return err
		}
	}
	return c.end()
}

// skip passes over the next value, building nothing whatever it holds.
func (c *checker) skip() error {
	var sk skipped
	if c.dec.Decode(&sk) != nil {
		return errMalformed
	}
	return nil
}

// skipped is a value's destination that keeps nothing: the decoder scans the value and hands
// its bytes (in its own buffer) to UnmarshalJSON, which drops them.
type skipped struct{}

func (skipped) UnmarshalJSON([]byte) error { return nil }

// end reads the closing delimiter of an object or array.
func (c *checker) end() error {
	if _, err := c.dec.Token(); err != nil {
		return errMalformed
	}
	return nil
}

// custom reports whether t (or *t) decodes itself: its objects are compared as a map's.
func custom(t reflect.Type) bool {
	return t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
		t.Implements(textType) || reflect.PointerTo(t).Implements(textType)
}

// holdsObjects reports whether a value of type t may hold a JSON object that the check must
// look into: not for a RawMessage, nor for numbers, strings, booleans and lists of them. (A
// type that nests more than 32 lists deep, or in itself, as type T []T, counts as holding.)
func holdsObjects(t reflect.Type, depth int) bool {
	if t == rawType {
		return false
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Interface:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return depth > 32 || custom(t) || holdsObjects(t.Elem(), depth+1)
	}
	return custom(t)
}

// structFields returns the JSON members of struct type t by Fold(name), as encoding/json names
// them: the tag's name or the field's, fields of embedded structs promoted (the shallower
// first), "-" and unexported fields left out.
func (c *checker) structFields(t reflect.Type) map[string]field {
	if fs, ok := c.fields[t]; ok {
		return fs
	}
	fs := map[string]field{}
	c.fields[t] = fs
	collectFields(t, fs, 0)
	return fs
}

func collectFields(t reflect.Type, fs map[string]field, depth int) {
	if depth > 16 {
		return
	}
	var embedded []reflect.Type
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := fs[Fold(name)]; !ok {
			fs[Fold(name)] = field{name: name, typ: f.Type}
		}
	}
	for _, e := range embedded { // promoted fields after the struct's own
		collectFields(e, fs, depth+1)
	}
}

// Fold maps s to one representative of its case-folding class: every rune to the smallest rune
// of its unicode.SimpleFold orbit, so Fold(a) == Fold(b) exactly when strings.EqualFold(a, b) —
// the names encoding/json matches to the same struct field.
func Fold(s string) string {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	b := make([]rune, 0, len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = append(b, m)
	}
	return string(b)
}
