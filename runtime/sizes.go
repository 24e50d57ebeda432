package runtime

import (
	"fmt"
	"math"
)

// Sizes and 32-bit platforms.
//
// Every buffer of a model or a Predictor is sized by products of a layer's dimensions and, in a
// Predictor, of the batch (MaxBatch ≤ 2^16) and of the samples drawn together (a pass, ≤ 32). On
// 32-bit platforms (GOARCH arm, 386: int has 32 bits) such a product can wrap around: to a small
// size, a buffer too short for the loops that index it, or to a negative one, a panic in make.
// Two rules keep every size inside int on every platform; the first also bounds what a 64-bit
// host loads, at buffers of 2^30 values (4 GiB of float32 for one input: an im2col matrix that
// large — a 128-channel 3 × 3 convolution over a 1024 × 1024 image — is refused everywhere):
//
//  1. At load, before a layer's tensors are read or anything is derived from them,
//     checkDenseSizes and checkInducingSizes bound in int64 each product of the layer's
//     dimensions that a buffer holds but no tensor has the shape of — a convolution's im2col
//     matrix (k × P), an inducing sampler's M_r × d_in, a full q(U)'s d × d factor, an inducing
//     convolution's P × (M_c + M_r) — by maxBuffer (2^30 values; tensors, weight matrices and
//     activations are bounded by maxTensor, 2^28, already). The sizes that do not grow with the
//     batch and are used outside a Predictor's sizing — colSize, weightScratch, detScratch, a
//     global U's size and scratch — are at most one such product plus a few below 2^28 (8·M_r·M_c
//     ≤ 2^27), so below 2^31.
//  2. Everything that grows with the batch or the samples, and whatever adds those sizes up
//     (scratchSize and what it calls: prepSize, applyScratch, formedScratch, factoredScratch,
//     gramScratch, meanScratch; the strategies' cost models), is computed in int64 (prod), and
//     NewPredictor checks the total against Options.MaxMemory, and always against the address
//     space (maxAddressable: 4 GiB on 32-bit, so no buffer has more than 2^30 float32 values),
//     before any size is converted to int to allocate or to slice. An offset into a buffer is
//     then below its length, which fits int.

// maxBuffer bounds the values of a buffer sized by a product of layer dimensions that is not a
// tensor's shape (rule 1): 4 GiB of float32, far more than any layer of a 32-bit model could use,
// and low enough that the few sizes computed in int stay below 2^31.
const maxBuffer = 1 << 30

// maxAddressable is the most bytes a Predictor may need whatever Options.MaxMemory says: the
// address space of a 32-bit process (4 GiB), no bound on 64-bit platforms.
const maxAddressable = min(math.MaxUint, math.MaxInt64)

// prod returns the product of factors in int64. Under rule 1 no caller's product reaches 2^62:
// a size multiplies at most a batch (2^16) and a block of samples (2^5) by a product of layer
// dimensions below 2^30·2^13; the cost models' largest terms are a batch times a convolution's
// P·d_out·d_in (≤ 2^43.5: P·d_out and d_out·d_in are at most 2^28, P·d_in 2^31) or P·M_c·d_in.
func prod(factors ...int) int64 {
	p := int64(1)
	for _, f := range factors {
		p *= int64(f)
	}
	return p
}

// sizeError is the error of a layer whose buffer of what (n values) exceeds maxBuffer.
func sizeError(layer, kind, what string, n int64) error {
	return fmt.Errorf("runtime: layer %q (%s): %s would have %d values; the limit is %d: %w", layer, kind, what, n, maxBuffer, ErrMemory)
}

// checkDenseSizes is rule 1 for a Conv2d layer with k weight columns (without the bias) and
// output shape out (P = out.h·out.w positions): its im2col matrix unless it is pointwise (k × P,
// dense.colSize) and, for an inducing convolution, the C x̃ and ū C x̃ of every position
// (P × (M_c + M_r), meanScratch and factoredScratch). A Linear layer has none of these; the
// inducing sampler's own products are checkInducingSizes'. It runs before the layer's tensors are
// read.
func checkDenseSizes(ls *LayerSpec, k int, out shape, pointwise bool) error {
	if ls.Op != OpConv2d {
		return nil
	}
	pos := int64(out.h) * int64(out.w)
	if n := int64(k) * pos; !pointwise && n > maxBuffer {
		return sizeError(ls.Name, string(ls.Op), fmt.Sprintf("the im2col matrix of one input (%d × %d positions)", k, pos), n)
	}
	p := ls.Posterior
	if p == nil || p.Kind != KindInducing || !inducingDimsOK(p) {
		return nil // loadInducing refuses dimensions out of range
	}
	if n := pos * int64(p.InducingRows+p.InducingCols); n > maxBuffer {
		return sizeError(ls.Name, string(ls.Op), fmt.Sprintf("the factored product of %d positions × (%d + %d) inducing rows and columns", pos, p.InducingRows, p.InducingCols), n)
	}
	return nil
}

// checkInducingSizes is rule 1 for an inducing posterior (dimensions in range) over a weight of
// dIn columns: the weight sampler's M_r × d_in product (weightScratch, meanWeight) and a full
// q(U)'s Cholesky factor, kept as a dense d × d matrix (d = M_r·M_c; its packed form,
// d(d+1)/2 values, then fits int too).
func checkInducingSizes(name string, p *PosteriorSpec, dIn int) error {
	mo, mi := int64(p.InducingRows), int64(p.InducingCols)
	if n := mo * int64(dIn); n > maxBuffer {
		return sizeError(name, "inducing", fmt.Sprintf("the weight sampler's product of %d inducing rows × %d inputs", mo, dIn), n)
	}
	if d := mo * mi; p.QInducing == QFull && d*d > maxBuffer {
		return sizeError(name, "inducing", fmt.Sprintf("the full q(U)'s Cholesky factor (d × d, d = %d × %d inducing weights)", mo, mi), d*d)
	}
	return nil
}

// spanFits reports whether k taps at dilation d fit an input of in values padded by pad on both
// sides, d·(k − 1) + 1 ≤ in + 2·pad (the condition for a non-empty output), in int64: the int
// formulas of output sizes (kernels.ConvGeom.OutH, poolOut) compute d·(k − 1), up to 2^32 within
// the spec's bounds (2^16 each), which wraps around on 32-bit platforms — to a kernel that
// seems to fit. Once it holds, they and the loops' offsets stay below in + 2·pad.
func spanFits(in, k, pad, d int) bool {
	return int64(d)*(int64(k)-1) < int64(in)+2*int64(pad)
}

// maxInducing bounds inducing_rows and inducing_cols.
const maxInducing = 4096

// inducingDimsOK reports whether p's inducing_rows and inducing_cols are in [1, maxInducing].
func inducingDimsOK(p *PosteriorSpec) bool {
	return p.InducingRows >= 1 && p.InducingCols >= 1 && p.InducingRows <= maxInducing && p.InducingCols <= maxInducing
}
