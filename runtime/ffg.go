package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// ffg is bayesianize's fully factorised Gaussian over the weights ("ffg"): W = M + S ⊙ ε with
// S = softplus(ρ), clamped at max_sd.
type ffg struct {
	dOut, dIn, k int
	hasBias      bool
	m, s         []float32 // dOut × dIn, bias as last column
	s2           []float32 // S², for the local strategy
	kl           float64
}

func loadFFG(b *builder, ls *LayerSpec, dOut, dIn int) (*ffg, error) {
	f := &ffg{dOut: dOut, dIn: dIn, k: dIn, hasBias: ls.Bias}
	if ls.Bias {
		f.k--
	}
	name := ls.Name
	t, err := b.layerTensors(name, LayerTensors(ls), 0)
	if err != nil {
		return nil, err
	}
	wm, ws, bm, bs := t["weight_mean"], t["_weight_sd"], t["bias_mean"], t["_bias_sd"]
	// Prior buffers (bayesianize stores them in the state_dict); absent ones are the spec's
	// constant prior (PriorDefault), never materialised.
	prior := func(field string) priorBuf {
		if v, ok := t[field]; ok {
			return priorBuf{v: v}
		}
		c, _ := PriorDefault(ls, field)
		return priorBuf{c: c}
	}
	pwm, pws := prior("prior_weight_mean"), prior("prior_weight_sd")
	var pbm, pbs priorBuf
	if ls.Bias {
		pbm, pbs = prior("prior_bias_mean"), prior("prior_bias_sd")
	}
	for _, ps := range []struct {
		field string
		buf   priorBuf
	}{{"prior_weight_sd", pws}, {"prior_bias_sd", pbs}} {
		for i, v := range ps.buf.v {
			if !(v > 0) {
				// A prior of zero or negative scale: the KL's log(ps/s) is −Inf or NaN.
				return nil, fmt.Errorf("runtime: layer %q (ffg): tensor %q: entry %d is %g; a prior standard deviation must be positive", name, b.fullName(name, ps.field), i, v)
			}
		}
	}
	sd := func(raw float32) float64 {
		v := softplus(float64(raw))
		if p := ls.Posterior.MaxSD; p != nil {
			v = math.Min(v, *p)
		}
		return v
	}
	klTerm := func(m, s, pm, ps float64) float64 {
		return math.Log(ps/s) + (s*s+(m-pm)*(m-pm))/(2*ps*ps) - 0.5
	}
	f.m, f.s, f.s2 = make([]float32, dOut*dIn), make([]float32, dOut*dIn), make([]float32, dOut*dIn)
	for o := 0; o < dOut; o++ {
		for j := 0; j < f.k; j++ {
			s := sd(ws[o*f.k+j])
			f.m[o*dIn+j], f.s[o*dIn+j] = wm[o*f.k+j], float32(s)
			f.kl += klTerm(float64(wm[o*f.k+j]), s, pwm.at(o*f.k+j), pws.at(o*f.k+j))
		}
		if ls.Bias {
			s := sd(bs[o])
			f.m[o*dIn+f.k], f.s[o*dIn+f.k] = bm[o], float32(s)
			f.kl += klTerm(float64(bm[o]), s, pbm.at(o), pbs.at(o))
		}
	}
	for i, v := range f.s {
		if !(v > 0) {
			return nil, fmt.Errorf("runtime: layer %q (ffg): standard deviation %d is %g", name, i, v)
		}
		f.s2[i] = v * v
	}
	return f, nil
}

// priorBuf is one of an FFG layer's prior buffers: the stored tensor v, or the constant c when
// the file leaves the buffer out.
type priorBuf struct {
	v []float32
	c float32
}

func (p priorBuf) at(i int) float64 {
	if p.v != nil {
		return float64(p.v[i])
	}
	return float64(p.c)
}

// ffgPriorSD is an FFG layer's prior standard deviation for its weights or its biases:
// PriorSD, the biases' PriorBiasSD when set, and 1 (bayesianize's prior_weight_sd default) for a
// spec without PriorSD.
func ffgPriorSD(p *PosteriorSpec, bias bool) float64 {
	if bias && p.PriorBiasSD > 0 {
		return p.PriorBiasSD
	}
	if p.PriorSD > 0 {
		return p.PriorSD
	}
	return 1
}

// PriorDefault returns the value an FFG layer's optional prior buffer (field prior_weight_mean,
// prior_weight_sd, prior_bias_mean or prior_bias_sd) takes when the file does not store it: 0
// for the means, the weights' and the biases' prior standard deviation (PriorSD, PriorBiasSD)
// for the sds. ok is false for any other field or posterior kind. The buffers matter only for
// the layer's KL (inspect); a writer may leave out any buffer whose values all equal the
// default (OmitPrior), which halves a file of mean-field Gaussian layers.
func PriorDefault(ls *LayerSpec, field string) (v float32, ok bool) {
	p := ls.Posterior
	if p == nil || p.Kind != KindFFG {
		return 0, false
	}
	switch field {
	case "prior_weight_mean", "prior_bias_mean":
		return 0, true
	case "prior_weight_sd":
		return float32(ffgPriorSD(p, false)), true
	case "prior_bias_sd":
		return float32(ffgPriorSD(p, true)), true
	}
	return 0, false
}

// OmitPrior reports whether the prior buffer field of layer ls may be left out of a model file:
// every value of v equals PriorDefault's, so the loader rebuilds it exactly.
func OmitPrior(ls *LayerSpec, field string, v []float32) bool {
	c, ok := PriorDefault(ls, field)
	if !ok {
		return false
	}
	for _, x := range v {
		if x != c {
			return false
		}
	}
	return true
}

func (f *ffg) weightScratch() int { return 0 }

func (f *ffg) sampleWeight(_ *fwdCtx, rng *kernels.Stream, w, _ []float32) {
	rng.Normal(w)
	for i := range w {
		w[i] = f.m[i] + f.s[i]*w[i]
	}
}

func (f *ffg) meanWeight(w, _ []float32) { copy(w, f.m) }

// Local: prep holds, per input, the output mean (dOut values) and standard deviation (dOut),
// followed by scratch for the squared inputs.
func (f *ffg) prepSize(n int) int64 { return prod(n, 2*f.dOut+f.k) }

func (f *ffg) prepare(in []float32, n int, prep []float32) {
	mean, sd := prep[:n*f.dOut], prep[n*f.dOut:2*n*f.dOut]
	sq := prep[2*n*f.dOut : 2*n*f.dOut+n*f.k]
	localMoments(f.m, f.dOut, f.s2, f.dOut, f.k, f.dIn, f.hasBias, in, n, mean, sd, sq)
}

func (f *ffg) applyScratch(_, B int) int64 { return int64(f.dOut) }

// apply draws samples fc.sample … fc.sample+B−1 for n inputs each (out is B × n × dOut); prep
// holds n rows shared by the samples, or B·n rows.
func (f *ffg) apply(fc *fwdCtx, id uint32, prep []float32, shared bool, out []float32, n, B int, scratch []float32) {
	gaussianLocalApply(fc, id, f.dOut, prep, shared, out, n, B, scratch)
}

// gaussianLocalApply draws the outputs of a layer with independent Gaussian outputs: prep holds
// their means and then their standard deviations (pn × dOut each, pn = n when shared, else B·n);
// sample b's normals are the first dOut of the stream (seed, fc.sample+b, id).
func gaussianLocalApply(fc *fwdCtx, id uint32, dOut int, prep []float32, shared bool, out []float32, n, B int, scratch []float32) {
	pn := B * n
	if shared {
		pn = n
	}
	mean, sd := prep[:pn*dOut], prep[pn*dOut:2*pn*dOut]
	e := scratch[:dOut]
	for b := 0; b < B; b++ {
		if !fc.mean {
			fc.rng.Reset(fc.seed, uint32(fc.sample+b), id)
			fc.rng.Normal(e)
		}
		for i := 0; i < n; i++ {
			r, q := b*n+i, b*n+i
			if shared {
				q = i
			}
			o := out[r*dOut : (r+1)*dOut]
			copy(o, mean[q*dOut:(q+1)*dOut])
			if fc.mean {
				continue
			}
			s := sd[q*dOut : (q+1)*dOut]
			for j := range o {
				o[j] += s[j] * e[j]
			}
		}
	}
}

func (f *ffg) localCost(n int) int64 { return prod(n, 2, f.dOut, f.dIn) + prod(n+normalCost, f.dOut) }
func (f *ffg) weightCost() int64     { return prod(1+normalCost, f.dOut, f.dIn) }
func (f *ffg) prepCost(n int) int64  { return prod(n, 2, f.dOut, f.dIn) }
