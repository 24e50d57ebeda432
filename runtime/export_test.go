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

// SetPrunedSparse forces the named pruned FFG layer's products to the CSR (sparse) or the dense
// path, whatever its density, and reports whether the layer is a pruned FFG layer.
func SetPrunedSparse(m *Model, layer string, sparse bool) bool {
	f, ok := m.findDense(layer).post.(*prunedFFG)
	if ok {
		f.sparse = sparse
	}
	return ok
}

// PrunedMemory is the number of bytes a pruned FFG layer holds for its kept weights (column
// indices and standard deviations it allocated; the means may alias the file) and row pointers.
func PrunedMemory(m *Model, layer string) int {
	f := m.findDense(layer).post.(*prunedFFG)
	return 4 * (len(f.rowptr) + len(f.col) + len(f.s) + len(f.bs))
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
		if !ok || l.q != qGlobal {
			return
		}
		w := make([]float32, d.dOut*d.dIn)
		fc.rng.Reset(seed, uint32(s), d.id)
		l.sampleWeight(fc, &fc.rng, w, make([]float32, l.weightScratch()))
		out = append(out, w)
	})
	return out
}

// SetInducingFactored makes the named inducing layer apply its weight samples in factored form
// ("on"), form them ("off") or choose by cost ("auto"; the default), and reports whether the
// layer is an inducing layer. Call it before NewPredictor: the scratch depends on it.
func SetInducingFactored(m *Model, layer, mode string) bool {
	l, ok := m.findDense(layer).post.(*inducing)
	if ok {
		l.path = map[string]weightPath{"on": pathFactored, "off": pathFormed}[mode]
	}
	return ok
}

// InducingFactored reports whether the named layer applies a weight sample to n inputs in
// factored form.
func InducingFactored(m *Model, layer string, n int) bool {
	return InducingPath(m, layer, n) == "factored"
}

// InducingPath names the path a weight sample of the named layer applied to n inputs takes:
// "formed" or "factored" ("" for a layer that is not inducing).
func InducingPath(m *Model, layer string, n int) string {
	l, p := m.findDense(layer).inducingPath(n)
	if l == nil {
		return ""
	}
	return map[weightPath]string{pathFormed: "formed", pathFactored: "factored"}[p]
}

// InducingMeanPath names the path the posterior-mean weight of the named inducing layer applied
// to n inputs takes: "formed" or "factored".
func InducingMeanPath(m *Model, layer string, n int) string {
	d := m.findDense(layer)
	return map[weightPath]string{pathFormed: "formed", pathFactored: "factored"}[d.post.(*inducing).meanPath(d.factoredCols(n))]
}

// SetInducingGram forces the named inducing convolution's gram path on ("on": Local and Auto
// take it), off ("off") or leaves it to the cost model ("auto"), and reports whether the layer is
// an inducing layer. Call it before NewPredictor.
func SetInducingGram(m *Model, layer, mode string) bool {
	l, ok := m.findDense(layer).post.(*inducing)
	if ok {
		l.gram = map[string]int8{"on": 1, "off": -1}[mode]
	}
	return ok
}

// InducingGram reports whether the named convolution samples along the gram path under
// strategy st for batches of n.
func InducingGram(m *Model, layer string, st Strategy, n int) bool {
	return m.findDense(layer).gramPost(st, n) != nil
}

// PassSamples returns the most samples p draws in one pass (whole blocks drawn together) and its
// block.
func PassSamples(p *Predictor) (pass, block int) { return p.pass, p.block }

// NewWithBernsteinBudget is New with the model-wide Bernstein limits (MaxBernsteinTableBytes,
// MaxBernsteinWork) replaced, so that a test reaches them with small layers.
func NewWithBernsteinBudget(spec *Spec, src TensorSource, tableBytes, work int64) (*Model, error) {
	return newModel(spec, src, &loadBudget{maxBernsteinBytes: tableBytes, maxBernsteinWork: work,
		maxInducingBytes: MaxInducingBytes, maxInducingWork: MaxInducingWork, inducingWorkPerValue: InducingWorkPerValue})
}
