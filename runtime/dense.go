package runtime

import (
	"fmt"
	"math"
	"slices"

	"github.com/edgebnn/edgebnn/kernels"
)

// posterior is the weight distribution of one Linear or Conv2d layer. Weight matrices are
// dOut × dIn row-major with the bias (if any) as the last column, as in MATH.md §1.
type posterior interface {
	// sampleWeight writes one weight sample into w (dOut × dIn) drawing from rng; scratch has at
	// least weightScratch() values.
	sampleWeight(fc *fwdCtx, rng *kernels.Stream, w, scratch []float32)
	weightScratch() int
	// meanWeight writes the weight the layer uses at its posterior (conditional) mean; scratch
	// has at least weightScratch() values.
	meanWeight(w, scratch []float32)
	// Per-input ("local") sampling of a linear layer's outputs: prepare computes, for n inputs,
	// everything that depends only on the inputs (prepSize(n) values); apply then draws samples
	// fc.sample … fc.sample+B−1 of n outputs each (B × n rows, sample-major), sample s from the
	// stream (seed, s, id), from prep computed for B·n rows, or for n rows shared by every sample
	// (shared). prepare's result stays valid while the inputs do not change, so the predictor
	// computes it once for the first stochastic layer.
	prepSize(n int) int64
	prepare(in []float32, n int, prep []float32)
	applyScratch(n, B int) int64
	apply(fc *fwdCtx, id uint32, prep []float32, shared bool, out []float32, n, B int, scratch []float32)
	// localCost and weightCost estimate the cost per sample of each strategy for a batch of n
	// (used by Strategy Auto), in multiply-adds with each normal draw counted as normalCost.
	localCost(n int) int64
	weightCost() int64
	// prepCost is the part of localCost(n) spent in prepare, paid once per batch instead of once
	// per sample when the inputs are the same for every sample (the first stochastic layer).
	prepCost(n int) int64
}

// dense is a Linear or Conv2d layer.
type dense struct {
	name    string
	id      uint32
	conv    bool
	geom    kernels.ConvGeom
	in, out shape
	// dOut rows; k weight columns without the bias; dIn = k (+1 with a bias).
	dOut, k, dIn int
	hasBias      bool
	// det holds the deterministic weights (post == nil): one set, or one per member of an
	// ensemble model; sample s uses det[s mod len(det)].
	det  []detWeights
	post posterior
}

// detWeights are one network's weights of a deterministic layer: w is dOut × k with leading
// dimension ldw — or, when w16 is not nil (LoadOptions.KeepF16), w is nil and w16 holds them as
// binary16 values (dOut × k), widened into scratch each time the layer runs; bias may be nil.
// scale, when not nil, is the per-output factor of a BatchNorm that follows the layer: the layer
// computes (W x)·scale + bias, bias then holding b·scale + shift (foldBatchNorm), so w stays the
// model file's tensor, never copied.
type detWeights struct {
	w     []float32
	w16   []uint16
	ldw   int
	bias  []float32
	scale []float32
}

func (b *builder) dense(ls *LayerSpec, id, dOut, k int) (*dense, error) {
	d := &dense{name: ls.Name, id: uint32(id), dOut: dOut, k: k, dIn: k, hasBias: ls.Bias}
	if ls.Bias {
		d.dIn++
	}
	if _, ok := elements([]int{dOut, d.dIn}); !ok {
		return nil, fmt.Errorf("runtime: layer %q: a %d × %d weight matrix is too large (limit %d values)", ls.Name, dOut, d.dIn, maxTensor)
	}
	p := ls.Posterior
	if p == nil || p.Kind == KindDeterministic {
		// One set of weights per ensemble member (one for a single network).
		defer func() { b.member = 0 }()
		for b.member = 0; b.member < b.m.members; b.member++ {
			decls := LayerTensors(ls)
			var w16 []uint16
			for i, dc := range decls {
				if dc.Name != "weight" {
					continue
				}
				var ok bool
				var err error
				if w16, ok, err = b.tensor16(ls.Name, dc.Name, dc.Shape...); err != nil {
					return nil, err
				} else if ok {
					decls = slices.Delete(slices.Clone(decls), i, i+1)
				}
				break
			}
			t, err := b.layerTensors(ls.Name, decls, 0)
			if err != nil {
				return nil, err
			}
			d.det = append(d.det, detWeights{w: t["weight"], w16: w16, ldw: k, bias: t["bias"]})
		}
		if len(d.det) > 1 {
			b.m.stochastic = true
		}
		return d, nil
	}
	b.m.stochastic = true
	var err error
	switch p.Kind {
	case KindInducing:
		d.post, err = loadInducing(b, ls, d.dOut, d.dIn)
	case KindFFG:
		if p.Pruned {
			d.post, err = loadPrunedFFG(b, ls, d.dOut, d.dIn)
		} else {
			d.post, err = loadFFG(b, ls, d.dOut, d.dIn)
		}
	case KindFA:
		d.post, err = b.m.fa.layer(b, ls, d.dOut, d.k, d.dIn)
	case KindBernstein:
		d.post, err = loadBernstein(b, ls, d.dOut, d.dIn)
	case KindFCG:
		d.post, err = loadFCG(b, ls, d.dOut, d.dIn)
	default:
		err = fmt.Errorf("runtime: layer %q: unknown posterior kind %q", ls.Name, p.Kind)
	}
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *dense) inPlace() bool    { return false }
func (d *dense) outSize() int     { return d.out.size() }
func (d *dense) stochastic() bool { return d.post != nil || len(d.det) > 1 }

// useLocal reports whether this layer samples per input under strategy st for a batch of n.
func (d *dense) useLocal(st Strategy, n int) bool {
	if d.post == nil || d.conv || !canLocal(d.post) {
		return false
	}
	switch st {
	case Local:
		return true
	case Auto:
		return d.autoLocal(n)
	}
	return false
}

// normalCost is the cost model's price of one standard normal draw in multiply-adds: a Philox
// word and the ziggurat's table lookup against a vectorised GEMM's multiply-add
// (BenchmarkAutoStrategy checks the choice it leads to).
const normalCost = 16

// autoLocal reports whether local sampling costs less than sampling W and applying it to n
// inputs.
func (d *dense) autoLocal(n int) bool {
	return d.post.localCost(n) <= d.weightCost(n)
}

// autoLocalShared is autoLocal for the first stochastic layer, whose inputs are the same for all
// K samples, so that local sampling prepares them once.
func (d *dense) autoLocalShared(n, K int) bool {
	c := d.post.localCost(n) - d.post.prepCost(n) + d.post.prepCost(n)/int64(max(K, 1))
	return c <= d.weightCost(n)
}

// colSize is the im2col matrix of one input, k × P values: at most maxBuffer (checkDenseSizes).
func (d *dense) colSize() int {
	if !d.conv || d.pointwise() {
		return 0
	}
	return d.k * d.out.h * d.out.w
}

// pointwise reports a 1×1, stride-1, unpadded convolution whose input needs no im2col.
func (d *dense) pointwise() bool { return pointwise(d.geom) }

// pointwise reports whether a convolution of geometry g is 1×1, stride 1 and unpadded.
func pointwise(g kernels.ConvGeom) bool {
	return g.KH == 1 && g.KW == 1 && g.StrideH == 1 && g.StrideW == 1 && g.PadH == 0 && g.PadW == 0
}

// scratchSize is the scratch forward needs for blocks of B samples of batches of up to n inputs
// each under strategy st (Auto: whatever it chooses for any batch, and the first stochastic
// layer's shared projections), at the posterior mean if mean.
func (d *dense) scratchSize(n, B int, st Strategy, mean bool) int64 {
	if d.post == nil {
		return int64(d.detScratch()) + int64(d.colSize())
	}
	local := int64(0)
	if st != Weight && !d.conv && canLocal(d.post) {
		local = d.post.prepSize(B*n) + d.post.applyScratch(n, B)
		if st == Local {
			return local
		}
	}
	if sp := d.sparsePost(); sp != nil {
		return max(local, int64(sp.sparseScratch()))
	}
	l, ok := d.post.(*inducing)
	if !ok {
		return max(local, d.formedScratch())
	}
	// An inducing layer's path depends on the batch: the largest of what each batch takes, so
	// that a convolution that samples along the gram path for every batch holds no weight matrix.
	// Each path that does not form W (gram, factored, the factored mean) wins, if at all, for
	// the batches up to some size (what it costs per input against W's fixed price): once W is
	// formed, it is for every larger batch.
	s := local
	for b := 1; b <= n; b++ {
		need, formed := d.inducingScratch(l, b, st, mean)
		s = max(s, need)
		if formed {
			break
		}
	}
	return s
}

// formedScratch is the scratch of a weight sample formed in full and applied: W, its bias
// column, and the larger of the sampler's and the convolution's im2col scratch.
func (d *dense) formedScratch() int64 {
	return prod(d.dOut, d.dIn) + int64(d.dOut) + int64(max(d.post.weightScratch(), d.colSize()))
}

// inducingScratch is the scratch of the path forward takes for a batch of n inputs of an
// inducing layer that does not sample locally, under st, and whether that path forms W.
func (d *dense) inducingScratch(l *inducing, n int, st Strategy, mean bool) (int64, bool) {
	cols := d.factoredCols(n)
	switch {
	case mean && l.meanPath(cols) == pathFactored:
		return d.meanScratch(l), false
	case mean:
		return d.formedScratch(), true
	case d.gramPost(st, n) != nil:
		return d.gramScratch(l), false
	case l.choosePath(cols) == pathFactored:
		return d.factoredScratch(l, n), false
	}
	return d.formedScratch(), true
}

// inducingPath returns the layer's inducing posterior and the path a weight sample applied to n
// inputs takes (choosePath), or nil and pathFormed for other layers.
func (d *dense) inducingPath(n int) (*inducing, weightPath) {
	if l, ok := d.post.(*inducing); ok {
		return l, l.choosePath(d.factoredCols(n))
	}
	return nil, pathFormed
}

// weightCost is the cost model's price of one weight-strategy sample applied to n inputs.
func (d *dense) weightCost(n int) int64 {
	if l, ok := d.post.(*inducing); ok {
		return l.pathCost(d.factoredCols(n))
	}
	return d.post.weightCost() + prod(n, d.dOut, d.dIn)
}

// sparsePost returns the layer's pruned FFG posterior when its weight-sampling path uses the CSR
// product (a sparse Linear layer), else nil.
func (d *dense) sparsePost() *prunedFFG {
	if p, ok := d.post.(*prunedFFG); ok && p.sparse && !d.conv {
		return p
	}
	return nil
}

// forward runs the layer for fc.block samples of n inputs each (in and out are sample-major).
func (d *dense) forward(fc *fwdCtx, in, out []float32, n int) {
	B := fc.block
	if d.post == nil && len(d.det) == 1 {
		d.applyDet(fc, &d.det[0], in, out, B*n, fc.scratch)
		return
	}
	if d.post != nil && fc.dry {
		return
	}
	if d.post != nil && d.useLocal(fc.strategy, n) {
		prep := fc.scratch[:int(d.post.prepSize(B*n))]
		d.post.prepare(in, B*n, prep)
		d.post.apply(fc, d.id, prep, false, out, n, B, fc.scratch[len(prep):])
		return
	}
	// One weight sample (or ensemble member) per sample of the block; an inducing convolution
	// under Local (or Auto, where cheaper) draws one per input along the gram path instead.
	gl := d.gramPost(fc.strategy, n)
	s0, inSz, outSz := fc.sample, d.in.size(), d.out.size()
	defer func() { fc.sample, fc.faH, fc.guH = s0, nil, nil }()
	for b := 0; b < B; b++ {
		fc.sample = s0 + b
		xb, yb := in[b*n*inSz:(b+1)*n*inSz], out[b*n*outSz:(b+1)*n*outSz]
		if d.post == nil {
			d.applyDet(fc, &d.det[fc.sample%len(d.det)], xb, yb, n, fc.scratch)
			continue
		}
		if fc.faHs != nil {
			fc.faH = fc.faHs[b*len(fc.faHs)/B : (b+1)*len(fc.faHs)/B]
		}
		if fc.glob != nil {
			fc.guH = fc.guHs[b*fc.glob.size() : (b+1)*fc.glob.size()]
		}
		if gl != nil && !fc.mean {
			for i := 0; i < n; i++ {
				d.forwardGram(fc, gl, xb[i*inSz:(i+1)*inSz], yb[i*outSz:(i+1)*outSz])
			}
			continue
		}
		d.forwardWeight(fc, xb, yb, n)
	}
}

// applyDet applies deterministic weights dw to n inputs, widening fp16 weights into the front
// of scratch first (detScratch): all of them, or for a convolution with enough output channels
// one block of rows at a time (f16Rows).
func (d *dense) applyDet(fc *fwdCtx, dw *detWeights, in, out []float32, n int, scratch []float32) {
	w, ldw := dw.w, dw.ldw
	if dw.w16 != nil {
		if b := d.f16Rows(); b > 0 {
			d.applyF16Rows(dw, b, in, out, n, scratch)
			return
		}
		w, scratch, ldw = scratch[:len(dw.w16)], scratch[len(dw.w16):], d.k
		kernels.F16ToF32(w, dw.w16)
	}
	d.applyScaled(fc, w, ldw, dw.scale, dw.bias, in, out, n, scratch)
}

// f16Rows is the block of output channels a convolution's fp16 weights are widened in
// (kernels.GemmRowBlock: the blocks' products are the whole's bit for bit), 0 for the whole.
func (d *dense) f16Rows() int {
	if !d.conv {
		return 0
	}
	return kernels.GemmRowBlock(d.dOut, d.out.h*d.out.w, d.k)
}

// applyF16Rows is applyDet for a convolution whose fp16 weights are widened b rows at a time
// (the last block takes the rows left over), for each input: a layer needs room for fewer than
// 2b rows of float32 weights instead of all of them, and widens its weights once per input.
func (d *dense) applyF16Rows(dw *detWeights, b int, in, out []float32, n int, scratch []float32) {
	k, p := d.k, d.out.h*d.out.w
	rows := scratch[:(b+d.dOut%b)*k]
	d.convInputs(in, out, n, scratch[len(rows):], dw.scale, dw.bias, func(col, y []float32) {
		for r0 := 0; r0 < d.dOut; {
			r1 := r0 + b
			if d.dOut-r1 < b {
				r1 = d.dOut
			}
			w := rows[:(r1-r0)*k]
			kernels.F16ToF32(w, dw.w16[r0*k:r1*k])
			kernels.Gemm(false, false, r1-r0, p, k, 1, w, k, col, p, 0, y[r0*p:r1*p], p)
			r0 = r1
		}
	})
}

// detScratch is the scratch the deterministic weights need beyond applyScaled's: a float32 copy
// of fp16 weights (LoadOptions.KeepF16), whole or a block of rows (f16Rows) at a time.
func (d *dense) detScratch() int {
	for _, dw := range d.det {
		if dw.w16 != nil {
			if b := d.f16Rows(); b > 0 {
				return (b + d.dOut%b) * d.k
			}
			return d.dOut * d.k
		}
	}
	return 0
}

// forwardWeight samples the weights of sample fc.sample (or takes the mean weights) and applies
// them to n inputs.
func (d *dense) forwardWeight(fc *fwdCtx, in, out []float32, n int) {
	if sp := d.sparsePost(); sp != nil {
		sp.forwardSparse(fc, d.id, in, out, n, fc.scratch)
		return
	}
	if l, path := d.inducingPath(n); path == pathFactored && !fc.mean {
		d.forwardFactored(fc, l, in, out, n)
		return
	} else if l != nil && fc.mean && l.meanPath(d.factoredCols(n)) == pathFactored {
		d.forwardMeanFactored(fc, l, in, out, n)
		return
	}
	w := fc.scratch[:d.dOut*d.dIn]
	bias := fc.scratch[len(w) : len(w)+d.dOut]
	rest := fc.scratch[len(w)+len(bias):]
	if fc.mean {
		d.post.meanWeight(w, rest)
	} else {
		fc.rng.Reset(fc.seed, uint32(fc.sample), d.id)
		d.post.sampleWeight(fc, &fc.rng, w, rest)
	}
	if !d.hasBias {
		bias = nil
	} else {
		for o := range bias {
			bias[o] = w[o*d.dIn+d.k]
		}
	}
	d.apply(fc, w, d.dIn, bias, in, out, n, rest)
}

// foldBatchNorm folds an inference-mode BatchNorm that follows this deterministic layer into it,
// member by member in an ensemble (bn has as many members as d): the layer then computes
// (W x)·scale + (b·scale + shift) per output, the order PyTorch evaluates a convolution and its
// BatchNorm in. Only the per-output vectors are new; the weights stay the model file's
// (memory-mapped) tensors, where scaling W itself would copy every one of them. A layer without
// a bias gains one (the shift): its weight matrix (MeanWeight, MemberWeight, Posterior) is the
// folded layer's, dOut × (k+1).
func (d *dense) foldBatchNorm(bn *batchNorm) {
	if !d.hasBias {
		d.hasBias = true
		d.dIn++
	}
	for e := range d.det {
		dw, bm := &d.det[e], &bn.members[e]
		bias := make([]float32, d.dOut)
		for o, s := range bm.scale {
			b := float32(0)
			if dw.bias != nil {
				b = dw.bias[o]
			}
			bias[o] = b*s + bm.shift[o]
		}
		dw.bias, dw.scale = bias, bm.scale
	}
}

// weightMatrix writes member e's weights into w (dOut × dIn, bias as the last column), a
// following BatchNorm folded in (W·scale row by row).
func (d *dense) weightMatrix(e int, w []float32) {
	dw := &d.det[e]
	for o := 0; o < d.dOut; o++ {
		row := w[o*d.dIn : o*d.dIn+d.k]
		if dw.w16 != nil {
			kernels.F16ToF32(row, dw.w16[o*d.k:(o+1)*d.k])
		} else {
			copy(row, dw.w[o*dw.ldw:o*dw.ldw+d.k])
		}
		if dw.scale != nil {
			kernels.Scale(dw.scale[o], row)
		}
		if d.hasBias {
			w[o*d.dIn+d.k] = dw.bias[o]
		}
	}
}

// apply computes out = W x + b for n inputs with W (dOut × k, leading dimension ldw).
func (d *dense) apply(fc *fwdCtx, w []float32, ldw int, bias, in, out []float32, n int, scratch []float32) {
	d.applyScaled(fc, w, ldw, nil, bias, in, out, n, scratch)
}

// applyScaled computes out = (W x)·scale + b for n inputs with W (dOut × k, leading dimension
// ldw), scale per output (nil: 1) and b (nil: 0).
func (d *dense) applyScaled(_ *fwdCtx, w []float32, ldw int, scale, bias, in, out []float32, n int, scratch []float32) {
	if !d.conv {
		kernels.Gemm(false, true, n, d.dOut, d.k, 1, in, d.k, w, ldw, 0, out, d.dOut)
		for i := 0; i < n && (scale != nil || bias != nil); i++ {
			row := out[i*d.dOut : (i+1)*d.dOut]
			switch {
			case scale == nil:
				kernels.Axpy(1, bias, row)
			case bias == nil:
				kernels.Mul(row, row, scale)
			default:
				for o, v := range row {
					row[o] = v*scale[o] + bias[o]
				}
			}
		}
		return
	}
	p := d.out.h * d.out.w
	d.convInputs(in, out, n, scratch, scale, bias, func(col, y []float32) {
		kernels.Gemm(false, false, d.dOut, p, d.k, 1, w, ldw, col, p, 0, y, p)
	})
}

// convInputs runs the convolution on n inputs: for each, its im2col matrix (k × P; the input
// itself for a pointwise convolution, else written to colBuf), mul(col, y) into its dOut × P
// outputs y, then the per-channel scale and bias (nil: 1 and 0).
func (d *dense) convInputs(in, out []float32, n int, colBuf, scale, bias []float32, mul func(col, y []float32)) {
	p, inSize := d.out.h*d.out.w, d.in.size()
	for i := 0; i < n; i++ {
		col := in[i*inSize : (i+1)*inSize]
		if !d.pointwise() {
			col = colBuf[:d.k*p]
			kernels.Im2Col(d.geom, in[i*inSize:(i+1)*inSize], col)
		}
		y := out[i*d.dOut*p : (i+1)*d.dOut*p]
		mul(col, y)
		if scale != nil || bias != nil {
			affineRows(y, scale, bias, d.dOut, p)
		}
	}
}

// affineRows sets row o of y (rows × p) to y·scale[o] + bias[o]; a nil scale is 1, a nil bias 0.
func affineRows(y, scale, bias []float32, rows, p int) {
	if scale == nil {
		addColumnTo(y, bias, 1, rows, 1, 0, p)
		return
	}
	for o := 0; o < rows; o++ {
		row := y[o*p : (o+1)*p]
		if bias == nil {
			kernels.Scale(scale[o], row)
			continue
		}
		s, b := scale[o], bias[o]
		for j, v := range row {
			row[j] = v*s + b
		}
	}
}

// localMoments computes what the local strategy needs of a layer with independent Gaussian
// weights for n inputs: proj = X̃ Aᵀ (rows values per input, the means first) and sd = √(X̃² Vᵀ)
// (dOut per input), V (dOut × dIn) holding the weights' variances; sq is scratch for the squared
// inputs (n·k values).
func localMoments(a []float32, rows int, v []float32, dOut, k, dIn int, hasBias bool, in []float32, n int, proj, sd, sq []float32) {
	augmentedProject(a, rows, k, dIn, hasBias, in, n, proj, rows)
	for i, x := range in[:n*k] {
		sq[i] = x * x
	}
	augmentedProject(v, dOut, k, dIn, hasBias, sq, n, sd, dOut)
	for i, x := range sd {
		sd[i] = float32(math.Sqrt(math.Max(float64(x), 0)))
	}
}

// augmentedProject computes P = X̃ Aᵀ for n inputs, where X̃ appends a 1 to each input when the
// layer has a bias and A (rows × dIn) is row-major: P is n × rows with leading dimension ldp.
func augmentedProject(a []float32, rows, k, dIn int, hasBias bool, in []float32, n int, p []float32, ldp int) {
	kernels.Gemm(false, true, n, rows, k, 1, in, k, a, dIn, 0, p, ldp)
	if hasBias {
		for i := 0; i < n; i++ {
			pi := p[i*ldp : i*ldp+rows]
			for r := range pi {
				pi[r] += a[r*dIn+k]
			}
		}
	}
}
