package runtime

// dropout is an MC dropout layer (LayerSpec.MC): every sample of a prediction draws its own
// keep mask, each activation kept with probability 1−p and then scaled by 1/(1−p) (PyTorch's
// inverted dropout). The mask of sample s is drawn from the stream (seed, s, layer id), as a
// stochastic Linear layer draws its weights, and is shared by the inputs of a batch: one mask is
// one network (dropping unit j is zeroing column j of the next layer's weights), as one weight
// sample is, so an input's prediction does not depend on the batch it is in, and the same seed
// gives the same prediction for any number of threads. Options.Mean runs the layer as the
// identity (the weight-scaling rule: E[mask] = 1).
type dropout struct {
	id uint32
	// p is the drop probability; scale is 1/(1−p) in float32.
	p     float64
	scale float32
	s     shape
}

func newDropout(id uint32, p float64, s shape) *dropout {
	return &dropout{id: id, p: p, scale: float32(1 / (1 - p)), s: s}
}

// forward multiplies every row of sample b of the block by sample b's mask, whose entries are
// 0 (dropped) or 1/(1−p) (kept). Dropped values are multiplied by zero, not overwritten, so
// NaN and infinite activations still propagate (as in PyTorch).
func (d *dropout) forward(fc *fwdCtx, _, out []float32, n int) {
	if fc.mean {
		return
	}
	size := d.s.size()
	mask := fc.scratch[:size]
	for b := 0; b < fc.block; b++ {
		fc.rng.Reset(fc.seed, uint32(fc.sample+b), d.id)
		fc.rng.Uniform(mask)
		for j, u := range mask {
			// u is k/2²⁴, so u ≥ p has probability 1 − ⌈p·2²⁴⌉/2²⁴.
			if float64(u) >= d.p {
				mask[j] = d.scale
			} else {
				mask[j] = 0
			}
		}
		rows := out[b*n*size : (b+1)*n*size]
		for i := 0; i < n; i++ {
			row := rows[i*size : (i+1)*size]
			for j, m := range mask {
				row[j] *= m
			}
		}
	}
}

func (d *dropout) inPlace() bool                                  { return true }
func (d *dropout) outSize() int                                   { return d.s.size() }
func (d *dropout) scratchSize(_, _ int, _ Strategy, _ bool) int64 { return int64(d.s.size()) }
func (d *dropout) stochastic() bool                               { return true }
