package runtime

import "github.com/edgebnn/edgebnn/kernels"

// StudentQuantile exports studentQuantile to the tests.
var StudentQuantile = studentQuantile

// BernsteinSampler returns a function drawing the named Bernstein layer's weight matrix (dOut ×
// dIn, bias last) for sample s of a prediction with seed, exactly as the weight strategy does.
func BernsteinSampler(m *Model, layer string) func(seed uint64, s int, w []float32) {
	d := m.findDense(layer)
	f := d.post.(*bernstein)
	return func(seed uint64, s int, w []float32) {
		rng := kernels.NewStream(seed, uint32(s), d.id)
		f.sampleWeight(nil, &rng, w, nil)
	}
}

// BernsteinTable returns the named Bernstein layer's quantile table (weight-matrix order, G
// values per weight) and G.
func BernsteinTable(m *Model, layer string) ([]float32, int) {
	f := m.findDense(layer).post.(*bernstein)
	return f.table, f.g
}

// GlobalWeights draws, for sample s of a prediction with seed, the weight matrices (dOut × dIn,
// bias last) of the model's global-U layers in spec order, as the weight strategy does: U_{1:L}
// once for the sample (stream guStream), then each layer's W from its block (the layer's stream).
func GlobalWeights(m *Model, seed uint64, s int) [][]float32 {
	g := m.glob
	fc := &fwdCtx{seed: seed, sample: s, block: 1, glob: g, guHs: make([]float32, g.size()), guScratch: make([]float32, g.scratch())}
	g.fill(fc, s, 1)
	fc.guH = fc.guHs
	var out [][]float32
	walkNodes(m.nodes, func(nd node) {
		d, ok := nd.(*dense)
		if !ok {
			return
		}
		l, ok := d.post.(*inducing)
		if !ok || l.q != QGlobal {
			return
		}
		w := make([]float32, d.dOut*d.dIn)
		fc.rng.Reset(seed, uint32(s), d.id)
		l.sampleWeight(fc, &fc.rng, w, make([]float32, l.weightScratch()))
		out = append(out, w)
	})
	return out
}
