package bnnconfig

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"io"
	"math"
	"strconv"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// Value is one validated config value: exactly one of the fields is
// meaningful, according to the key's type.
type Value struct {
	// Null is true for JSON null (Python None).
	Null bool
	// Num holds numbers (integers too).
	Num float64
	// IsInt reports that Num came from an integer literal.
	IsInt bool
	// Bool holds booleans.
	Bool bool
	// Str holds strings; IsString marks a string value.
	Str      string
	IsString bool
}

// Param is one key/value pair of a config object, in file order.
type Param struct {
	Key   string
	Value Value
}

// Entry is one entry of the "inference" object: the key it is matched on
// (a module name such as "0" or "features.3", or a class name such as
// "Linear") and its settings. A string entry ("Linear": "ffg") has
// Inference set and no Params.
type Entry struct {
	Key string
	// Inference is the entry's "inference" value; HasInference is false
	// when the entry has none.
	Inference    string
	HasInference bool
	// Params are the entry's other keys, in file order.
	Params []Param
}

// Config is a parsed bayesianize inference config, the keyword arguments
// of bnn.bayesianize_(net, **config).
type Config struct {
	// Global is set when "inference" is a string: every module uses it.
	Global string
	// Entries are the "inference" object's entries in file order (when
	// "inference" is an object).
	Entries []Entry
	// Defaults are the other top-level keys, bayesianize_'s
	// default_params, in file order.
	Defaults []Param
}

// ParseFile reads the config at path.
func ParseFile(path string) (*Config, error) {
	return readlimit.ParseFile("bnnconfig", path, 0, Parse)
}

// Parse parses a bayesianize inference config. Every key must be one that
// some bayesianize layer accepts (see Keys) with a value of the right JSON
// type; duplicate keys are refused.
func Parse(data []byte) (*Config, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	top, err := readObject(dec, "top level")
	if err != nil {
		return nil, fmt.Errorf("bnnconfig: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("bnnconfig: trailing data after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("bnnconfig: trailing data after the JSON object")
	}
	c := &Config{}
	haveInference := false
	for _, m := range top {
		if m.key == "inference" {
			haveInference = true
			switch v := m.val.(type) {
			case string:
				c.Global = v
				if v == "" {
					return nil, fmt.Errorf("bnnconfig: field \"inference\": empty string")
				}
			case []kv:
				for _, e := range v {
					entry, err := parseEntry(e)
					if err != nil {
						return nil, fmt.Errorf("bnnconfig: inference entry %s: %w", clip.Q(e.key), err)
					}
					c.Entries = append(c.Entries, entry)
				}
			default:
				return nil, fmt.Errorf("bnnconfig: field \"inference\" must be a string or an object, got %s", jsonType(m.val))
			}
			continue
		}
		p, err := param(m)
		if err != nil {
			return nil, fmt.Errorf("bnnconfig: top level: %w", err)
		}
		c.Defaults = append(c.Defaults, p)
	}
	if !haveInference {
		return nil, fmt.Errorf("bnnconfig: missing field \"inference\"")
	}
	return c, nil
}

func parseEntry(e kv) (Entry, error) {
	out := Entry{Key: e.key}
	switch v := e.val.(type) {
	case string:
		out.Inference, out.HasInference = v, true
		return out, nil
	case []kv:
		for _, f := range v {
			if f.key == "inference" {
				s, ok := f.val.(string)
				if !ok {
					return Entry{}, fmt.Errorf("field \"inference\" must be a string, got %s", jsonType(f.val))
				}
				out.Inference, out.HasInference = s, true
				continue
			}
			p, err := param(f)
			if err != nil {
				return Entry{}, err
			}
			out.Params = append(out.Params, p)
		}
		return out, nil
	}
	return Entry{}, fmt.Errorf("must be a string or an object, got %s", jsonType(e.val))
}

// param validates one key/value against the key table.
func param(f kv) (Param, error) {
	spec, ok := keySpecs[f.key]
	if !ok {
		return Param{}, fmt.Errorf("unknown key %s (not an argument of any bayesianize layer)", clip.Q(f.key))
	}
	v, err := convert(f.val, spec.typ)
	if err != nil {
		return Param{}, fmt.Errorf("field %s: %w", clip.Q(f.key), err)
	}
	if err := spec.dom.check(v); err != nil {
		return Param{}, fmt.Errorf("field %s: %w", clip.Q(f.key), err)
	}
	return Param{Key: f.key, Value: v}, nil
}

// MaxMagnitude bounds the config's scales and means (1e6): a prior or
// initial standard deviation, or a prior mean, beyond it is not a
// meaningful setting for a network's weights and makes the float32
// weights and activations computed from it overflow.
const MaxMagnitude = 1e6

// MinScale bounds the config's scales from below (1e-12): a standard deviation of 1e-40 (or
// 1e-300) is positive as a float64 but denormal (or 0) as the float32 the networks hold, and the
// trainer built it into a NaN or zero tensor the runtime refused without naming the config field;
// a prior standard deviation of 1e-20 made the float32 KL (μ²/σ² per weight) +Inf at the first
// step, blamed on the data.
const MinScale = 1e-12

// domain is the set of values a numeric config key may take.
type domain int

const (
	domAny   domain = iota // no constraint beyond the JSON type
	domReal                // finite, |x| ≤ MaxMagnitude (a mean)
	domScale               // finite, MinScale ≤ x ≤ MaxMagnitude (a standard deviation)
	domCap                 // finite, x ≥ 0 (an upper clamp; null for none)
)

// check validates a converted value against d; null and string values
// were checked by convert.
func (d domain) check(v Value) error {
	if v.Null || v.IsString {
		return nil
	}
	x := v.Num
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%g is not finite", x)
	}
	switch d {
	case domReal:
		if math.Abs(x) > MaxMagnitude {
			return fmt.Errorf("%g is beyond ±%g", x, MaxMagnitude)
		}
	case domScale:
		if !(x > 0) {
			return fmt.Errorf("%g is not positive (it is a standard deviation or scale)", x)
		}
		if x > MaxMagnitude {
			return fmt.Errorf("%g is larger than %g", x, MaxMagnitude)
		}
		if x < MinScale {
			return fmt.Errorf("%g is smaller than %g (a prior this narrow overflows the float32 KL; below about 1e-38 it is 0 in float32)", x, MinScale)
		}
	case domCap:
		if x < 0 {
			return fmt.Errorf("%g is negative (an upper clamp must be at least 0; use null for none)", x)
		}
	}
	return nil
}

// Value types of config keys.
const (
	tNum         = iota // number
	tNumOrNull          // number or null
	tInt                // integer
	tIntOrNull          // integer or null
	tBool               // boolean
	tString             // string
	tNumOrString        // number or string (FCG prior_weight_sd "neal")
)

func convert(v interface{}, typ int) (Value, error) {
	if v == nil {
		if typ == tNumOrNull || typ == tIntOrNull {
			return Value{Null: true}, nil
		}
		return Value{}, fmt.Errorf("null is not allowed")
	}
	switch x := v.(type) {
	case bool:
		if typ == tBool {
			return Value{Bool: x}, nil
		}
	case string:
		if typ == tString || typ == tNumOrString {
			return Value{Str: x, IsString: true}, nil
		}
	case json.Number:
		isInt := true
		if _, err := strconv.ParseInt(string(x), 10, 64); err != nil {
			isInt = false
		}
		f, err := x.Float64()
		if err != nil {
			return Value{}, fmt.Errorf("bad number %s", clip.S(string(x)))
		}
		switch typ {
		case tNum, tNumOrNull, tNumOrString:
			return Value{Num: f, IsInt: isInt}, nil
		case tInt, tIntOrNull:
			if !isInt || f > 1<<31-1 || f < -(1<<31) {
				return Value{}, fmt.Errorf("want an integer, got %s", clip.S(string(x)))
			}
			return Value{Num: f, IsInt: true}, nil
		}
	}
	want := map[int]string{tNum: "a number", tNumOrNull: "a number or null", tInt: "an integer",
		tIntOrNull: "an integer or null", tBool: "a boolean", tString: "a string", tNumOrString: "a number or a string"}[typ]
	return Value{}, fmt.Errorf("want %s, got %s", want, jsonType(v))
}

func jsonType(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case []kv:
		return "an object"
	case []interface{}:
		return "an array"
	}
	return fmt.Sprintf("%T", v)
}

// kv is one member of a JSON object read in order.
type kv struct {
	key string
	val interface{} // nil, bool, string, json.Number, []kv, []interface{}
}

// maxDepth bounds nesting of the config JSON.
const maxDepth = 16

// readObject reads a JSON object preserving member order and refusing
// duplicate keys.
func readObject(dec *json.Decoder, where string) ([]kv, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, noEOF(err))
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("%s: want a JSON object", where)
	}
	return readMembers(dec, where, 1)
}

func readMembers(dec *json.Decoder, where string, depth int) ([]kv, error) {
	if depth > maxDepth {
		return nil, fmt.Errorf("%s: nesting too deep", where)
	}
	var out []kv
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, noEOF(err))
		}
		key, ok := tok.(string)
		if !ok {
			return nil, fmt.Errorf("%s: object key is not a string", where)
		}
		if seen[key] {
			return nil, fmt.Errorf("%s: duplicate key %s", where, clip.Q(key))
		}
		seen[key] = true
		val, err := readValue(dec, strconv.Quote(key), depth)
		if err != nil {
			return nil, err
		}
		out = append(out, kv{key, val})
	}
	if _, err := dec.Token(); err != nil { // closing delimiter
		return nil, fmt.Errorf("%s: %w", where, noEOF(err))
	}
	if out == nil {
		out = []kv{}
	}
	return out, nil
}

func readValue(dec *json.Decoder, where string, depth int) (interface{}, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", where, noEOF(err))
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return readMembers(dec, where, depth+1)
		case '[':
			if depth+1 > maxDepth {
				return nil, fmt.Errorf("%s: nesting too deep", where)
			}
			arr := []interface{}{}
			for dec.More() {
				v, err := readValue(dec, where, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("%s: %w", where, noEOF(err))
			}
			return arr, nil
		}
		return nil, fmt.Errorf("%s: unexpected %v", where, t)
	}
	return tok, nil
}

// noEOF turns io.EOF inside a JSON value into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
