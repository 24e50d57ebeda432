package runtime

import (
	"fmt"
	"math"
)

// guStream is the stream id of the global inducing weights U_{1:L} of one sample (shared by every
// layer of the sample, as faStream is for the FA latent).
const guStream = math.MaxUint32 - 1

// globalU is the global inducing posterior of paper 003 appendix H (docs/GLOBALU.md): the
// layers' whitened inducing weights, stacked along their rows into U_{1:L} (rows × mi), are the
// weight matrix of an inducing posterior with σ = 1 and its own inducing matrix G. One sample of
// U_{1:L} is drawn per prediction sample with the extended Matheron rule (inducing.sampleWeight)
// and every layer with q_inducing global reads its block.
type globalU struct {
	g        *inducing
	rows, mi int
	offset   map[string]int // a layer's first row in U_{1:L}
	mean     []float32      // E[U_{1:L}] = R_g μ_G C_g (member 0 for an ensemble q(G))
}

// size is the number of values of one U_{1:L} sample.
func (gu *globalU) size() int { return gu.rows * gu.mi }

// scratch is what sample needs besides its output.
func (gu *globalU) scratch() int { return gu.g.weightScratch() }

func loadGlobalU(spec *Spec, b *builder) (*globalU, error) {
	layers, offsets, rows := spec.GlobalULayers()
	mi := layers[0].Posterior.InducingCols
	ls := &LayerSpec{Name: GlobalUName, Posterior: spec.GlobalU}
	g, err := loadInducing(b, ls, rows, mi)
	if err != nil {
		return nil, err
	}
	gu := &globalU{g: g, rows: rows, mi: mi, offset: map[string]int{}}
	for i, l := range layers {
		gu.offset[l.Name] = offsets[i]
	}
	// E[U_{1:L}] (rows × mi, up to 2^28 values) is computed before any layer's tensors are read:
	// charged first, with meanWeight's scratch and its two products.
	work := prod(g.mo, g.mi, mi) + prod(rows, g.mo, mi)
	if err := b.budget.chargeInducing(fmt.Sprintf("runtime: %s (the mean of the stacked %d × %d inducing weights of %d layers)", GlobalUName, rows, mi, len(layers)),
		work, prod(4, rows, mi), prod(4, g.weightScratch()), 0); err != nil {
		return nil, err
	}
	gu.mean = make([]float32, rows*mi)
	g.meanWeight(gu.mean, make([]float32, g.weightScratch()))
	return gu, nil
}

// sample draws U_{1:L} of sample s (or takes its mean) into u (size values).
func (gu *globalU) sample(fc *fwdCtx, s int, u, scratch []float32) {
	if fc.mean {
		copy(u, gu.mean)
		return
	}
	s0 := fc.sample
	fc.sample = s // an ensemble q(G) uses member s mod K
	fc.rng.Reset(fc.seed, uint32(s), guStream)
	gu.g.sampleWeight(fc, &fc.rng, u, scratch)
	fc.sample = s0
}

// fill draws the U_{1:L} of samples s0 … s0+B−1 into fc.guHs (B × size).
func (gu *globalU) fill(fc *fwdCtx, s0, B int) {
	n := gu.size()
	for b := 0; b < B; b++ {
		gu.sample(fc, s0+b, fc.guHs[b*n:(b+1)*n], fc.guScratch)
	}
}

// attach attaches an inducing layer with q_inducing global to gu: its raw (whitened) mean
// is its block of E[U_{1:L}], and its KL is the conditional term only (KL[q(G) ‖ p(G)] is the
// model's, Model.GlobalKL).
func (gu *globalU) attach(l *inducing) error {
	off, ok := gu.offset[l.name]
	if !ok {
		return fmt.Errorf("runtime: layer %q (inducing): q_inducing global but the layer is not among the spec's global-U layers", l.name)
	}
	if l.mi != gu.mi || off+l.mo > gu.rows {
		return fmt.Errorf("runtime: layer %q (inducing): its %d×%d U does not fit rows %d… of the %d×%d global U_{1:L}", l.name, l.mo, l.mi, off, gu.rows, gu.mi)
	}
	l.guOff = off * gu.mi
	return nil
}

// GlobalKL is KL[q(G) ‖ p(G)] + ΣM_out·M_in·(λ_g²/2 − log λ_g − ½), the global inducing
// posterior's part of the KL divergence (0 without one); Layers reports the rest, layer by layer.
func (m *Model) GlobalKL() float64 {
	if m.glob == nil {
		return 0
	}
	return m.glob.g.kl
}

// globalBlock returns the layer's block of U_{1:L} (raw, whitened) in sample b of the current
// block of samples.
func (l *inducing) globalBlock(fc *fwdCtx, b int) []float32 {
	off := b*fc.glob.size() + l.guOff
	return fc.guHs[off : off+l.mo*l.mi]
}

// globalSizes returns the largest U_{1:L} sample and sampling scratch over the model's global
// inducing posteriors (a mixture's members each have their own), 0, 0 without any.
func (m *Model) globalSizes() (size, scratch int) {
	for _, g := range m.globals() {
		size, scratch = max(size, g.size()), max(scratch, g.scratch())
	}
	return size, scratch
}

// globals lists the model's global inducing posteriors: its own, or its members'.
func (m *Model) globals() []*globalU {
	var out []*globalU
	if m.glob != nil {
		out = append(out, m.glob)
	}
	for _, part := range m.parts {
		if part.glob != nil {
			out = append(out, part.glob)
		}
	}
	return out
}
