package runtime

import (
	"fmt"

	"github.com/edgebnn/edgebnn/kernels"
)

// Posterior is the mean and covariance of a model's flattened parameter vector θ: every Linear and
// Conv2d layer in network order (residual blocks: body, then shortcut), each layer's weight in
// PyTorch layout (row-major) followed by its bias — the order the FA posterior uses (FASpec).
type Posterior struct {
	// Dim is the length D of θ.
	Dim int
	// Mean is E[θ] (D values).
	Mean []float64
	// Cov is Cov(θ), D×D row-major.
	Cov []float64
	// Exact reports that every layer's moments are in closed form (true for every posterior kind
	// the runtime supports).
	Exact bool
	// Layers lists the parametric layers and their slices of θ.
	Layers []PosteriorLayer
}

// PosteriorLayer is one parametric layer's slice θ[Offset : Offset+Size].
type PosteriorLayer struct {
	Name   string
	Kind   string
	Offset int
	Size   int
	// Exact reports that the layer's moments are in closed form.
	Exact bool
}

// MaxPosteriorDim bounds the dimension of a dense covariance (its D² entries must fit in an int
// and in memory on 32-bit boards): Posterior refuses larger models whatever its maxDim.
const MaxPosteriorDim = 16384

// Posterior returns the exact mean and covariance of the flattened parameter vector for models
// with at most maxDim parameters (it refuses larger ones): deterministic layers have zero
// covariance (in an ensemble model, Members > 1, the mixture over the members: their average
// weights and the between-member covariance, cross-layer blocks included); FFG layers a diagonal one; FCG layers L Lᵀ; FA layers c and F Fᵀ + diag ψ (cross-layer blocks
// included); inducing layers the moments of the extended Matheron rule the sampler uses — mean
// σ R E[u] C and covariance σ²λ²(I − P ⊗ Q − Pᵀ ⊗ Qᵀ + Σᵢ R Aᵢ Rᵀ ⊗ Cᵀ Bᵢ C) (the Kronecker form
// of MATH.md §1's σ²λ²(I − P_c ⊗ P_r) with the sampler's jittered factors) plus the q(U) term
// propagated through the whitening and the R·C maps; ensemble layers the exact mixture moments
// over the member index that all layers share in one forward pass. A mixture of posteriors has
// the mixture's moments: mean (1/M) Σₖ μₖ and covariance (1/M) Σₖ (Σₖ + μₖ μₖᵀ) − μ μᵀ.
func (m *Model) Posterior(maxDim int) (*Posterior, error) {
	if !m.use() {
		return nil, ErrClosed
	}
	defer m.done()
	if m.parts != nil {
		return m.mixturePosterior(maxDim)
	}
	if m.glob != nil {
		return nil, fmt.Errorf("runtime: posterior: the global inducing posterior (global_u) correlates every layer's weights through U_{1:L}; its weight covariance is not implemented")
	}
	var layers []*dense
	var mcDropout *dropout
	var total int64 // all the layers' parameters (int64: 4096 layers of 2^28 overflow 32 bits)
	var walk func(ns []node)
	walk = func(ns []node) {
		for _, n := range ns {
			switch v := n.(type) {
			case *dense:
				layers = append(layers, v)
				total += int64(v.dOut) * int64(v.dIn)
			case *dropout:
				mcDropout = v
			case *residual:
				walk(v.body)
				walk(v.shortcut)
			}
		}
	}
	walk(m.nodes)
	if mcDropout != nil {
		// Its randomness is a Bernoulli mask on activations, not a distribution over the
		// weights: reporting the layers' point weights with zero covariance, "exact", misstated
		// a model whose predictions vary. Refused, like the global inducing posterior above.
		return nil, fmt.Errorf("runtime: posterior: the model samples MC dropout (p = %g) at prediction time: its randomness is a mask on activations, not a weight posterior with a mean and covariance to report", mcDropout.p)
	}
	if maxDim < 1 {
		return nil, fmt.Errorf("runtime: posterior: max dimension %d must be positive", maxDim)
	}
	if total > int64(min(maxDim, MaxPosteriorDim)) {
		return nil, &PosteriorDimError{Params: total, Limit: int64(min(maxDim, MaxPosteriorDim))}
	}
	p := &Posterior{Exact: true}
	for _, d := range layers {
		size := d.dOut * d.dIn
		kind := KindDeterministic
		switch d.post.(type) {
		case *ffg, *prunedFFG:
			kind = KindFFG
		case *faLayer:
			kind = KindFA
		case *inducing:
			kind = KindInducing
		case *bernstein:
			kind = KindBernstein
		case *fcg:
			kind = KindFCG
		}
		p.Layers = append(p.Layers, PosteriorLayer{Name: d.name, Kind: kind, Offset: p.Dim, Size: size, Exact: true})
		p.Dim += size
	}
	if p.Dim == 0 {
		return nil, fmt.Errorf("runtime: posterior: the model has no linear or conv layers")
	}
	dim := p.Dim
	p.Mean = make([]float64, dim)
	p.Cov = make([]float64, dim*dim)
	// Ensemble layers: their means depend on the shared member index; collect them for the
	// mixture.
	type ensLayer struct {
		idx   []int
		means [][]float64
	}
	var ens []ensLayer
	var faRows []float64 // D×K rows of F for the FA parameters (zero elsewhere)
	faRank := 0
	if m.fa != nil {
		faRank = m.fa.rank
		faRows = make([]float64, dim*faRank)
	}
	for li, d := range layers {
		idx := paramIndex(d, p.Layers[li].Offset)
		n := d.dOut * d.dIn
		switch post := d.post.(type) {
		case nil:
			// One network, or the members of an ensemble model (a mixture over the member index,
			// which all layers share, as for Ensemble-U below).
			w := make([]float32, n)
			var members [][]float64
			for e := range d.det {
				d.weightMatrix(e, w)
				members = append(members, to64(w))
			}
			for a := 0; a < n; a++ {
				p.Mean[idx[a]] = members[0][a]
			}
			if len(members) > 1 {
				ens = append(ens, ensLayer{idx: idx, means: members})
			}
		case *ffg:
			for i := 0; i < n; i++ {
				p.Mean[idx[i]] = float64(post.m[i])
				s := float64(post.s[i])
				p.Cov[idx[i]*dim+idx[i]] = s * s
			}
		case *prunedFFG:
			// Pruned weights are exactly zero: mean 0 and variance 0.
			for o := 0; o < post.dOut; o++ {
				for q := post.rowptr[o]; q < post.rowptr[o+1]; q++ {
					i := o*post.dIn + int(post.col[q])
					p.Mean[idx[i]] = float64(post.m[q])
					s := float64(post.s[q])
					p.Cov[idx[i]*dim+idx[i]] = s * s
				}
				if post.hasBias {
					i := o*post.dIn + post.k
					p.Mean[idx[i]] = float64(post.bm[o])
					s := float64(post.bs[o])
					p.Cov[idx[i]*dim+idx[i]] = s * s
				}
			}
		case *fcg:
			// θ's own order is the layer's slice of the flattened vector: L Lᵀ directly.
			cov := post.covariance()
			for a := 0; a < n; a++ {
				p.Mean[idx[a]] = float64(post.m[a])
			}
			off := p.Layers[li].Offset
			for r := 0; r < n; r++ {
				copy(p.Cov[(off+r)*dim+off:(off+r)*dim+off+n], cov[r*n:(r+1)*n])
			}
		case *bernstein:
			// The sampler's own moments (piecewise-linear quantile function), not the flow's.
			for i := 0; i < n; i++ {
				mu, v := post.moments(i)
				p.Mean[idx[i]] = mu
				p.Cov[idx[i]*dim+idx[i]] = v
			}
		case *faLayer:
			for i := 0; i < n; i++ {
				p.Mean[idx[i]] = float64(post.stacked[i])
				p.Cov[idx[i]*dim+idx[i]] += float64(post.psi[i])
				for r := 0; r < faRank; r++ {
					faRows[idx[i]*faRank+r] = float64(post.stacked[(r+1)*n+i])
				}
			}
		case *inducing:
			mean, cov, members := post.moments()
			for a := 0; a < n; a++ {
				p.Mean[idx[a]] = mean[a]
				row := p.Cov[idx[a]*dim:]
				for b := 0; b < n; b++ {
					row[idx[b]] += cov[a*n+b]
				}
			}
			if members != nil {
				ens = append(ens, ensLayer{idx: idx, means: members})
			}
		}
	}
	// FA: add F Fᵀ over all FA parameters (cross-layer blocks included).
	if faRank > 0 {
		for a := 0; a < dim; a++ {
			fa := faRows[a*faRank : (a+1)*faRank]
			if allZero(fa) {
				continue
			}
			for b := 0; b < dim; b++ {
				fb := faRows[b*faRank : (b+1)*faRank]
				s := 0.0
				for r := range fa {
					s += fa[r] * fb[r]
				}
				p.Cov[a*dim+b] += s
			}
		}
	}
	if len(ens) > 0 {
		// Member of layer l in sample s is s mod K_l: the joint mixture is uniform over
		// s = 0 … lcm(K_l) − 1.
		period := 1
		for _, e := range ens {
			period = lcm(period, len(e.means))
			if period > 1024 {
				return nil, fmt.Errorf("runtime: posterior: the ensemble sizes' common period exceeds 1024 members")
			}
		}
		// mean of the mixture
		for _, e := range ens {
			for a, i := range e.idx {
				s := 0.0
				for _, mu := range e.means {
					s += mu[a]
				}
				p.Mean[i] = s / float64(len(e.means))
			}
		}
		// between-member covariance: (1/P) Σ_s (μ(s) − μ̄)(μ(s) − μ̄)ᵀ over ensemble entries.
		var all []int
		for _, e := range ens {
			all = append(all, e.idx...)
		}
		dev := make([]float64, len(all))
		for s := 0; s < period; s++ {
			pos := 0
			for _, e := range ens {
				mu := e.means[s%len(e.means)]
				for a, i := range e.idx {
					dev[pos] = mu[a] - p.Mean[i]
					pos++
				}
			}
			w := 1 / float64(period)
			for a, ia := range all {
				if dev[a] == 0 {
					continue
				}
				row := p.Cov[ia*dim:]
				for b, ib := range all {
					row[ib] += w * dev[a] * dev[b]
				}
			}
		}
	}
	return p, nil
}

func allZero(x []float64) bool {
	for _, v := range x {
		if v != 0 {
			return false
		}
	}
	return true
}

func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// paramIndex maps a weight-matrix entry (o, j) of the dOut × dIn layout (bias last column) to its
// position in θ: the weight (o·k + j) then the bias (dOut·k + o), after offset.
func paramIndex(d *dense, offset int) []int {
	idx := make([]int, d.dOut*d.dIn)
	for o := 0; o < d.dOut; o++ {
		for j := 0; j < d.k; j++ {
			idx[o*d.dIn+j] = offset + o*d.k + j
		}
		if d.hasBias {
			idx[o*d.dIn+d.k] = offset + d.dOut*d.k + o
		}
	}
	return idx
}

// moments returns the mean and covariance (n×n, n = dOut·dIn, weight-matrix layout) of the
// inducing layer's weights, exactly as its sampler draws them (float64 arithmetic on the stored
// factors). For ensembles the mean is member 0's, the covariance is the within-member one, and
// members holds every member's mean.
func (l *inducing) moments() (mean, cov []float64, members [][]float64) {
	mo, mi, dOut, dIn := l.mo, l.mi, l.dOut, l.dIn
	n := dOut * dIn
	sigma, lam := float64(l.sigma), float64(l.lamda)
	r := to64(l.r)   // dOut × mo
	zr := to64(l.zr) // mo × dOut
	zc := to64(l.zc) // mi × dIn
	c := to64(l.c)   // mi × dIn
	dr, dc := to64(l.dr), to64(l.dc)
	lhr, lhc := to64(l.lhatR), to64(l.lhatC)
	// Noise: λ(E1 − R Ū C), Ū = Z_r E1 Z_cᵀ + L̂_r E2 D_c + D_r E3 L̂_cᵀ + D_r E4 D_c.
	// Cov = λ²(I − Pᵀ⊗Q − P⊗Qᵀ + Σᵢ (R Aᵢ Rᵀ) ⊗ (Cᵀ Bᵢ C)) with P = R Z_r, Q = Z_cᵀ C.
	pm := kernels.MatMul(false, false, dOut, dOut, mo, r, zr)
	qm := kernels.MatMul(true, false, dIn, dIn, mi, zc, c)
	cov = make([]float64, n*n)
	kron := func(s float64, a []float64, transA bool, b []float64, transB bool) {
		for o := 0; o < dOut; o++ {
			for o2 := 0; o2 < dOut; o2++ {
				av := a[o*dOut+o2]
				if transA {
					av = a[o2*dOut+o]
				}
				if av == 0 {
					continue
				}
				av *= s
				for j := 0; j < dIn; j++ {
					row := cov[(o*dIn+j)*n+o2*dIn:]
					for j2 := 0; j2 < dIn; j2++ {
						bv := b[j*dIn+j2]
						if transB {
							bv = b[j2*dIn+j]
						}
						row[j2] += av * bv
					}
				}
			}
		}
	}
	s2l2 := sigma * sigma * lam * lam
	for i := 0; i < n; i++ {
		cov[i*n+i] += s2l2
	}
	kron(-s2l2, pm, true, qm, false)
	kron(-s2l2, pm, false, qm, true)
	diag := func(v []float64) []float64 {
		out := make([]float64, len(v)*len(v))
		for i, x := range v {
			out[i*len(v)+i] = x * x
		}
		return out
	}
	aS := [][]float64{kernels.MatMul(false, true, mo, mo, dOut, zr, zr), kernels.MatMul(false, true, mo, mo, mo, lhr, lhr), diag(dr), diag(dr)}
	bS := [][]float64{kernels.MatMul(false, true, mi, mi, dIn, zc, zc), diag(dc), kernels.MatMul(false, true, mi, mi, mi, lhc, lhc), diag(dc)}
	for i := range aS {
		ra := kernels.MatMul(false, true, dOut, dOut, mo, kernels.MatMul(false, false, dOut, mo, mo, r, aS[i]), r)
		cb := kernels.MatMul(true, false, dIn, dIn, mi, c, kernels.MatMul(false, false, mi, dIn, mi, bS[i], c))
		kron(s2l2, ra, false, cb, false)
	}
	// q(U): W_u = σ R' u C' with R' = R L_r, C' = L_cᵀ C when whitened.
	rp, cp := r, c
	if l.whitened {
		rp = kernels.MatMul(false, false, dOut, mo, mo, r, to64(l.lr))
		cp = kernels.MatMul(true, false, mi, dIn, mi, to64(l.lc), c)
	}
	// mapU returns vec(σ R' U C') (weight layout) for a mo × mi matrix U.
	mapU := func(u []float64) []float64 {
		return scale64(sigma, kernels.MatMul(false, false, dOut, dIn, mo, rp, kernels.MatMul(false, false, mo, dIn, mi, u, cp)))
	}
	addOuter := func(v []float64) {
		for a, va := range v {
			if va == 0 {
				continue
			}
			row := cov[a*n : (a+1)*n]
			for b, vb := range v {
				row[b] += va * vb
			}
		}
	}
	d := mo * mi
	switch l.q {
	case qEnsemble:
		for _, u := range l.members { // already whitened: W = σ R u C
			members = append(members, scale64(sigma, kernels.MatMul(false, false, dOut, dIn, mo, r, kernels.MatMul(false, false, mo, dIn, mi, to64(u), c))))
		}
		return members[0], cov, members
	case qDiagonal:
		e := make([]float64, d)
		for i, s := range l.sd {
			clear(e)
			e[i] = float64(s)
			addOuter(mapU(e))
		}
	case qFull:
		col := make([]float64, d)
		for cI := 0; cI < d; cI++ {
			for a := 0; a < d; a++ {
				col[a] = float64(l.tril[a*d+cI])
			}
			addOuter(mapU(col))
		}
	case qMatrix:
		lrow, lcol := to64(l.rowTril), to64(l.colTril)
		rl := kernels.MatMul(false, false, dOut, mo, mo, rp, lrow) // R' L_row
		lc := kernels.MatMul(true, false, mi, dIn, mi, lcol, cp)   // L_colᵀ C'
		kron(sigma*sigma, kernels.MatMul(false, true, dOut, dOut, mo, rl, rl), false, kernels.MatMul(true, false, dIn, dIn, mi, lc, lc), false)
	}
	mean = mapU(to64(l.mean))
	return mean, cov, nil
}

func scale64(s float64, x []float64) []float64 {
	for i := range x {
		x[i] *= s
	}
	return x
}

// mixturePosterior is Posterior for a mixture of posteriors, from its members' moments.
func (m *Model) mixturePosterior(maxDim int) (*Posterior, error) {
	var p *Posterior
	M := float64(len(m.parts))
	for k, part := range m.parts {
		q, err := part.Posterior(maxDim)
		if err != nil {
			return nil, fmt.Errorf("runtime: posterior: mixture member %d: %w", k, err)
		}
		if p == nil {
			p = &Posterior{Dim: q.Dim, Mean: make([]float64, q.Dim), Cov: make([]float64, q.Dim*q.Dim), Exact: true, Layers: q.Layers}
		}
		p.Exact = p.Exact && q.Exact
		d := q.Dim
		for i, mu := range q.Mean {
			p.Mean[i] += mu / M
			row := p.Cov[i*d : (i+1)*d]
			for j, c := range q.Cov[i*d : (i+1)*d] {
				row[j] += (c + mu*q.Mean[j]) / M
			}
		}
	}
	d := p.Dim
	for i, mu := range p.Mean {
		row := p.Cov[i*d : (i+1)*d]
		for j := range row {
			row[j] -= mu * p.Mean[j]
		}
	}
	return p, nil
}

// PosteriorDimError is Model.Posterior's error for a model with more weight parameters than the
// limit (its max dimension, at most MaxPosteriorDim) on the dense covariance.
type PosteriorDimError struct {
	Params, Limit int64
}

func (e *PosteriorDimError) Error() string {
	return fmt.Sprintf("runtime: posterior: the model has %d parameters, more than the limit %d for a dense covariance", e.Params, e.Limit)
}
