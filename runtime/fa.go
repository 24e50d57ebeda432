package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// faStream is the stream id of the FA latent h, shared by every layer of one sample.
const faStream = math.MaxUint32

// faPosterior is q(θ) = N(c, F Fᵀ + diag ψ) over the flattened parameters (MATH.md §2).
type faPosterior struct {
	dim, rank int
	c, f, psi []float32 // D, D×K, D
}

func loadFA(s *FASpec, b *builder) (*faPosterior, error) {
	fa := &faPosterior{dim: s.Dim, rank: s.Rank}
	t, err := b.layerTensors(FALayer, FATensors(s), 0)
	if err != nil {
		return nil, err
	}
	fa.c, fa.f, fa.psi = t["mean"], t["factors"], t["psi"]
	for i, v := range fa.psi {
		if !(v >= 0) || math.IsInf(float64(v), 0) {
			return nil, fmt.Errorf("runtime: tensor \"fa.psi\": entry %d is %g; variances must be finite and non-negative", i, v)
		}
	}
	return fa, nil
}

// faLayer is one layer's slice of the FA posterior, gathered into weight-matrix layout (dOut × dIn,
// bias last column): stacked = [C_W; F_W,1; …; F_W,K] and sqrt(ψ_W).
type faLayer struct {
	dOut, dIn, k, rank int
	hasBias            bool
	stacked            []float32 // (K+1)·dOut × dIn
	psi, sqrtPsi       []float32 // dOut × dIn
}

// layer takes the next slice of the parameter vector: the layer's weight (dOut × k, row-major) then
// its bias (dOut).
func (fa *faPosterior) layer(b *builder, ls *LayerSpec, dOut, k, dIn int) (*faLayer, error) {
	n := dOut * dIn
	off := b.faOffset
	if off+n > fa.dim {
		return nil, fmt.Errorf("runtime: layer %q (fa): parameters %d..%d exceed the fa dimension %d", ls.Name, off, off+n, fa.dim)
	}
	b.faOffset += n
	l := &faLayer{dOut: dOut, dIn: dIn, k: k, rank: fa.rank, hasBias: ls.Bias,
		stacked: make([]float32, (fa.rank+1)*n), psi: make([]float32, n), sqrtPsi: make([]float32, n)}
	for o := 0; o < dOut; o++ {
		for j := 0; j < dIn; j++ {
			var src int
			if j < k {
				src = off + o*k + j
			} else {
				src = off + dOut*k + o
			}
			dst := o*dIn + j
			l.stacked[dst] = fa.c[src]
			for r := 0; r < fa.rank; r++ {
				l.stacked[(r+1)*n+dst] = fa.f[src*fa.rank+r]
			}
			l.psi[dst] = fa.psi[src]
			l.sqrtPsi[dst] = float32(math.Sqrt(float64(fa.psi[src])))
		}
	}
	return l, nil
}

func (l *faLayer) weightScratch() int { return 0 }

// sampleWeight draws W = C + Σ_k h_k F_k + √ψ ⊙ z with the sample's shared h.
func (l *faLayer) sampleWeight(fc *fwdCtx, rng *kernels.Stream, w, _ []float32) {
	n := l.dOut * l.dIn
	rng.Normal(w[:n])
	for i := range w[:n] {
		w[i] = l.stacked[i] + l.sqrtPsi[i]*w[i]
	}
	for r, h := range fc.faH {
		kernels.Axpy(h, l.stacked[(r+1)*n:(r+2)*n], w[:n])
	}
}

func (l *faLayer) meanWeight(w, _ []float32) { copy(w, l.stacked[:l.dOut*l.dIn]) }

// Local (MATH.md §2): prep holds per input the projections [C x̃, F_1 x̃, …, F_K x̃] ((K+1)·dOut
// values), then per input √(ψ (x̃⊙x̃)) (dOut), then scratch for the squared inputs.
func (l *faLayer) prepSize(n int) int64 { return prod(n, l.rank+2, l.dOut) + prod(n, l.k) }

func (l *faLayer) prepare(in []float32, n int, prep []float32) {
	rows := (l.rank + 1) * l.dOut
	proj := prep[:n*rows]
	sd := prep[n*rows : n*rows+n*l.dOut]
	sq := prep[n*rows+n*l.dOut : n*rows+n*l.dOut+n*l.k]
	localMoments(l.stacked, rows, l.psi, l.dOut, l.k, l.dIn, l.hasBias, in, n, proj, sd, sq)
}

func (l *faLayer) applyScratch(_, B int) int64 { return int64(l.dOut) }

// apply draws samples fc.sample … fc.sample+B−1 for n inputs each (out is B × n × dOut), sample b
// with its shared h in fc.faHs[b·rank:]; prep holds n rows shared by the samples, or B·n rows.
func (l *faLayer) apply(fc *fwdCtx, id uint32, prep []float32, shared bool, out []float32, n, B int, scratch []float32) {
	pn := B * n
	if shared {
		pn = n
	}
	rows := (l.rank + 1) * l.dOut
	sd := prep[pn*rows : pn*rows+pn*l.dOut]
	e := scratch[:l.dOut]
	for b := 0; b < B; b++ {
		if !fc.mean {
			fc.rng.Reset(fc.seed, uint32(fc.sample+b), id)
			fc.rng.Normal(e)
		}
		h := fc.faHs[b*l.rank : (b+1)*l.rank]
		for i := 0; i < n; i++ {
			r, q := b*n+i, b*n+i
			if shared {
				q = i
			}
			o := out[r*l.dOut : (r+1)*l.dOut]
			p := prep[q*rows : (q+1)*rows]
			copy(o, p[:l.dOut])
			if fc.mean {
				continue
			}
			for k, hk := range h {
				kernels.Axpy(hk, p[(k+1)*l.dOut:(k+2)*l.dOut], o)
			}
			s := sd[q*l.dOut : (q+1)*l.dOut]
			for j := range o {
				o[j] += s[j] * e[j]
			}
		}
	}
}

func (l *faLayer) localCost(n int) int64 {
	return prod(n, l.rank+2, l.dOut, l.dIn) + (prod(n, l.rank+1)+normalCost)*int64(l.dOut)
}
func (l *faLayer) weightCost() int64    { return prod(l.rank+1+normalCost, l.dOut, l.dIn) }
func (l *faLayer) prepCost(n int) int64 { return prod(n, l.rank+2, l.dOut, l.dIn) }
