package bnn

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

// TestLastFFGLinear: a network that ends with a Linear ffg layer gives it (sizes, bias); one that
// ends otherwise is an error naming what it ends with. Features at the means equal the mean
// forward's input to the last layer, and FeaturesMean both.
func TestLastFFGLinear(t *testing.T) {
	ffg := &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1}
	for _, c := range []struct {
		name string
		spec *runtime.Spec
		want string // error substring; "" for success
	}{
		{"mlp", tinySpec(ffg, false), ""},
		{"conv then linear", tinySpec(ffg, true), ""},
		{"deterministic last", tinySpec(nil, false), `layer "2"`},
		{"activation last", func() *runtime.Spec {
			s := tinySpec(ffg, false)
			s.Layers = append(s.Layers, runtime.LayerSpec{Name: "3", Op: runtime.OpTanh})
			return s
		}(), `layer "3"`},
	} {
		n, err := New[float64](c.spec, nil, rand.New(rand.NewPCG(1, 2)))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		ll, err := n.LastFFGLinear()
		if c.want != "" {
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: error %v, want one naming %s", c.name, err, c.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		last := c.spec.Layers[len(c.spec.Layers)-1]
		if ll.Name != last.Name || ll.In != last.In || ll.Out != last.Out || ll.Bias != last.Bias {
			t.Errorf("%s: last layer %+v, want %s %d→%d bias %v", c.name, ll, last.Name, last.In, last.Out, last.Bias)
		}
		tp := autodiff.NewTape[float64]()
		x := tp.Const(make([]float64, 2*prod(c.spec.InputShape)), append([]int{2}, c.spec.InputShape...)...)
		for i := range x.Value() {
			x.Value()[i] = float64(i%5) - 2
		}
		var taps []LayerTap[float64]
		n.ForwardMeanTapped(tp, x, &taps)
		phi := n.Features(tp, x, true)
		in := taps[len(taps)-1].In.Value()
		for i, v := range phi.Value() {
			if v != in[i] {
				t.Fatalf("%s: Features(mean) %v, the last layer's input %v", c.name, phi.Value(), in)
			}
		}
		phi2, out2 := n.FeaturesMean(tp, x)
		out := n.ForwardMean(tp, x)
		for i, v := range phi.Value() {
			if v != phi2.Value()[i] {
				t.Fatalf("%s: FeaturesMean's features %v, Features(mean) %v", c.name, phi2.Value(), phi.Value())
			}
		}
		for i, v := range out.Value() {
			if v != out2.Value()[i] {
				t.Fatalf("%s: FeaturesMean's outputs %v, ForwardMean %v", c.name, out2.Value(), out.Value())
			}
		}
		wm, ws, bm, bs := ll.Vars(tp)
		if wm.Len() != ll.Out*ll.In || ws.Len() != ll.Out*ll.In || (bm != nil) != ll.Bias || (bs != nil) != ll.Bias {
			t.Errorf("%s: Vars sizes %d, %d, bias %v", c.name, wm.Len(), ws.Len(), bm != nil)
		}
		if sw, sb := ll.PriorSD(); len(sw) != ll.Out*ll.In || (sb != nil) != ll.Bias {
			t.Errorf("%s: PriorSD sizes %d, %d", c.name, len(sw), len(sb))
		}
	}
}
