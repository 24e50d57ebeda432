package bnn

import (
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// A layer's parameters come from the runtime's declaration: the trainer cannot make a tensor the
// runtime does not read, nor leave out one it needs.
func TestDeclaredParams(t *testing.T) {
	ffg := runtime.LayerTensors(&runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 3, Bias: true,
		Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG}})
	all := func(d *declared[float64]) {
		d.param("weight_mean", make([]float64, 6))
		d.param("_weight_sd", make([]float64, 6))
		d.param("bias_mean", make([]float64, 3))
		d.param("_bias_sd", make([]float64, 3))
	}
	for _, c := range []struct {
		what string
		make func(d *declared[float64])
		err  string
	}{
		{"all parameters, no prior buffers (optional)", all, ""},
		{"undeclared", func(d *declared[float64]) { all(d); d.param("weight", make([]float64, 6)) }, `tensor "weight" is not declared`},
		{"wrong length", func(d *declared[float64]) { d.param("weight_mean", make([]float64, 5)); all(d) }, `5 initial values for its declared shape [3 2]`},
		{"missing", func(d *declared[float64]) { d.param("weight_mean", make([]float64, 6)) }, `makes no tensor "_weight_sd"`},
	} {
		d := declare[float64]("fc", ffg)
		c.make(d)
		err := d.done()
		if c.err == "" {
			if err != nil {
				t.Errorf("%s: %v", c.what, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.err) || !strings.Contains(err.Error(), `layer "fc"`) {
			t.Errorf("%s: error %v, want one naming the layer and containing %q", c.what, err, c.err)
		}
	}
	d := declare[float64]("fc", ffg)
	p, b := d.param("_weight_sd", make([]float64, 6)), d.param("prior_bias_sd", make([]float64, 3))
	if !p.Trainable || p.optional || b.Trainable || !b.optional || p.Shape[0] != 3 || p.Shape[1] != 2 {
		t.Errorf("roles or shapes not taken from the declaration: %+v %+v", p, b)
	}
}
