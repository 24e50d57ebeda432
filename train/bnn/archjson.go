package bnn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
)

// Marker module types delimit residual blocks in a flat module list (what ParseArch returns and
// SpecFromModules takes): ResidualBegin starts block Name's body, ResidualShortcut (optional)
// ends the body and starts the shortcut, ResidualEnd closes the block. A block computes
// body(x) + shortcut(x); without a shortcut it is body(x) + x. Blocks may nest.
const (
	ResidualBegin    = "edgebnn.ResidualBegin"
	ResidualShortcut = "edgebnn.ResidualShortcut"
	ResidualEnd      = "edgebnn.ResidualEnd"
)

// ResidualType is the "type" of a residual block in the JSON architecture format.
const ResidualType = "Residual"

// maxNesting bounds residual nesting (the runtime's limit).
const maxNesting = 16

// ParseArchJSON reads convert/torcharch's JSON architecture format extended with residual
// blocks. A layer is either a leaf module, exactly as torcharch.ParseJSON reads it (same keys,
// defaults and errors), or a residual block
//
//	{"name": "layer1.0", "type": "Residual", "body": [layers...], "shortcut": [layers...]}
//
// computing body(x) + shortcut(x) ("shortcut" may be omitted or empty for the identity). A
// torchvision BasicBlock is a Residual whose body is conv1, bn1, relu, conv2, bn2 and whose
// shortcut is downsample.0 (1×1 conv) and downsample.1 (BatchNorm2d), followed by a ReLU after the
// block. Names must be unique, except that parameter-free modules (activations, pooling,
// Identity, Flatten, Dropout) may repeat, as a module applied twice in PyTorch does. A file
// without Residual layers is parsed by torcharch.ParseJSON itself. The result is the leaves in
// execution order with blocks delimited by the Residual* marker modules.
func ParseArchJSON(r io.Reader) ([]torcharch.Module, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("bnn: json architecture: %w", err)
	}
	var doc struct {
		Layers *[]json.RawMessage `json:"layers"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("bnn: json architecture: %w", err)
	}
	if doc.Layers == nil {
		return nil, fmt.Errorf("bnn: json architecture: missing \"layers\"")
	}
	if !hasResidual(*doc.Layers) {
		return torcharch.ParseJSON(bytes.NewReader(data))
	}
	p := &jsonArch{names: map[string]string{}}
	if err := p.list(*doc.Layers, "layers", 0); err != nil {
		return nil, fmt.Errorf("bnn: json architecture: %w", err)
	}
	return p.out, nil
}

func hasResidual(layers []json.RawMessage) bool {
	for _, raw := range layers {
		var head struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(raw, &head) == nil && head.Type == ResidualType {
			return true
		}
	}
	return false
}

type jsonArch struct {
	out   []torcharch.Module
	names map[string]string // name → type of every leaf and block seen
}

func (p *jsonArch) list(layers []json.RawMessage, path string, depth int) error {
	for i, raw := range layers {
		if err := p.layer(raw, fmt.Sprintf("%s[%d]", path, i), depth); err != nil {
			return err
		}
	}
	return nil
}

func (p *jsonArch) layer(raw json.RawMessage, path string, depth int) error {
	var head struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if head.Type != ResidualType {
		doc := append(append([]byte(`{"layers": [`), raw...), "]}"...)
		mods, err := torcharch.ParseJSON(bytes.NewReader(doc))
		if err != nil {
			// Drop torcharch's "json: layers[0]:" prefix: path says where the layer is.
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		m := mods[0]
		if prev, ok := p.names[m.Name]; ok && (prev != m.Type || hasTensors(m.Type)) {
			return fmt.Errorf("%s: duplicate name %q (only parameter-free modules of one type may repeat)", path, m.Name)
		}
		p.names[m.Name] = m.Type
		p.out = append(p.out, m)
		return nil
	}
	if depth >= maxNesting {
		return fmt.Errorf("%s: residual blocks nested deeper than %d", path, maxNesting)
	}
	var blk struct {
		Name     string             `json:"name"`
		Type     string             `json:"type"`
		Body     *[]json.RawMessage `json:"body"`
		Shortcut []json.RawMessage  `json:"shortcut"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&blk); err != nil {
		return fmt.Errorf("%s: residual block %q: %w", path, head.Name, err)
	}
	if blk.Name == "" {
		return fmt.Errorf("%s: residual block: field \"name\" must be a non-empty string", path)
	}
	if _, ok := p.names[blk.Name]; ok {
		return fmt.Errorf("%s: duplicate name %q", path, blk.Name)
	}
	p.names[blk.Name] = ResidualType
	if blk.Body == nil || len(*blk.Body) == 0 {
		return fmt.Errorf("%s: residual block %q: \"body\" must be a non-empty list of layers", path, blk.Name)
	}
	p.out = append(p.out, torcharch.Module{Name: blk.Name, Type: ResidualBegin})
	if err := p.list(*blk.Body, path+".body", depth+1); err != nil {
		return err
	}
	if len(blk.Shortcut) > 0 {
		p.out = append(p.out, torcharch.Module{Name: blk.Name, Type: ResidualShortcut})
		if err := p.list(blk.Shortcut, path+".shortcut", depth+1); err != nil {
			return err
		}
	}
	p.out = append(p.out, torcharch.Module{Name: blk.Name, Type: ResidualEnd})
	return nil
}

// hasTensors reports whether modules of this type own state_dict tensors.
func hasTensors(typ string) bool {
	m := torcharch.Module{Type: typ}
	switch m.BaseType() {
	case "Linear", "Conv2d", "BatchNorm1d", "BatchNorm2d":
		return true
	}
	return false
}

// NodesFromModules rebuilds the residual structure of a flat module list with Residual* markers
// as convert/resnet's tree (the form convert builds its runtime spec from).
func NodesFromModules(mods []torcharch.Module) ([]resnet.Node, error) {
	i := 0
	nodes, err := nodesFrom(mods, &i, 0)
	if err != nil {
		return nil, err
	}
	if i < len(mods) {
		return nil, fmt.Errorf("bnn: module %d (%s %q) has no matching %s", i, mods[i].Type, mods[i].Name, ResidualBegin)
	}
	return nodes, nil
}

func nodesFrom(mods []torcharch.Module, i *int, depth int) ([]resnet.Node, error) {
	var out []resnet.Node
	for *i < len(mods) {
		m := &mods[*i]
		switch m.Type {
		case ResidualShortcut, ResidualEnd:
			return out, nil
		case ResidualBegin:
			if depth >= maxNesting {
				return nil, fmt.Errorf("bnn: residual block %q: blocks nested deeper than %d", m.Name, maxNesting)
			}
			name := m.Name
			*i++
			body, err := nodesFrom(mods, i, depth+1)
			if err != nil {
				return nil, err
			}
			var sc []resnet.Node
			if *i < len(mods) && mods[*i].Type == ResidualShortcut && mods[*i].Name == name {
				*i++
				if sc, err = nodesFrom(mods, i, depth+1); err != nil {
					return nil, err
				}
			}
			if *i >= len(mods) || mods[*i].Type != ResidualEnd || mods[*i].Name != name {
				return nil, fmt.Errorf("bnn: residual block %q is not closed by its %s marker", name, ResidualEnd)
			}
			if len(body) == 0 {
				return nil, fmt.Errorf("bnn: residual block %q has an empty body", name)
			}
			*i++
			out = append(out, resnet.Node{Name: name, Body: body, Shortcut: sc})
		default:
			out = append(out, resnet.Node{Module: m})
			*i++
		}
	}
	return out, nil
}

// ModulesFromNodes flattens a convert/resnet tree (e.g. resnet.New's) into leaf modules with
// Residual* markers, the form SpecFromModules takes.
func ModulesFromNodes(nodes []resnet.Node) []torcharch.Module {
	var out []torcharch.Module
	for _, n := range nodes {
		if n.Module != nil {
			out = append(out, *n.Module)
			continue
		}
		out = append(out, torcharch.Module{Name: n.Name, Type: ResidualBegin})
		out = append(out, ModulesFromNodes(n.Body)...)
		if len(n.Shortcut) > 0 {
			out = append(out, torcharch.Module{Name: n.Name, Type: ResidualShortcut})
			out = append(out, ModulesFromNodes(n.Shortcut)...)
		}
		out = append(out, torcharch.Module{Name: n.Name, Type: ResidualEnd})
	}
	return out
}

// WriteArchJSON writes a convert/resnet tree in the JSON architecture format of ParseArchJSON,
// every leaf as torcharch.WriteJSON writes it (all arguments, PyTorch's order), so that
// ParseArchJSON reads back the same modules.
func WriteArchJSON(w io.Writer, nodes []resnet.Node) error {
	var b bytes.Buffer
	b.WriteString("{\"layers\": ")
	if err := writeNodes(&b, nodes, "  "); err != nil {
		return err
	}
	b.WriteString("}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("bnn: write json architecture: %w", err)
	}
	return nil
}

func writeNodes(b *bytes.Buffer, nodes []resnet.Node, indent string) error {
	b.WriteString("[")
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n" + indent)
		if n.Module != nil {
			var one bytes.Buffer
			if err := torcharch.WriteJSON(&one, []torcharch.Module{*n.Module}); err != nil {
				return fmt.Errorf("bnn: write json architecture: %w", err)
			}
			// WriteJSON wrote {"layers": [\n  {...}\n]}\n: keep the object.
			s := bytes.TrimSpace(one.Bytes())
			s = bytes.TrimSuffix(bytes.TrimPrefix(s, []byte("{\"layers\": [")), []byte("]}"))
			b.Write(bytes.TrimSpace(s))
			continue
		}
		name, _ := json.Marshal(n.Name)
		fmt.Fprintf(b, "{\"name\": %s, \"type\": %q, \"body\": ", name, ResidualType)
		if err := writeNodes(b, n.Body, indent+"  "); err != nil {
			return err
		}
		if len(n.Shortcut) > 0 {
			b.WriteString(", \"shortcut\": ")
			if err := writeNodes(b, n.Shortcut, indent+"  "); err != nil {
				return err
			}
		}
		b.WriteString("}")
	}
	b.WriteString("\n" + indent[:len(indent)-2] + "]")
	return nil
}
