package resnet

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/strictjson"

	"github.com/edgebnn/edgebnn/convert/torcharch"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// ResidualType is the "type" of a residual block in the JSON architecture format.
const ResidualType = "Residual"

// MaxNesting bounds how deeply residual blocks may nest (the runtime's limit).
const MaxNesting = 16

// ParseJSON reads convert/torcharch's JSON architecture format extended with residual blocks.
// A layer is either a leaf module, exactly as torcharch.ParseJSON reads it (same keys, defaults
// and errors), or a residual block
//
//	{"name": "layer1.0", "type": "Residual", "body": [layers...], "shortcut": [layers...]}
//
// computing body(x) + shortcut(x) ("shortcut" may be omitted or empty for the identity). A
// torchvision BasicBlock is a Residual whose body is conv1, bn1, relu, conv2, bn2 and whose
// shortcut is downsample.0 (1×1 conv) and downsample.1 (BatchNorm2d), followed by a ReLU after
// the block (see New). Names must be unique, except that parameter-free modules (activations,
// pooling, Identity, Flatten, Dropout) may repeat, as a module applied twice in PyTorch does.
// A document without Residual layers is read by torcharch.ParseJSON itself and comes back as a
// list of leaf nodes. Errors name the layer by its path, e.g. layers[3].body[1].
func ParseJSON(r io.Reader) ([]Node, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("resnet: json architecture: %w", err)
	}
	var doc struct {
		Layers *[]json.RawMessage `json:"layers"`
	}
	if err := strictjson.Decode(data, &doc); err != nil {
		return nil, fmt.Errorf("resnet: json architecture: %w", clip.Error(err))
	}
	if doc.Layers == nil {
		return nil, fmt.Errorf("resnet: json architecture: missing \"layers\"")
	}
	if n := len(*doc.Layers); n > torcharch.MaxModules {
		return nil, fmt.Errorf("resnet: json architecture: %d layers, more than %d", n, torcharch.MaxModules)
	}
	if !hasResidual(*doc.Layers) {
		mods, err := torcharch.ParseJSON(bytes.NewReader(data))
		if err != nil {
			return nil, err
		}
		nodes := make([]Node, len(mods))
		for i := range mods {
			nodes[i] = Node{Module: &mods[i]}
		}
		return nodes, nil
	}
	p := &jsonParser{names: map[string]string{}}
	nodes, err := p.list(*doc.Layers, "layers", 0)
	if err != nil {
		return nil, fmt.Errorf("resnet: json architecture: %w", clip.Error(err))
	}
	return nodes, nil
}

// ParseJSONFile reads the JSON architecture (see ParseJSON) at path; errors name the file.
func ParseJSONFile(path string) ([]Node, error) {
	return readlimit.ParseFile("resnet", path, 0, func(b []byte) ([]Node, error) {
		return ParseJSON(bytes.NewReader(b))
	})
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

type jsonParser struct {
	names map[string]string // name → type of every leaf and block seen
	nodes int               // the layers and blocks seen, at most torcharch.MaxModules
}

func (p *jsonParser) list(layers []json.RawMessage, path string, depth int) ([]Node, error) {
	out := make([]Node, 0, len(layers))
	for i, raw := range layers {
		if p.nodes++; p.nodes > torcharch.MaxModules {
			return nil, fmt.Errorf("%s[%d]: more than %d layers and blocks", path, i, torcharch.MaxModules)
		}
		n, err := p.layer(raw, fmt.Sprintf("%s[%d]", path, i), depth)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func (p *jsonParser) layer(raw json.RawMessage, path string, depth int) (Node, error) {
	var head struct {
		Name string `json:"name"`
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Node{}, fmt.Errorf("%s: %w", path, clip.Error(err))
	}
	if head.Type != ResidualType {
		doc := append(append([]byte(`{"layers": [`), raw...), "]}"...)
		mods, err := torcharch.ParseJSON(bytes.NewReader(doc))
		if err != nil {
			// Drop torcharch's "json: layers[0]:" prefix: path says where the layer is.
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
			}
			return Node{}, fmt.Errorf("%s: %w", path, err)
		}
		m := mods[0]
		if prev, ok := p.names[m.Name]; ok && (prev != m.Type || hasTensors(m.Type)) {
			return Node{}, fmt.Errorf("%s: duplicate name %s (only parameter-free modules of one type may repeat)", path, clip.Q(m.Name))
		}
		p.names[m.Name] = m.Type
		return Node{Module: &m}, nil
	}
	if depth >= MaxNesting {
		return Node{}, fmt.Errorf("%s: residual blocks nested deeper than %d", path, MaxNesting)
	}
	var blk struct {
		Name     string             `json:"name"`
		Type     string             `json:"type"`
		Body     *[]json.RawMessage `json:"body"`
		Shortcut []json.RawMessage  `json:"shortcut"`
	}
	if err := strictjson.Decode(raw, &blk); err != nil {
		return Node{}, fmt.Errorf("%s: residual block %s: %w", path, clip.Q(head.Name), clip.Error(err))
	}
	if blk.Name == "" {
		return Node{}, fmt.Errorf("%s: residual block: field \"name\" must be a non-empty string", path)
	}
	if _, ok := p.names[blk.Name]; ok {
		return Node{}, fmt.Errorf("%s: duplicate name %s", path, clip.Q(blk.Name))
	}
	p.names[blk.Name] = ResidualType
	if blk.Body == nil || len(*blk.Body) == 0 {
		return Node{}, fmt.Errorf("%s: residual block %s: \"body\" must be a non-empty list of layers", path, clip.Q(blk.Name))
	}
	body, err := p.list(*blk.Body, path+".body", depth+1)
	if err != nil {
		return Node{}, err
	}
	var sc []Node
	if len(blk.Shortcut) > 0 {
		if sc, err = p.list(blk.Shortcut, path+".shortcut", depth+1); err != nil {
			return Node{}, err
		}
	}
	return Node{Name: blk.Name, Body: body, Shortcut: sc}, nil
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

// WriteJSON writes a tree in the JSON architecture format of ParseJSON, every leaf as
// torcharch.WriteJSON writes it (all arguments, PyTorch's order), so that ParseJSON reads back
// the same tree. A tree without residual blocks is written exactly as torcharch.WriteJSON
// writes its modules.
func WriteJSON(w io.Writer, nodes []Node) error {
	var b bytes.Buffer
	b.WriteString("{\"layers\": ")
	if err := writeNodes(&b, nodes, "  ", "layers"); err != nil {
		return err
	}
	b.WriteString("}\n")
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("resnet: write json architecture: %w", err)
	}
	return nil
}

func writeNodes(b *bytes.Buffer, nodes []Node, indent, path string) error {
	b.WriteString("[")
	for i, n := range nodes {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("\n" + indent)
		at := fmt.Sprintf("%s[%d]", path, i)
		if n.Module != nil {
			var one bytes.Buffer
			if err := torcharch.WriteJSON(&one, []torcharch.Module{*n.Module}); err != nil {
				return fmt.Errorf("resnet: write json architecture: %s: %w", at, err)
			}
			// WriteJSON wrote {"layers": [\n  {...}\n]}\n: keep the object.
			s := bytes.TrimSpace(one.Bytes())
			s = bytes.TrimSuffix(bytes.TrimPrefix(s, []byte("{\"layers\": [")), []byte("]}"))
			b.Write(bytes.TrimSpace(s))
			continue
		}
		if n.Name == "" || len(n.Body) == 0 {
			return fmt.Errorf("resnet: write json architecture: %s: a residual block needs a name and a non-empty body", at)
		}
		name, _ := json.Marshal(n.Name)
		fmt.Fprintf(b, "{\"name\": %s, \"type\": %q, \"body\": ", name, ResidualType)
		if err := writeNodes(b, n.Body, indent+"  ", at+".body"); err != nil {
			return err
		}
		if len(n.Shortcut) > 0 {
			b.WriteString(", \"shortcut\": ")
			if err := writeNodes(b, n.Shortcut, indent+"  ", at+".shortcut"); err != nil {
				return err
			}
		}
		b.WriteString("}")
	}
	b.WriteString("\n" + indent[:len(indent)-2] + "]")
	return nil
}
