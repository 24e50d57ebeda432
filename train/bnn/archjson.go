package bnn

import (
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

// ResidualType is the "type" of a residual block in the JSON architecture format
// (resnet.ResidualType).
const ResidualType = resnet.ResidualType

// maxNesting bounds residual nesting (the runtime's limit).
const maxNesting = resnet.MaxNesting

// ParseArchJSON reads convert/resnet's JSON architecture format (convert/torcharch's, extended
// with "Residual" blocks; see resnet.ParseJSON, which does the parsing, so that convert and the
// trainer read the same files) and returns the leaves in execution order with blocks delimited
// by the Residual* marker modules. A file without Residual layers reads exactly as
// torcharch.ParseJSON reads it.
func ParseArchJSON(r io.Reader) ([]torcharch.Module, error) {
	nodes, err := resnet.ParseJSON(r)
	if err != nil {
		return nil, fmt.Errorf("bnn: %w", err)
	}
	return ModulesFromNodes(nodes), nil
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

// WriteArchJSON writes a convert/resnet tree in the JSON architecture format of ParseArchJSON
// (it is resnet.WriteJSON).
func WriteArchJSON(w io.Writer, nodes []resnet.Node) error {
	return resnet.WriteJSON(w, nodes)
}
