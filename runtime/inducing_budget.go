package runtime

import "fmt"

// Loading an inducing layer derives, from Z_r (M_r × d_out) and Z_c (M_c × d_in), Gram
// matrices, four M × M Cholesky factors and the solves against them (MATH.md §1), and q(U)'s
// terms: O(M³ + M²·(d_out + d_in)) multiply-adds and, in float64 while it loads, O(M² + M·(d_out
// + d_in)) values — from tensors that zstd can store in a few bytes whatever M (a 1 → 1 Linear
// layer with M_c = 4096 took 25 s and 640 MiB in a 2.8 KB file). A model's inducing layers
// (and its global inducing posterior, docs/GLOBALU.md) are therefore bounded as a whole, like its
// Bernstein layers, each charged before it reads its tensors or derives anything:
//
//   - MaxInducingWork multiply-adds, plus InducingWorkPerValue for every value the inducing
//     layers loaded so far (this one included) store in their tensors: work in proportion to
//     the model (inducingLoadCost's estimate; ≈ 3·10⁹ a second on a 2020s x86 core for matrices
//     that fit its caches, half that for M = 4096);
//   - MaxInducingBytes of derived values held at once: what the layers loaded so far keep, plus
//     what the current one holds while it loads.
//
// Paper 003's largest models — ResNet-50 with 256 × 256 inducing weights in every layer and an
// ensemble q(U) of 5 to 10 members, ≈ 3–4·10¹⁰ multiply-adds (about 10 s) — store 28 M values
// and more, so their allowance is 4·10¹⁰ and more (TestInducingBudgetAdmitsPaperModels); the 1 → 1
// layer with M_c = 4096 stores 12 k values and asks 4.6·10¹⁰: refused.
const (
	MaxInducingWork      = 1 << 34
	InducingWorkPerValue = 1 << 10
	MaxInducingBytes     = 1 << 30
)

// inducingLoadCost estimates what loadInducing (with loadQ and, for a Linear layer, loadLocal;
// for a convolution, gramFactor) does for posterior p (dimensions checked) over a dOut × dIn
// weight: work in multiply-adds, kept the bytes the layer keeps (float32), temp the bytes it holds
// only while it loads (float64), stored the values its tensors hold (InducingTensors' shapes).
// Each term is an upper bound on its step, up to packing.
func inducingLoadCost(p *PosteriorSpec, dOut, dIn int, op Op) (work, kept, temp, stored int64) {
	mo, mi := int64(p.InducingRows), int64(p.InducingCols)
	zr, zc := mo*int64(dOut), mi*int64(dIn) // Z_r, Z_c
	a, b, d := mo*mo, mi*mi, mo*mi
	wh := p.WhitenedU
	// Z Zᵀ with and without D (4), their Cholesky factors (4), Ψ_r⁻¹ Z_r and Ψ_c⁻¹ Z_c.
	work = 2*a*int64(dOut) + 2*b*int64(dIn) + (2*a*mo+2*b*mi)/3 + a*int64(dOut) + b*int64(dIn)
	kept = zr + zc + 2*a + 2*b + mo + mi // R, C, L̂_r, L_r, L̂_c, L_c, D_r, D_c
	temp = 3*zr + 2*zc + 4*a + 4*b + mo + mi
	switch op {
	case OpConv2d: // gramFactor: Z_c Z_cᵀ, its Cholesky factor and inverse
		work += b*int64(dIn) + b*mi
		kept += 2 * b
		temp += 2 * b
	case OpLinear: // loadLocal: Ĉ (and C), Ẑ_r, L_r⁻¹ D_r, the packed factors
		work += 2*b*int64(dIn) + a*int64(dOut) + a*mo
		kept += 4*zc + 4*zr + 2*a + 3*d
		temp += 2*zc + 2*zr + a
	}
	if !wh { // Ψ_r⁻¹, Ψ_c⁻¹ and vec(μ)ᵀ Σ_p⁻¹ vec(μ)
		work += a*mo + b*mi + d*(mo+mi)
		temp += a + b + 2*d
	}
	var members int64 = 1
	switch p.QInducing {
	case QDiagonal:
		work += d
		kept += d
		temp += d
	case QFull: // d × d factor (checkInducingSizes: d² ≤ maxBuffer), tr(Σ_p⁻¹ L Lᵀ)
		work += d * d
		if !wh {
			work += d * d * (mo + mi)
		}
		kept += d * d
		temp += d*d + 2*d
	case QMatrix:
		work += a*mo + b*mi
		kept += a + b
		temp += 2*a + 2*b
	case QEnsemble:
		members = int64(p.EnsembleSize)
		kept += members * d
	case QGlobal:
		kept += d
	}
	if wh { // each mean whitened: L_r u L_cᵀ
		work += members * d * (mo + mi)
		temp += d
	}
	kept += d // the mean u
	for _, t := range InducingTensors(dOut, dIn, p) {
		n := int64(1)
		for _, s := range t.Shape {
			n *= int64(s) // each at most 2^31 (InducingTensors saturates), at most two factors
		}
		stored += n
	}
	return work, 4 * kept, 8 * temp, stored
}

// chargeInducing adds an inducing layer's (or the global posterior's) load cost to b, or returns
// why it does not fit (what names the layer, as the error's prefix).
func (b *loadBudget) chargeInducing(what string, work, kept, temp, stored int64) error {
	limit := min(b.machineMemory(), b.maxInducingBytes)
	if need := b.inducingBytes + kept + temp; need > limit {
		return fmt.Errorf("%s: loading needs about %s (%s kept, %s while it loads), with %s kept by earlier inducing layers; the limit is %s (MaxInducingBytes, or the machine's memory): %w",
			what, sizeString(kept+temp), sizeString(kept), sizeString(temp), sizeString(b.inducingBytes), sizeString(limit), ErrMemory)
	}
	allowed := b.maxInducingWork + b.inducingWorkPerValue*(b.inducingStored+stored)
	if b.inducingWork+work > allowed {
		return fmt.Errorf("%s: loading is about %.3g multiply-adds for %d stored values; the model's inducing layers may take %.3g in all (MaxInducingWork + InducingWorkPerValue × their %d stored values), %.3g taken by earlier layers",
			what, float64(work), stored, float64(allowed), b.inducingStored+stored, float64(b.inducingWork))
	}
	b.inducingBytes += kept
	b.inducingWork += work
	b.inducingStored += stored
	return nil
}
