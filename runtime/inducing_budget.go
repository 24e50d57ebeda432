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
//   - MaxInducingWork multiply-adds in all (inducingLoadCost's estimate, ≈ 3·10⁹ a second on a
//     2020s x86 core for matrices that fit its caches, half that for M = 4096, so about 10–20 s),
//   - MaxInducingBytes of derived values held at once: what the layers loaded so far keep, plus
//     what the current one holds while it loads.
//
// The largest model of paper 003's Table 9, ResNet-50 with 256 × 256 inducing weights in every
// layer and an ensemble q(U) of 5 (38.6 M parameters), is estimated at 3.1·10¹⁰ multiply-adds
// (0.9 of the limit; it loads in 10 s) and keeps 0.25 GiB; with 128 × 128, 6·10⁹ and 0.08 GiB.
const (
	MaxInducingWork  = 1 << 35
	MaxInducingBytes = 1 << 30
)

// inducingLoadCost estimates what loadInducing (with loadQ and, for a Linear layer, loadLocal;
// for a convolution, gramFactor) does for posterior p (dimensions checked) over a dOut × dIn
// weight: work in multiply-adds, kept the bytes the layer keeps (float32), temp the bytes it holds
// only while it loads (float64). Each term is an upper bound on its step, up to packing.
func inducingLoadCost(p *PosteriorSpec, dOut, dIn int, op Op) (work, kept, temp int64) {
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
	return work, 4 * kept, 8 * temp
}

// chargeInducing adds an inducing layer's (or the global posterior's) load cost to b, or returns
// why it does not fit (what names the layer, as the error's prefix).
func (b *loadBudget) chargeInducing(what string, work, kept, temp int64) error {
	limit := min(DefaultMaxMemory(), b.maxInducingBytes)
	if need := b.inducingBytes + kept + temp; need > limit {
		return fmt.Errorf("%s: loading needs about %s (%s kept, %s while it loads), with %s kept by earlier inducing layers; the limit is %s (MaxInducingBytes, or the machine's memory): %w",
			what, sizeString(kept+temp), sizeString(kept), sizeString(temp), sizeString(b.inducingBytes), sizeString(limit), ErrMemory)
	}
	if b.inducingWork+work > b.maxInducingWork {
		return fmt.Errorf("%s: loading is about %.3g multiply-adds; the model's inducing layers may take %.3g in all (MaxInducingWork), %.3g taken by earlier layers",
			what, float64(work), float64(b.maxInducingWork), float64(b.inducingWork))
	}
	b.inducingBytes += kept
	b.inducingWork += work
	return nil
}
