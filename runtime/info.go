package runtime

import "fmt"

// LayerInfo summarises one Linear or Conv2d layer of a Model.
type LayerInfo struct {
	Name string
	Op   Op
	// Kind is the posterior kind: deterministic, inducing, ffg, fcg, fa or bernstein (the Kind*
	// constants).
	Kind string
	// Rows and Cols are the weight matrix's shape (Cols counts the bias column; a deterministic
	// layer with a BatchNorm folded in has one, the BatchNorm's shift, see MeanWeight).
	Rows, Cols int
	// KL is the layer's KL divergence from its prior as bayesianize defines it (MATH.md §1);
	// zero for deterministic layers, for FA slices (whose KL is network-wide) and for Bernstein
	// layers (no closed form; the trainer estimates it by Monte Carlo). An inducing layer's
	// point estimates (max_lamda or max_sd_u 0) replace the infinite terms as the trainer's
	// objective does: no conditional KL, −log p(U) for the U term.
	KL float64
}

// ActivationValues returns the values one example's forward pass produces: its input and every
// layer's output, residual blocks' inner layers included — what a trainer that keeps every
// activation for its backward pass holds per example and sample (a predictor keeps only the
// largest two). For a mixture of posteriors, the first's.
func (m *Model) ActivationValues() int64 {
	if m.parts != nil {
		return m.parts[0].ActivationValues()
	}
	n := int64(m.inShape.size())
	walkNodes(m.nodes, func(nd node) { n += int64(nd.outSize()) })
	return n
}

// Layers lists the model's Linear and Conv2d layers in order (residual blocks flattened). For a
// mixture of posteriors, KL is the members' mean.
func (m *Model) Layers() []LayerInfo {
	if m.parts != nil {
		out := m.parts[0].Layers()
		for _, part := range m.parts[1:] {
			for i, li := range part.Layers() {
				out[i].KL += li.KL
			}
		}
		for i := range out {
			out[i].KL /= float64(len(m.parts))
		}
		return out
	}
	var out []LayerInfo
	walkNodes(m.nodes, func(nd node) {
		d, ok := nd.(*dense)
		if !ok {
			return
		}
		li := LayerInfo{Name: d.name, Op: OpLinear, Kind: KindDeterministic, Rows: d.dOut, Cols: d.dIn}
		if d.conv {
			li.Op = OpConv2d
		}
		switch p := d.post.(type) {
		case *inducing:
			li.Kind, li.KL = KindInducing, p.kl
		case *ffg:
			li.Kind, li.KL = KindFFG, p.kl
		case *prunedFFG:
			li.Kind, li.KL = KindFFG, p.kl
		case *faLayer:
			li.Kind = KindFA
		case *bernstein:
			li.Kind = KindBernstein
		case *fcg:
			li.Kind, li.KL = KindFCG, p.kl
		}
		out = append(out, li)
	})
	return out
}

// MeanWeight returns the named layer's weight at the posterior mean — for inducing layers the
// conditional mean σ R u C at U's mean (MATH.md §1; bayesianize's weight at its mean); in an
// ensemble model (Members > 1) the average of the members' weights, the mean of Posterior — as a
// rows × cols row-major matrix with the bias as the last column. A deterministic layer followed by
// a BatchNorm returns its weights with the BatchNorm folded in (see LayerSpec) and a bias column
// even where the layer itself has none: the folded bias b·scale + shift. MemberWeight gives one
// member's weights. For a mixture of posteriors it is the members' posterior means averaged.
func (m *Model) MeanWeight(layer string) ([]float32, int, int, error) {
	if !m.use() {
		return nil, 0, 0, ErrClosed
	}
	defer m.done()
	if m.parts != nil {
		var sum []float64
		var w []float32
		var r, c int
		for _, part := range m.parts {
			var err error
			if w, r, c, err = part.MeanWeight(layer); err != nil {
				return nil, 0, 0, err
			}
			if sum == nil {
				sum = make([]float64, len(w))
			}
			for i, v := range w {
				sum[i] += float64(v)
			}
		}
		for i, v := range sum {
			w[i] = float32(v / float64(len(m.parts)))
		}
		return w, r, c, nil
	}
	d := m.findDense(layer)
	if d == nil {
		return nil, 0, 0, fmt.Errorf("runtime: no linear or conv2d layer named %q", layer)
	}
	w := make([]float32, d.dOut*d.dIn)
	if d.post != nil {
		d.post.meanWeight(w, make([]float32, d.post.weightScratch()))
		return w, d.dOut, d.dIn, nil
	}
	if len(d.det) == 1 {
		d.weightMatrix(0, w)
		return w, d.dOut, d.dIn, nil
	}
	sum := make([]float64, len(w))
	for e := range d.det {
		d.weightMatrix(e, w)
		for i, v := range w {
			sum[i] += float64(v)
		}
	}
	for i, v := range sum {
		w[i] = float32(v / float64(len(d.det)))
	}
	return w, d.dOut, d.dIn, nil
}

// MemberWeight returns member k's weights of the named deterministic layer of an ensemble model
// (k = 0 for a single network), in MeanWeight's layout, BatchNorm folded in; for a mixture of
// posteriors, member k's posterior mean weights of any layer.
func (m *Model) MemberWeight(layer string, k int) ([]float32, int, int, error) {
	if !m.use() {
		return nil, 0, 0, ErrClosed
	}
	defer m.done()
	if m.parts != nil {
		if k < 0 || k >= len(m.parts) {
			return nil, 0, 0, fmt.Errorf("runtime: layer %q: member %d out of range (the mixture has %d)", layer, k, len(m.parts))
		}
		return m.parts[k].MeanWeight(layer)
	}
	d := m.findDense(layer)
	if d == nil {
		return nil, 0, 0, fmt.Errorf("runtime: no linear or conv2d layer named %q", layer)
	}
	if d.post != nil {
		return nil, 0, 0, fmt.Errorf("runtime: layer %q is not deterministic", layer)
	}
	if k < 0 || k >= len(d.det) {
		return nil, 0, 0, fmt.Errorf("runtime: layer %q: member %d out of range (the model has %d)", layer, k, len(d.det))
	}
	w := make([]float32, d.dOut*d.dIn)
	d.weightMatrix(k, w)
	return w, d.dOut, d.dIn, nil
}

func (m *Model) findDense(layer string) *dense {
	var found *dense
	walkNodes(m.nodes, func(nd node) {
		if d, ok := nd.(*dense); ok && d.name == layer {
			found = d
		}
	})
	return found
}
