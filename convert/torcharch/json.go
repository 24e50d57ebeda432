package torcharch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/strictjson"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// ParseJSON reads the JSON architecture format (see the package
// documentation): {"layers": [{"name": ..., "type": ..., args...}, ...]}.
// Unknown fields, wrong JSON types and missing required arguments are
// errors naming the layer and the field.
func ParseJSON(r io.Reader) ([]Module, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("torcharch: json: %w", err)
	}
	var doc struct {
		Layers *[]json.RawMessage `json:"layers"`
	}
	if err := strictjson.Decode(data, &doc); err != nil {
		return nil, fmt.Errorf("torcharch: json: %w", clip.Error(err))
	}
	if doc.Layers == nil {
		return nil, fmt.Errorf("torcharch: json: missing \"layers\"")
	}
	if n := len(*doc.Layers); n > MaxModules {
		return nil, fmt.Errorf("torcharch: json: %d layers, more than %d", n, MaxModules)
	}
	mods := make([]Module, 0, len(*doc.Layers))
	seen := map[string]bool{}
	for i, raw := range *doc.Layers {
		m, err := parseJSONLayer(raw)
		if err != nil {
			return nil, fmt.Errorf("torcharch: json: layers[%d]: %w", i, err)
		}
		if m.Name == "" && len(*doc.Layers) > 1 {
			// Only a network of one bare module (as ParseRepr reads the
			// print of a single leaf module) has the empty name.
			return nil, fmt.Errorf("torcharch: json: layers[%d]: field \"name\" must be a non-empty string", i)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("torcharch: json: layers[%d]: duplicate name %s", i, clip.Q(m.Name))
		}
		seen[m.Name] = true
		mods = append(mods, m)
	}
	return mods, nil
}

// ParseJSONFile reads the JSON architecture at path.
func ParseJSONFile(path string) ([]Module, error) {
	return readlimit.ParseFile("torcharch", path, 0, func(b []byte) ([]Module, error) {
		return ParseJSON(bytes.NewReader(b))
	})
}

func parseJSONLayer(raw json.RawMessage) (Module, error) {
	var obj map[string]interface{}
	if err := strictjson.Check(raw, &obj); err != nil {
		return Module{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&obj); err != nil {
		return Module{}, clip.Error(err)
	}
	if obj == nil {
		return Module{}, fmt.Errorf("layer is not an object")
	}
	name, ok := obj["name"].(string)
	if !ok {
		return Module{}, fmt.Errorf("field \"name\" must be a string")
	}
	typ, ok := obj["type"].(string)
	if !ok {
		return Module{}, fmt.Errorf("layer %s: field \"type\" must be a string", clip.Q(name))
	}
	if _, known := specs[typ]; !known {
		return Module{}, fmt.Errorf("layer %s: unknown module type %s", clip.Q(name), clip.Q(typ))
	}
	var kw []kwArg
	for k, v := range obj {
		if k == "name" || k == "type" {
			continue
		}
		val, err := jsonValue(v)
		if err != nil {
			return Module{}, fmt.Errorf("layer %s: field %s: %w", clip.Q(name), clip.Q(k), err)
		}
		kw = append(kw, kwArg{k, val})
	}
	// Deterministic error messages regardless of map order.
	sortKW(kw)
	m, err := build(name, typ, nil, kw, true)
	if err != nil {
		return Module{}, fmt.Errorf("layer %s: %w", clip.Q(name), err)
	}
	return m, nil
}

func sortKW(kw []kwArg) {
	for i := 1; i < len(kw); i++ {
		for j := i; j > 0 && kw[j].key < kw[j-1].key; j-- {
			kw[j], kw[j-1] = kw[j-1], kw[j]
		}
	}
}

func jsonValue(v interface{}) (value, error) {
	switch x := v.(type) {
	case nil:
		return noneV, nil
	case bool:
		return boolV(x), nil
	case string:
		return strV(x), nil
	case json.Number:
		if i, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return intV(i), nil
		}
		f, err := x.Float64()
		if err != nil {
			return value{}, fmt.Errorf("bad number %s", clip.S(string(x)))
		}
		return floatV(f), nil
	case []interface{}:
		t := value{kind: vTuple, tup: []value{}}
		for _, e := range x {
			ev, err := jsonValue(e)
			if err != nil {
				return value{}, err
			}
			if ev.kind == vTuple {
				return value{}, fmt.Errorf("nested arrays are not allowed")
			}
			t.tup = append(t.tup, ev)
		}
		return t, nil
	}
	return value{}, fmt.Errorf("unsupported JSON value %T", v)
}

// moduleValue returns the value of the argument with JSON key key.
func moduleValue(m *Module, key string) value {
	pair := func(p [2]int) value {
		t := value{kind: vTuple}
		for _, e := range p {
			if e < 0 {
				t.tup = append(t.tup, noneV)
			} else {
				t.tup = append(t.tup, intV(int64(e)))
			}
		}
		return t
	}
	optF := func(p *float64) value {
		if p == nil {
			return noneV
		}
		return floatV(*p)
	}
	switch key {
	case "in_features":
		return intV(int64(m.InFeatures))
	case "out_features":
		return intV(int64(m.OutFeatures))
	case "bias":
		return boolV(m.Bias)
	case "in_channels":
		return intV(int64(m.InChannels))
	case "out_channels":
		return intV(int64(m.OutChannels))
	case "kernel_size":
		return pair(m.KernelSize)
	case "stride":
		return pair(m.Stride)
	case "padding":
		if m.PaddingString != "" {
			return strV(m.PaddingString)
		}
		return pair(m.Padding)
	case "dilation":
		return pair(m.Dilation)
	case "groups":
		return intV(int64(m.Groups))
	case "padding_mode":
		return strV(m.PaddingMode)
	case "inducing_cols":
		return intV(int64(m.InducingCols))
	case "inducing_rows":
		return intV(int64(m.InducingRows))
	case "prior_mean":
		return optF(m.PriorMean)
	case "prior_sd":
		return optF(m.PriorSD)
	case "ceil_mode":
		return boolV(m.CeilMode)
	case "count_include_pad":
		return boolV(m.CountIncludePad)
	case "divisor_override":
		if m.DivisorOverride == 0 {
			return noneV
		}
		return intV(int64(m.DivisorOverride))
	case "output_size":
		return pair(m.OutputSize)
	case "start_dim":
		return intV(int64(m.StartDim))
	case "end_dim":
		return intV(int64(m.EndDim))
	case "num_features":
		return intV(int64(m.NumFeatures))
	case "eps":
		return floatV(m.Eps)
	case "momentum":
		return optF(m.Momentum)
	case "affine":
		return boolV(m.Affine)
	case "track_running_stats":
		return boolV(m.TrackRunningStats)
	case "p":
		return floatV(m.P)
	case "inplace":
		return boolV(m.Inplace)
	case "approximate":
		return strV(m.Approximate)
	}
	return noneV
}

func writeJSONValue(b *bytes.Buffer, v value) {
	switch v.kind {
	case vInt:
		b.WriteString(strconv.FormatInt(v.i, 10))
	case vFloat:
		b.WriteString(strconv.FormatFloat(v.f, 'g', -1, 64))
	case vBool:
		b.WriteString(strconv.FormatBool(v.b))
	case vNone:
		b.WriteString("null")
	case vStr:
		q, _ := json.Marshal(v.s)
		b.Write(q)
	case vTuple:
		b.WriteByte('[')
		for i, e := range v.tup {
			if i > 0 {
				b.WriteString(", ")
			}
			writeJSONValue(b, e)
		}
		b.WriteByte(']')
	}
}

// WriteJSON writes mods in the JSON architecture format, one layer per
// line, every argument of the layer's type spelled out in PyTorch's order.
// The output is deterministic and ParseJSON reads it back to equal
// Modules.
func WriteJSON(w io.Writer, mods []Module) error {
	var b bytes.Buffer
	b.WriteString("{\"layers\": [")
	for i := range mods {
		m := &mods[i]
		ps, ok := specs[m.Type]
		if !ok {
			return fmt.Errorf("torcharch: write json: layer %s: unknown module type %s", clip.Q(m.Name), clip.Q(m.Type))
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n  {\"name\": ")
		writeJSONValue(&b, strV(m.Name))
		b.WriteString(", \"type\": ")
		writeJSONValue(&b, strV(m.Type))
		for _, p := range ps {
			v := moduleValue(m, p.json)
			if p.kind == pFloatOpt && v.kind == vNone {
				continue
			}
			b.WriteString(", ")
			writeJSONValue(&b, strV(p.json))
			b.WriteString(": ")
			writeJSONValue(&b, v)
		}
		b.WriteByte('}')
	}
	b.WriteString("\n]}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("torcharch: write json: %w", err)
	}
	return nil
}
