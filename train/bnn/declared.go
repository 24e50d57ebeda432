package bnn

import (
	"fmt"

	"github.com/edgebnn/edgebnn/runtime"
)

// declared makes a layer's parameters from the runtime's declaration of its tensors
// (runtime.LayerTensors, InducingTensors): each parameter's name, shape and whether the
// optimizer trains it come from there, so that the trainer's checkpoints hold exactly what the
// converter and the runtime read. The layer supplies initial values only; a tensor that is not
// declared, initial values of the wrong length and a declared tensor the layer does not make are
// errors, reported by done.
type declared[T Float] struct {
	layer string
	decls []runtime.TensorDecl
	made  map[string]bool
	err   error
}

func declare[T Float](layer string, decls []runtime.TensorDecl) *declared[T] {
	return &declared[T]{layer: layer, decls: decls, made: map[string]bool{}}
}

// param makes the declared tensor name with initial values data.
func (d *declared[T]) param(name string, data []float64) Param[T] {
	for _, t := range d.decls {
		if t.Name != name {
			continue
		}
		if n := numel(t.Shape); n != len(data) && d.err == nil {
			d.err = fmt.Errorf("bnn: layer %q: tensor %q: %d initial values for its declared shape %v", d.layer, name, len(data), t.Shape)
		}
		d.made[name] = true
		p := newParam[T](d.layer, name, t.Role == runtime.TensorParam, data, t.Shape...)
		p.optional = t.Role == runtime.TensorOptional || t.Role == runtime.TensorDropped
		return p
	}
	if d.err == nil {
		d.err = fmt.Errorf("bnn: layer %q: tensor %q is not declared for the layer's posterior (runtime.LayerTensors)", d.layer, name)
	}
	return newParam[T](d.layer, name, false, data)
}

// done returns the first error of param, or names a declared parameter or buffer that the layer
// did not make.
func (d *declared[T]) done() error {
	if d.err != nil {
		return d.err
	}
	for _, t := range d.decls {
		if (t.Role == runtime.TensorParam || t.Role == runtime.TensorBuffer) && !d.made[t.Name] {
			return fmt.Errorf("bnn: layer %q: the trainer makes no tensor %q, which the runtime declares for the layer", d.layer, t.Name)
		}
	}
	return nil
}

func numel(shape []int) int {
	n := 1
	for _, v := range shape {
		n *= v
	}
	return n
}
