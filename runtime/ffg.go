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
	// Prior buffers (bayesianize stores them in the state_dict); default N(0, prior_sd²).
	prior := func(name string, n int, def float64) []float32 {
		if v, ok := t[name]; ok {
			return v
		}
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(def)
		}
		return out
	}
	nw := dOut * f.k
	pwm, pws := prior("prior_weight_mean", nw, 0), prior("prior_weight_sd", nw, ls.Posterior.PriorSD)
	var pbm, pbs []float32
	if ls.Bias {
		pbm, pbs = prior("prior_bias_mean", dOut, 0), prior("prior_bias_sd", dOut, ls.Posterior.PriorSD)
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
			f.kl += klTerm(float64(wm[o*f.k+j]), s, float64(pwm[o*f.k+j]), float64(pws[o*f.k+j]))
		}
		if ls.Bias {
			s := sd(bs[o])
			f.m[o*dIn+f.k], f.s[o*dIn+f.k] = bm[o], float32(s)
			f.kl += klTerm(float64(bm[o]), s, float64(pbm[o]), float64(pbs[o]))
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
func (f *ffg) prepSize(n int) int { return n * (2*f.dOut + f.k) }

func (f *ffg) prepare(in []float32, n int, prep []float32) {
	mean, sd := prep[:n*f.dOut], prep[n*f.dOut:2*n*f.dOut]
	sq := prep[2*n*f.dOut : 2*n*f.dOut+n*f.k]
	localMoments(f.m, f.dOut, f.s2, f.dOut, f.k, f.dIn, f.hasBias, in, n, mean, sd, sq)
}

func (f *ffg) applyScratch(_, B int) int { return f.dOut }

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

func (f *ffg) localCost(n int) int { return n*2*f.dOut*f.dIn + (n+normalCost)*f.dOut }
func (f *ffg) weightCost() int     { return (1 + normalCost) * f.dOut * f.dIn }
func (f *ffg) prepCost(n int) int  { return n * 2 * f.dOut * f.dIn }
