package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// SparseDensity is the density (kept weights ÷ weights) of a pruned FFG layer below which the
// runtime multiplies by its sampled weights in compressed sparse rows; at or above it, it expands
// each sample into a dense matrix and uses the dense GEMM. BenchmarkPrunedFFG measures both in
// the same run (a 784 → 256 layer, 8 samples of 100 inputs, CPU time on an x86-64 host with AVX2):
// CSR/dense = 0.26 at density 0.001, 0.43 at 0.01, 0.68 at 0.02, 1.00 at 0.03, 1.36 at 0.05 and
// 6.1 at 0.5 by weight sampling; 0.41, 0.59, 0.76, 0.93, 1.27 and 7.0 by local sampling
// (docs/results/prunetab.md).
const SparseDensity = 0.03

// prunedFFG is an FFG layer whose weights were pruned (PosteriorSpec.Pruned): W = M + S ⊙ ε on the
// kept weights, exactly zero elsewhere. Only the kept weights are held, in compressed sparse rows
// of the dOut × k weight matrix; the biases (never pruned) are dense.
type prunedFFG struct {
	dOut, dIn, k int
	hasBias      bool
	rowptr       []int32   // dOut+1 offsets into col, m, s
	col          []int32   // column of each kept weight
	m, s         []float32 // mean and standard deviation of each kept weight
	bm, bs       []float32 // bias means and standard deviations (nil without a bias)
	// sparse selects the CSR products (density below SparseDensity).
	sparse bool
	// kl is the KL divergence of the kept weights and the biases from the N(0, prior_sd²) prior.
	kl float64
}

func loadPrunedFFG(b *builder, ls *LayerSpec, dOut, dIn int) (*prunedFFG, error) {
	f := &prunedFFG{dOut: dOut, dIn: dIn, k: dIn, hasBias: ls.Bias}
	if ls.Bias {
		f.k--
	}
	name := ls.Name
	index, err := b.blob(name, "weight_keep")
	if err != nil {
		return nil, err
	}
	idx, err := DecodeKeptIndex(index, dOut, f.k)
	if err != nil {
		return nil, fmt.Errorf("runtime: layer %q (pruned ffg): blob %q: %w", name, b.fullName(name, "weight_keep"), err)
	}
	kept := len(idx)
	t, err := b.layerTensors(name, LayerTensors(ls), kept)
	if err != nil {
		return nil, fmt.Errorf("%w (the index %q keeps %d weights)", err, b.fullName(name, "weight_keep"), kept)
	}
	wm, ws, bm, bs := t["weight_mean_kept"], t["_weight_sd_kept"], t["bias_mean"], t["_bias_sd"]
	sd := func(raw float32) float64 {
		v := softplus(float64(raw))
		if p := ls.Posterior.MaxSD; p != nil {
			v = math.Min(v, *p)
		}
		return v
	}
	klTerm := func(m, s float64, bias bool) float64 {
		ps := ffgPriorSD(ls.Posterior, bias)
		return math.Log(ps/s) + (s*s+m*m)/(2*ps*ps) - 0.5
	}
	// The means are finite (builder.tensor checks every value); a standard deviation can still
	// underflow to 0 or overflow.
	check := func(sdT string, i int, s float64) error {
		if !(s > 0) || math.IsInf(s, 0) {
			return fmt.Errorf("runtime: layer %q (pruned ffg): tensor %q: standard deviation %d is %g", name, b.fullName(name, sdT), i, s)
		}
		return nil
	}
	f.rowptr = make([]int32, dOut+1)
	f.col = make([]int32, kept)
	f.s = make([]float32, kept)
	f.m = wm // read only; may alias the file
	for i, v := range idx {
		o, j := int(v)/f.k, int(v)%f.k
		f.rowptr[o+1]++
		f.col[i] = int32(j)
		s := sd(ws[i])
		if err := check("_weight_sd_kept", i, s); err != nil {
			return nil, err
		}
		f.s[i] = float32(s)
		f.kl += klTerm(float64(wm[i]), s, false)
	}
	for o := 0; o < dOut; o++ {
		f.rowptr[o+1] += f.rowptr[o]
	}
	if ls.Bias {
		f.bm, f.bs = bm, make([]float32, dOut)
		for o := range bs {
			s := sd(bs[o])
			if err := check("_bias_sd", o, s); err != nil {
				return nil, err
			}
			f.bs[o] = float32(s)
			f.kl += klTerm(float64(bm[o]), s, true)
		}
	}
	f.sparse = float64(kept) < SparseDensity*float64(dOut*f.k)
	return f, nil
}

// kept is the number of kept weights.
func (f *prunedFFG) kept() int { return len(f.col) }

// normals is the number of standard normals one sample draws: the kept weights in row-major
// order, then the biases.
func (f *prunedFFG) normals() int { return len(f.col) + len(f.bm) }

func (f *prunedFFG) weightScratch() int { return f.normals() }

// sampleValues writes one sample of the kept weights into wv and of the biases into bv (a prefix
// of the stream (seed, sample, layer): kept weights first, then biases), or the means.
func (f *prunedFFG) sampleValues(rng *kernels.Stream, mean bool, wv, bv []float32) {
	if mean {
		copy(wv, f.m)
		copy(bv, f.bm)
		return
	}
	rng.Normal(wv)
	for i := range wv {
		wv[i] = f.m[i] + f.s[i]*wv[i]
	}
	rng.Normal(bv)
	for o := range bv {
		bv[o] = f.bm[o] + f.bs[o]*bv[o]
	}
}

// expand writes the dense dOut × dIn matrix (bias as the last column) of kept values wv and biases
// bv into w.
func (f *prunedFFG) expand(wv, bv, w []float32) {
	clear(w)
	for o := 0; o < f.dOut; o++ {
		row := w[o*f.dIn : (o+1)*f.dIn]
		for p := f.rowptr[o]; p < f.rowptr[o+1]; p++ {
			row[f.col[p]] = wv[p]
		}
		if f.hasBias {
			row[f.k] = bv[o]
		}
	}
}

func (f *prunedFFG) sampleWeight(_ *fwdCtx, rng *kernels.Stream, w, scratch []float32) {
	v := scratch[:f.normals()]
	f.sampleValues(rng, false, v[:f.kept()], v[f.kept():])
	f.expand(v[:f.kept()], v[f.kept():], w)
}

func (f *prunedFFG) meanWeight(w, _ []float32) { f.expand(f.m, f.bm, w) }

// sparseScratch is the scratch of the CSR weight-sampling path: one sample's values.
func (f *prunedFFG) sparseScratch() int { return f.normals() }

// forwardSparse draws the weights of sample fc.sample (or takes the means) and computes
// out = W x + b for n inputs with the CSR product.
func (f *prunedFFG) forwardSparse(fc *fwdCtx, id uint32, in, out []float32, n int, scratch []float32) {
	v := scratch[:f.normals()]
	wv, bv := v[:f.kept()], v[f.kept():]
	if !fc.mean {
		fc.rng.Reset(fc.seed, uint32(fc.sample), id)
	}
	f.sampleValues(&fc.rng, fc.mean, wv, bv)
	f.csrProject(wv, bv, in, n, out)
}

// csrProject computes out = X̃ Wᵀ for n inputs, W the kept values wv in CSR and bias bv.
func (f *prunedFFG) csrProject(wv, bv, in []float32, n int, out []float32) {
	for i := 0; i < n; i++ {
		x := in[i*f.k : (i+1)*f.k]
		y := out[i*f.dOut : (i+1)*f.dOut]
		for o := range y {
			acc := float32(0)
			for p := f.rowptr[o]; p < f.rowptr[o+1]; p++ {
				acc += wv[p] * x[f.col[p]]
			}
			if f.hasBias {
				acc += bv[o]
			}
			y[o] = acc
		}
	}
}

// Local: prep holds, per input, the output mean (dOut values) and standard deviation (dOut); the
// dense path adds the expanded M and S² matrices and the squared inputs.
func (f *prunedFFG) prepSize(n int) int64 {
	if f.sparse {
		return prod(2, n, f.dOut)
	}
	return prod(2, n, f.dOut) + prod(2, f.dOut, f.dIn) + prod(n, f.k)
}

func (f *prunedFFG) prepare(in []float32, n int, prep []float32) {
	mean, sd := prep[:n*f.dOut], prep[n*f.dOut:2*n*f.dOut]
	if f.sparse {
		f.csrProject(f.m, f.bm, in, n, mean)
		for i := 0; i < n; i++ {
			x := in[i*f.k : (i+1)*f.k]
			y := sd[i*f.dOut : (i+1)*f.dOut]
			for o := range y {
				acc := float32(0)
				for p := f.rowptr[o]; p < f.rowptr[o+1]; p++ {
					xv := x[f.col[p]]
					acc += f.s[p] * f.s[p] * xv * xv
				}
				if f.hasBias {
					acc += f.bs[o] * f.bs[o]
				}
				y[o] = float32(math.Sqrt(math.Max(float64(acc), 0)))
			}
		}
		return
	}
	rest := prep[2*n*f.dOut:]
	wm, ws2, sq := rest[:f.dOut*f.dIn], rest[f.dOut*f.dIn:2*f.dOut*f.dIn], rest[2*f.dOut*f.dIn:2*f.dOut*f.dIn+n*f.k]
	f.expand(f.m, f.bm, wm)
	f.expand(f.s, f.bs, ws2)
	for i, v := range ws2 {
		ws2[i] = v * v
	}
	localMoments(wm, f.dOut, ws2, f.dOut, f.k, f.dIn, f.hasBias, in, n, mean, sd, sq)
}

func (f *prunedFFG) applyScratch(_, _ int) int64 { return int64(f.dOut) }

func (f *prunedFFG) apply(fc *fwdCtx, id uint32, prep []float32, shared bool, out []float32, n, B int, scratch []float32) {
	gaussianLocalApply(fc, id, f.dOut, prep, shared, out, n, B, scratch)
}

func (f *prunedFFG) localCost(n int) int64 {
	if f.sparse {
		return prod(n, 3*f.kept()+2*f.dOut) + prod(n+normalCost, f.dOut)
	}
	return prod(n, 2, f.dOut, f.dIn) + prod(n+normalCost, f.dOut)
}

func (f *prunedFFG) weightCost() int64 { return prod(1+normalCost, f.normals()) + prod(f.dOut, f.dIn) }

func (f *prunedFFG) prepCost(n int) int64 {
	if f.sparse {
		return prod(n, 3*f.kept()+2*f.dOut)
	}
	return prod(n, 2, f.dOut, f.dIn)
}
