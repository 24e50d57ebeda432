// Package strictjson makes the JSON this project reads mean one thing: no object may name a
// member twice. encoding/json keeps the last of repeated names and matches names to struct
// fields ignoring case, so a settings file holding {"epochs": 1, "Epochs": 300} trains for 300
// epochs while a person, or another reader that keeps the first, sees 1. The readers of model
// files, settings and architectures decode with Decode, or call CheckNames before their own
// decoding.
package strictjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/internal/clip"
)

// MaxDepth bounds the nesting of objects and arrays CheckNames follows (encoding/json's own
// limit): deeper input is an error.
const MaxDepth = 10000

// Decode decodes data, which must hold one JSON value and nothing but white space after it,
// into v. A member that no field of v takes, a name repeated within an object (CheckNames) and
// anything after the value are errors; the last says "trailing data after the JSON object" and
// where.
func Decode(data []byte, v any) error {
	if err := CheckNames(data); err != nil {
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

// CheckNames returns an error naming the first object member whose name another member of the
// same object already has, at any depth. Names are compared as encoding/json compares a name
// with a struct field's — under Unicode simple case folding, so "Epochs" repeats "epochs" —
// which also refuses names of a map's keys that differ only in case. Malformed JSON is not
// reported here (nil): the decoder that follows reports it with its position. The work and
// memory are linear in len(data).
func CheckNames(data []byte) error {
	type frame struct {
		object, wantName bool
		names            map[string]string // folded name → the name as written
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // no float parsing of values that are only skipped
	var stack []frame
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error the decoder reports
		}
		var top *frame
		if len(stack) > 0 {
			top = &stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			if t == '}' || t == ']' {
				stack = stack[:len(stack)-1]
				continue
			}
			if top != nil && top.object {
				top.wantName = true // this object or array is the member's value
			}
			if len(stack) == MaxDepth {
				return fmt.Errorf("JSON nested deeper than %d objects and arrays at byte %d", MaxDepth, dec.InputOffset())
			}
			stack = append(stack, frame{object: t == '{', wantName: t == '{'})
		case string:
			if top == nil || !top.object || !top.wantName {
				if top != nil && top.object {
					top.wantName = true
				}
				continue
			}
			top.wantName = false
			key := Fold(t)
			if first, ok := top.names[key]; ok {
				if first == t {
					return fmt.Errorf("member %s appears twice in one JSON object (byte %d)", clip.Q(t), dec.InputOffset())
				}
				return fmt.Errorf("member %s repeats %s in one JSON object (names are matched ignoring case; byte %d)",
					clip.Q(t), clip.Q(first), dec.InputOffset())
			}
			if top.names == nil {
				top.names = map[string]string{}
			}
			top.names[key] = t
		default:
			if top != nil && top.object {
				top.wantName = true
			}
		}
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
