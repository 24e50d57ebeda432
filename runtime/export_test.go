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
