package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// qFamily is a layer's q(U) family (LayerPosterior.QInducing) resolved once when the model
// loads: the sampling path branches on it many times a prediction, and a comparison of the
// QInducing strings there is a call to the runtime's memequal on 32-bit ARM (≈ 1–2 k instructions
// a prediction of the mlp fixture, varying with where the linker placed the literals).
type qFamily uint8

const (
	qDiagonal qFamily = iota
	qFull
	qMatrix
	qEnsemble
	qGlobal
)

// inducing is a bayesianize inducing-weight posterior (MATH.md §1), with everything that does not
// change between samples precomputed at load time.
type inducing struct {
	name             string
	dOut, dIn, k     int
	mo, mi           int
	hasBias          bool
	sigma, lamda     float32
	zr               []float32 // mo × dOut
	zc, c            []float32 // mi × dIn each: Z_c (the model's tensor, not copied) and C = Ψ_c⁻¹ Z_c
	r                []float32 // dOut × mo: R = Z_rᵀ Ψ_r⁻¹
	dr, dc           []float32 // diag(D_r), diag(D_c)
	lhatR, lhatC     []float32 // chol(Z_r Z_rᵀ), chol(Z_c Z_cᵀ), jittered
	lr, lc           []float32 // chol(Ψ_r), chol(Ψ_c), jittered (whitening)
	whitened         bool
	q                qFamily
	mean             []float32   // mo × mi (row-major u)
	sd               []float32   // diagonal: mo × mi
	tril             []float32   // full: d × d lower, d = mo·mi, row-major vec(u)
	rowTril, colTril []float32   // matrix: mo × mo, mi × mi
	members          [][]float32 // ensemble: each member's u, already whitened
	meanU            []float32   // u at the posterior mean (member 0 for ensembles), whitened
	guOff            int         // q global: offset of the layer's block in one U_{1:L} sample
	lz, lzInv        []float32   // chol(Z_c Z_cᵀ) without jitter and its inverse (gram path); nil if Z_c's rows are nearly dependent
	path             weightPath  // how weight samples meet their inputs (pathAuto: by cost)
	gram             int8        // the gram path forced on (1) or off (−1) by a test; 0: by cost (gramPost)
	kl               float64
	loc              localParams
}

func loadInducing(b *builder, ls *LayerSpec, dOut, dIn int) (*inducing, error) {
	p := ls.Posterior
	mo, mi := p.InducingRows, p.InducingCols
	name := ls.Name
	errf := func(format string, args ...any) error {
		return fmt.Errorf("runtime: layer %q (inducing): %s", name, fmt.Sprintf(format, args...))
	}
	if !inducingDimsOK(p) {
		return nil, errf("inducing_rows %d / inducing_cols %d out of range (1 to %d)", mo, mi, maxInducing)
	}
	if err := checkInducingSizes(name, p, dIn); err != nil {
		return nil, err
	}
	if !(p.PriorSD > 0) || math.IsInf(p.PriorSD, 0) {
		return nil, errf("prior_sd %g must be positive", p.PriorSD)
	}
	if float32(p.PriorSD) < math.SmallestNonzeroFloat32*(1<<23) {
		// Below float32's smallest normal the prior scale (σ, stored as float32) is 0 or
		// denormal: every sampled weight would be 0 and the model predict a constant.
		return nil, errf("prior_sd %g is below float32's smallest normal number (every weight would be zero)", p.PriorSD)
	}
	var q qFamily
	switch p.QInducing {
	case QDiagonal:
		q = qDiagonal
	case QMatrix:
		q = qMatrix
	case QFull:
		q = qFull
	case QGlobal:
		q = qGlobal
	case QEnsemble:
		q = qEnsemble
		if k := p.EnsembleSize; k < 1 || k > 1024 {
			return nil, errf("ensemble_size %d out of range", k)
		}
	default:
		return nil, errf("q_inducing %q is not diagonal, full, matrix or ensemble", p.QInducing)
	}
	l := &inducing{name: name, dOut: dOut, dIn: dIn, k: dIn, mo: mo, mi: mi, hasBias: ls.Bias,
		sigma: float32(p.PriorSD), whitened: p.WhitenedU, q: q}
	if ls.Bias {
		l.k = dIn - 1
	}
	work, kept, temp, stored := inducingLoadCost(p, dOut, dIn, ls.Op)
	if err := b.budget.chargeInducing(fmt.Sprintf("runtime: layer %q (inducing, %d × %d inducing weights, %d × %d weight)", name, mo, mi, dOut, dIn), work, kept, temp, stored); err != nil {
		return nil, err
	}
	t, err := b.layerTensors(name, InducingTensors(dOut, dIn, p), 0)
	if err != nil {
		return nil, err
	}
	zr32, zc32, dRow, dCol, lam := t["z_row"], t["z_col"], t["_d_row"], t["_d_col"], t["_lamda"]
	lamda := softplus(float64(lam[0]))
	if p.MaxLamda != nil {
		lamda = math.Min(lamda, *p.MaxLamda)
	}
	l.lamda = float32(lamda)
	if !pointW(p) && !(l.lamda > 0) {
		// λ = softplus(raw) underflowed: KL's −log λ would be +Inf (max_lamda 0, a point
		// estimate, has no such term).
		return nil, errf("tensor %q: λ = softplus(%g) = %g is not a positive float32 (the KL would be infinite)", b.fullName(name, "_lamda"), lam[0], lamda)
	}

	zr, zc := to64(zr32), to64(zc32)
	dr, dc := make([]float64, mo), make([]float64, mi)
	for i := range dr {
		dr[i] = softplus(float64(dRow[i]))
	}
	for i := range dc {
		dc[i] = softplus(float64(dCol[i]))
	}
	lr, err := jchol(gram(zr, mo, dOut, dr), mo)
	if err != nil {
		return nil, errf("Z_r Z_rᵀ + D_r²: %v", err)
	}
	lc, err := jchol(gram(zc, mi, dIn, dc), mi)
	if err != nil {
		return nil, errf("Z_c Z_cᵀ + D_c²: %v", err)
	}
	lhr, err := jchol(gram(zr, mo, dOut, nil), mo)
	if err != nil {
		return nil, errf("Z_r Z_rᵀ (every entry of z_row pruned?): %v", err)
	}
	lhc, err := jchol(gram(zc, mi, dIn, nil), mi)
	if err != nil {
		return nil, errf("Z_c Z_cᵀ (every entry of z_col pruned?): %v", err)
	}
	// R = Z_rᵀ Ψ_r⁻¹ = (Ψ_r⁻¹ Z_r)ᵀ and C = Ψ_c⁻¹ Z_c.
	psiZr := append([]float64(nil), zr...)
	kernels.CholeskySolve(lr, mo, psiZr, dOut)
	r := make([]float64, dOut*mo)
	for i := 0; i < mo; i++ {
		for j := 0; j < dOut; j++ {
			r[j*mo+i] = psiZr[i*dOut+j]
		}
	}
	c := append([]float64(nil), zc...)
	kernels.CholeskySolve(lc, mi, c, dIn)

	l.zr, l.r = zr32, to32(r)
	l.zc, l.c = zc32, to32(c)
	l.dr, l.dc = to32(dr), to32(dc)
	l.lhatR, l.lhatC = to32(lhr), to32(lhc)
	l.lr, l.lc = to32(lr), to32(lc)
	if ls.Op == OpConv2d { // only convolutions sample along the gram path (inducing_gram.go)
		l.lz, l.lzInv = gramFactor(zc, mi, dIn)
	}

	var (
		klU float64
		raw [][]float32
	)
	if l.q == qGlobal {
		raw, err = l.loadGlobal(b)
	} else {
		klU, raw, err = l.loadQ(t, ls, lr, lc)
	}
	if err != nil {
		return nil, err
	}
	// Convolutions share W across positions: they never sample locally; nor does the global
	// inducing posterior's own level (op unset), whose "weight" is U_{1:L}.
	if ls.Op == OpLinear {
		l.loadLocal(zr, zc, dr, lr, lc, raw)
	}
	l.kl = klU
	if !pointW(p) { // a point estimate of W given U has no conditional KL (loadQ's doc)
		l.kl += float64(dIn) * float64(dOut) * (lamda*lamda/2 - math.Log(lamda) - 0.5)
	}
	return l, nil
}

// loadGlobal attaches a q_inducing global layer to the model's global inducing posterior and
// returns its block of E[U_{1:L}] (raw, whitened) as its mean; its KL has no U term.
func (l *inducing) loadGlobal(b *builder) ([][]float32, error) {
	gu := b.m.glob
	if gu == nil {
		return nil, fmt.Errorf("runtime: layer %q (inducing): q_inducing global but the model has no global_u section", l.name)
	}
	if !l.whitened {
		return nil, fmt.Errorf("runtime: layer %q (inducing): q_inducing global needs whitened_u", l.name)
	}
	if err := gu.attach(l); err != nil {
		return nil, err
	}
	d := l.mo * l.mi
	raw := append([]float32(nil), gu.mean[l.guOff:l.guOff+d]...)
	l.meanU = append([]float32(nil), raw...)
	l.whiten(l.meanU, make([]float32, d))
	return [][]float32{raw}, nil
}

// pointW reports whether max_lamda is 0: λ = 0, so W given U is the point p(W|U)'s mean
// (paper 003, appendix J) and the layer's KL leaves out R(λ), infinite for a delta measure.
func pointW(p *PosteriorSpec) bool { return p.MaxLamda != nil && *p.MaxLamda == 0 }

// loadQ reads q(U) and returns KL[q(U) ‖ p(U)] (MATH.md §1; bayesianize's definition) and the
// means of q(U) as stored (one per ensemble member; not whitened). A diagonal q(U) with
// max_sd_u = 0 is the point (MAP) estimate of paper 003's ablation: its "KL" is −log p(U) at the
// mean, ½(vec(μ)ᵀ Σ_p⁻¹ vec(μ) + log|Σ_p| + M_r·M_c·log 2π), as the trainer's objective uses it.
func (l *inducing) loadQ(t map[string][]float32, ls *LayerSpec, lr, lc []float64) (float64, [][]float32, error) {
	mo, mi := l.mo, l.mi
	d := mo * mi
	mean := t["inducing_mean"]
	mu := to64(mean)
	// Prior precision factors: whitened p(U) = N(0, I); else U ~ MN(0, Ψ_r, Ψ_c) (jittered).
	var aInv, bInv []float64
	logDetP := 0.0
	if !l.whitened {
		aInv, bInv = make([]float64, mo*mo), make([]float64, mi*mi)
		kernels.CholeskyInverse(aInv, lr, mo)
		kernels.CholeskyInverse(bInv, lc, mi)
		logDetP = 2 * (float64(mi)*logDiagSum(lr, mo) + float64(mo)*logDiagSum(lc, mi))
	}
	precDiag := func(i, j int) float64 { // (Σ_p⁻¹) at u_ij, u_ij
		if l.whitened {
			return 1
		}
		return aInv[i*mo+i] * bInv[j*mi+j]
	}
	// maha = vec(μ)ᵀ Σ_p⁻¹ vec(μ).
	maha := func(m []float64) float64 {
		if l.whitened {
			s := 0.0
			for _, v := range m {
				s += v * v
			}
			return s
		}
		// tr(B⁻¹ μᵀ A⁻¹ μ)
		am := kernels.MatMul(false, false, mo, mi, mo, aInv, m)
		amb := kernels.MatMul(false, false, mo, mi, mi, am, bInv)
		s := 0.0
		for i := range m {
			s += m[i] * amb[i]
		}
		return s
	}
	var kl float64
	switch l.q {
	case qDiagonal:
		sdRaw := t["_inducing_sd"]
		sd := make([]float64, d)
		tr, logDetQ := 0.0, 0.0
		for i := range sd {
			sd[i] = softplus(float64(sdRaw[i]))
			p := l.maxSDU(ls)
			if p != nil {
				sd[i] = math.Min(sd[i], *p)
			}
			if (p == nil || *p > 0) && !(float32(sd[i]) > 0) {
				// log det q would be −∞ and the KL +Inf (max_sd_u 0, a point estimate, is
				// the case where 0 is meant).
				return 0, nil, fmt.Errorf("runtime: layer %q (inducing): tensor %q: entry %d: sd = softplus(%g) = %g is not a positive float32 (the KL would be infinite)", ls.Name, ls.Name+"._inducing_sd", i, sdRaw[i], sd[i])
			}
			tr += sd[i] * sd[i] * precDiag(i/mi, i%mi)
			logDetQ += 2 * math.Log(sd[i])
		}
		kl = 0.5 * (tr + maha(mu) - float64(d) + logDetP - logDetQ)
		if p := l.maxSDU(ls); p != nil && *p == 0 {
			kl = 0.5 * (maha(mu) + logDetP + float64(d)*math.Log(2*math.Pi))
		}
		l.sd = to32(sd)
	case qFull:
		raw := t["_inducing_scale_tril"]
		lq := vecToChol(raw, d)
		// tr(Σ_p⁻¹ L Lᵀ) = Σ_c l_cᵀ Σ_p⁻¹ l_c over the columns l_c of L.
		tr := 0.0
		col := make([]float64, d)
		for c := 0; c < d; c++ {
			for a := 0; a < d; a++ {
				col[a] = lq[a*d+c]
			}
			if l.whitened {
				for _, v := range col {
					tr += v * v
				}
				continue
			}
			pc := kernels.MatMul(false, false, mo, mi, mi, kernels.MatMul(false, false, mo, mi, mo, aInv, col), bInv)
			for a := range col {
				tr += col[a] * pc[a]
			}
		}
		kl = 0.5 * (tr + maha(mu) - float64(d) + logDetP - 2*logDiagSum(lq, d))
		l.tril = to32(lq)
	case qMatrix:
		rr, cr := t["_inducing_row_scale_tril"], t["_inducing_col_scale_tril"]
		lRow, lCol := vecToChol(rr, mo), vecToChol(cr, mi)
		aq := kernels.MatMul(false, true, mo, mo, mo, lRow, lRow)
		bq := kernels.MatMul(false, true, mi, mi, mi, lCol, lCol)
		var trA, trB float64
		if l.whitened {
			for i := 0; i < mo; i++ {
				trA += aq[i*mo+i]
			}
			for j := 0; j < mi; j++ {
				trB += bq[j*mi+j]
			}
		} else {
			for i := range aq {
				trA += aInv[i] * aq[i]
			}
			for i := range bq {
				trB += bInv[i] * bq[i]
			}
		}
		logDetQ := 2 * (float64(mi)*logDiagSum(lRow, mo) + float64(mo)*logDiagSum(lCol, mi))
		kl = 0.5 * (trA*trB + maha(mu) - float64(d) + logDetP - logDetQ)
		l.rowTril, l.colTril = to32(lRow), to32(lCol)
	case qEnsemble:
		k := len(mean) / d
		l.members = make([][]float32, k)
		for e := 0; e < k; e++ {
			u := append([]float32(nil), mean[e*d:(e+1)*d]...)
			if l.whitened {
				l.whiten(u, make([]float32, d))
			}
			l.members[e] = u
		}
		l.meanU = l.members[0]
		raw := make([][]float32, k)
		for e := range raw {
			raw[e] = mean[e*d : (e+1)*d]
		}
		return 0, raw, nil
	}
	l.mean = mean
	l.meanU = append([]float32(nil), mean...)
	if l.whitened {
		l.whiten(l.meanU, make([]float32, d))
	}
	return kl, [][]float32{mean}, nil
}

func (l *inducing) maxSDU(ls *LayerSpec) *float64 { return ls.Posterior.MaxSDU }

// whiten replaces u by L_r u L_cᵀ (tmp has mo·mi values).
func (l *inducing) whiten(u, tmp []float32) {
	mo, mi := l.mo, l.mi
	kernels.Gemm(false, false, mo, mi, mo, 1, l.lr, mo, u, mi, 0, tmp, mi)
	kernels.Gemm(false, true, mo, mi, mi, 1, tmp, mi, l.lc, mi, 0, u, mi)
}

// sampleU draws u ~ q(U) (whitened as bayesianize does) into u; tmp has 2·mo·mi values.
func (l *inducing) sampleU(fc *fwdCtx, rng *kernels.Stream, u, tmp []float32) {
	d := l.mo * l.mi
	if fc.mean {
		copy(u, l.meanU)
		return
	}
	switch l.q {
	case qEnsemble:
		copy(u, l.members[fc.sample%len(l.members)])
		return
	case qGlobal:
		copy(u[:d], fc.guH[l.guOff:l.guOff+d])
	case qDiagonal:
		rng.Normal(u[:d])
		for i := range u[:d] {
			u[i] = l.mean[i] + l.sd[i]*u[i]
		}
	case qFull:
		eps := tmp[:d]
		rng.Normal(eps)
		copy(u, l.mean)
		kernels.Gemv(false, d, d, 1, l.tril, d, eps, 1, u)
	case qMatrix:
		eps, t := tmp[:d], tmp[d:2*d]
		rng.Normal(eps)
		kernels.Gemm(false, false, l.mo, l.mi, l.mo, 1, l.rowTril, l.mo, eps, l.mi, 0, t, l.mi)
		copy(u, l.mean)
		kernels.Gemm(false, true, l.mo, l.mi, l.mi, 1, t, l.mi, l.colTril, l.mi, 1, u, l.mi)
	}
	if l.whitened {
		l.whiten(u, tmp[:d])
	}
}

func (l *inducing) weightScratch() int {
	d := l.mo * l.mi
	return 8*d + l.mo*l.dIn
}

// sampleWeight implements the extended Matheron rule in its cheaper form (MATH.md §1):
// W = σ (λ E1 + R (u − λ Ū) C), Ū = Z_r E1 Z_cᵀ + L̂_r E2 D_c + D_r E3 L̂_cᵀ + D_r E4 D_c.
func (l *inducing) sampleWeight(fc *fwdCtx, rng *kernels.Stream, w, scratch []float32) {
	mo, mi, dOut, dIn := l.mo, l.mi, l.dOut, l.dIn
	d := mo * mi
	core := l.sampleCore(fc, rng, w[:dOut*dIn], scratch)
	// big = core C; W = σλ E1 + σ R big.
	big := scratch[8*d : 8*d+mo*dIn]
	kernels.Gemm(false, false, mo, dIn, mi, 1, core, mi, l.c, dIn, 0, big, dIn)
	kernels.Gemm(false, false, dOut, dIn, mo, l.sigma, l.r, mo, big, dIn, l.sigma*l.lamda, w, dIn)
}

// zcInPlaceMax is the largest Z_c (values) that sampleCore multiplies row by row, reading it
// once per row of Z_r E1: 128 KiB, about what a small core's L2 keeps; a larger Z_c is packed
// once per sample by Gemm instead.
const zcInPlaceMax = 32 << 10

// sampleCore draws one sample's u ~ q(U), E1 (into e1, dOut × dIn), E2, E3 and E4, in this
// order from rng, and returns core = u − λ Ū (mo × mi, inside scratch[6·mo·mi:7·mo·mi]), the part
// of W = σ (λ E1 + R core C) that is not E1. scratch has weightScratch() values; all but core
// may be reused once it returns.
func (l *inducing) sampleCore(fc *fwdCtx, rng *kernels.Stream, e1, scratch []float32) []float32 {
	mo, mi, dOut, dIn := l.mo, l.mi, l.dOut, l.dIn
	d := mo * mi
	u, tmp := scratch[:d], scratch[d:3*d]
	ubar := scratch[6*d : 7*d]
	big := scratch[8*d : 8*d+mo*dIn]
	l.sampleU(fc, rng, u, tmp)
	rng.Normal(e1)
	// Ū = (Z_r E1) Z_cᵀ
	kernels.Gemm(false, false, mo, dIn, dOut, 1, l.zr, dOut, e1, dIn, 0, big, dIn)
	if mi*dIn <= zcInPlaceMax {
		// Row by row, reading Z_c in place (Gemm would pack Z_cᵀ for every sample).
		for i := 0; i < mo; i++ {
			kernels.Gemv(false, mi, dIn, 1, l.zc, dIn, big[i*dIn:(i+1)*dIn], 0, ubar[i*mi:(i+1)*mi])
		}
	} else {
		kernels.Gemm(false, true, mo, mi, dIn, 1, big, dIn, l.zc, dIn, 0, ubar, mi)
	}
	return l.finishCore(rng, u, ubar, scratch)
}

// finishCore draws E2, E3 and E4 from rng and turns ubar = Z_r E1 Z_cᵀ (scratch[6·mo·mi:
// 7·mo·mi]) into core = u − λ Ū, Ū = Z_r E1 Z_cᵀ + L̂_r E2 D_c + D_r E3 L̂_cᵀ + D_r E4 D_c, in
// place. scratch is sampleCore's (its first 8·mo·mi values).
func (l *inducing) finishCore(rng *kernels.Stream, u, ubar, scratch []float32) []float32 {
	mo, mi := l.mo, l.mi
	d := mo * mi
	e2, e3, e4, t := scratch[3*d:4*d], scratch[4*d:5*d], scratch[5*d:6*d], scratch[7*d:8*d]
	rng.Normal(e2)
	rng.Normal(e3)
	rng.Normal(e4)
	// + L̂_r E2 D_c
	kernels.Gemm(false, false, mo, mi, mo, 1, l.lhatR, mo, e2, mi, 0, t, mi)
	kernels.MulAddRows(mo, mi, ubar, mi, t, mi, l.dc, 0, ubar, mi)
	// + D_r (E3 L̂_cᵀ + E4 D_c)
	kernels.Gemm(false, true, mo, mi, mi, 1, e3, mi, l.lhatC, mi, 0, t, mi)
	kernels.MulAddRows(mo, mi, t, mi, e4, mi, l.dc, 0, t, mi)
	kernels.AxpyRows(mo, mi, l.dr, 1, t, mi, ubar, mi)
	// core = u − λŪ
	kernels.Scale(-l.lamda, ubar[:d])
	kernels.Axpy(1, u[:d], ubar[:d])
	return ubar
}

// meanWeight is σ R u C with u at q(U)'s mean (member 0 for ensembles).
func (l *inducing) meanWeight(w, scratch []float32) {
	big := scratch[:l.mo*l.dIn]
	kernels.Gemm(false, false, l.mo, l.dIn, l.mi, 1, l.meanU, l.mi, l.c, l.dIn, 0, big, l.dIn)
	kernels.Gemm(false, false, l.dOut, l.dIn, l.mo, l.sigma, l.r, l.mo, big, l.dIn, 0, w, l.dIn)
}

// Local sampling (MATH.md §1, per input), with every factor that does not change between
// samples folded in at load time (loadLocal). With L_r, L_c the jittered Cholesky factors of Ψ_r,
// Ψ_c, Ĉ = L_c⁻¹ Z_c and Ẑ_r = L_r⁻¹ Z_r, one sample of f = W x̃ is
//
//	f = σ R⋆ (t − λ c ĝ) + σλ √a e,   ĝ = G_z e + G_d e′,
//
// with t = u v, v = V x̃, b = |Ĉ x̃|², a = |x̃|², c = √a − √(a − b), e ~ N(0, I_dOut),
// e′ ~ N(0, I_Mr), and (R⋆, V, G_z, G_d) = (Ẑ_rᵀ, Ĉ, Ẑ_r, L_r⁻¹ D_r) when u is whitened (then
// R u_w C = Ẑ_rᵀ u Ĉ) or (R, C, Z_r, D_r) when it is not. The product t = u v needs no
// M_r·M_c normals for the diagonal and matrix families: given v it is Gaussian with independent
// coordinates, t = μ v + √((s⊙s)(v⊙v)) ⊙ ε (diagonal) or μ v + |L_colᵀ v| L_row ε (matrix),
// ε ~ N(0, I_Mr), exact for every input. The inputs of one sample share its e, e′ and ε (and u
// for the full and ensemble families), as they share one weight sample, so an input's samples do
// not depend on the rest of its batch.
//
// Each sample s draws from its own stream (seed, s, layer): ε (M_r values; M_r·M_c for the full
// family, none for ensembles), then e (d_out), then e′ (M_r).

// localParams are the load-time factors of the local sampler.
type localParams struct {
	proj []float32 // pr × dIn: Ĉ, then C below it when u is not whitened
	// projBias is proj's last column when the layer has a bias (the 1 appended to the input).
	projBias []float32
	pr       int       // rows of proj: mi, or 2mi
	s2       []float32 // diagonal family: sd², mo × mi
	zero     []float32 // diagonal family: mi zeros (v⊙v as 0 + v·v by kernels.MulAddRows)
	muT      []float32 // the mean of u (unwhitened), mo × mi; ensemble: member 0
	raw      [][]float32
	// gzd is [G_z G_d]: G_z (mo × dOut) beside G_d (mo × mo, lower triangular or diagonal), so
	// that ĝ is one product with a sample's (e, e′).
	gzd []float32
	// The same factors packed for kernels.GemmPacked (right operands of the per-sample products):
	// projᵀ (without the bias column), (σR⋆)ᵀ, [G_z G_d]ᵀ, μᵀ and (s⊙s)ᵀ.
	projP, rstarP, gzdP, muP, s2P *kernels.PackedB
}

// loadLocal computes the local sampler's factors from float64 Z_r, Z_c, D_r and the jittered
// Cholesky factors lr, lc, and the posterior-family parameters already loaded.
func (l *inducing) loadLocal(zr, zc, dr, lr, lc []float64, meanRaw [][]float32) {
	mo, mi, dOut, dIn := l.mo, l.mi, l.dOut, l.dIn
	lp := &l.loc
	chat := append([]float64(nil), zc...)
	kernels.SolveTriangular(kernels.Left, kernels.Lower, false, mi, dIn, lc, mi, chat, dIn)
	lp.pr = mi
	if !l.whitened {
		lp.pr = 2 * mi
	}
	lp.proj = make([]float32, lp.pr*dIn)
	copy(lp.proj, to32(chat))
	if !l.whitened {
		// C = Ψ_c⁻¹ Z_c = L_c⁻ᵀ Ĉ.
		c := append([]float64(nil), chat...)
		kernels.SolveTriangular(kernels.Left, kernels.Lower, true, mi, dIn, lc, mi, c, dIn)
		copy(lp.proj[mi*dIn:], to32(c))
	}
	zhat := append([]float64(nil), zr...)
	kernels.SolveTriangular(kernels.Left, kernels.Lower, false, mo, dOut, lr, mo, zhat, dOut)
	gd := make([]float64, mo*mo)
	var rstar, gz []float32 // R⋆ (dOut × mo) and G_z (mo × dOut)
	if l.whitened {
		// R⋆ = Ẑ_rᵀ, G_z = Ẑ_r, G_d = L_r⁻¹ D_r.
		rs := make([]float64, dOut*mo)
		for i := 0; i < mo; i++ {
			for j := 0; j < dOut; j++ {
				rs[j*mo+i] = zhat[i*dOut+j]
			}
		}
		rstar, gz = to32(rs), to32(zhat)
		for i := 0; i < mo; i++ {
			gd[i*mo+i] = 1
		}
		kernels.SolveTriangular(kernels.Left, kernels.Lower, false, mo, mo, lr, mo, gd, mo)
		for i := 0; i < mo; i++ {
			for j := 0; j < mo; j++ {
				gd[i*mo+j] *= dr[j]
			}
		}
	} else {
		rstar, gz = l.r, l.zr
		for i := 0; i < mo; i++ {
			gd[i*mo+i] = dr[i]
		}
	}
	gd32 := to32(gd)
	if l.sd != nil {
		lp.s2 = make([]float32, len(l.sd))
		for i, v := range l.sd {
			lp.s2[i] = v * v
		}
	}
	if l.hasBias {
		lp.projBias = make([]float32, lp.pr)
		for r := range lp.projBias {
			lp.projBias[r] = lp.proj[r*dIn+l.k]
		}
	}
	lp.raw = meanRaw
	lp.muT = meanRaw[0]
	lp.projP = kernels.NewPackedB(true, l.k, lp.pr, lp.proj, dIn)
	// σR⋆ packed: the per-sample product t (σR⋆)ᵀ then has alpha 1 (kernels store such tiles
	// without a multiplication).
	srs := make([]float32, len(rstar))
	for i, v := range rstar {
		srs[i] = l.sigma * v
	}
	lp.rstarP = kernels.NewPackedB(true, mo, dOut, srs, mo)
	lp.gzd = make([]float32, mo*(dOut+mo))
	for i := 0; i < mo; i++ {
		copy(lp.gzd[i*(dOut+mo):], gz[i*dOut:(i+1)*dOut])
		copy(lp.gzd[i*(dOut+mo)+dOut:], gd32[i*mo:(i+1)*mo])
	}
	lp.gzdP = kernels.NewPackedB(true, dOut+mo, mo, lp.gzd, dOut+mo)
	lp.muP = kernels.NewPackedB(true, mi, mo, lp.muT, mi)
	if lp.s2 != nil {
		lp.s2P = kernels.NewPackedB(true, mi, mo, lp.s2, mi)
		lp.zero = make([]float32, mi)
	}
}

// unitAlpha is the factor 1 for kernels.AxpyRows.
var unitAlpha = [1]float32{1}

// prepStride is the number of prep values per input: proj (pr), σλ√a and −λc (the factors of e and
// ĝ in apply), then for the diagonal and matrix families μ v (mo), and for the matrix family the
// scale of ε (one value).
func (l *inducing) prepStride() int {
	s := l.loc.pr + 2
	switch l.q {
	case qDiagonal:
		s += l.mo
	case qMatrix:
		s += l.mo + 1
	}
	return s
}

// prepSize is n rows of prepStride values, for the diagonal family n rows of v⊙v (mi) and then
// n rows of the scale of ε (mo), each block contiguous (see diagBlocks), and the packed products'
// work slice.
func (l *inducing) prepSize(n int) int64 {
	s := prod(n, l.prepStride())
	if l.q == qDiagonal {
		s += prod(n, l.mi+l.mo)
	}
	return s + kernels.GemmPackedWork
}

// diagBlocks returns the diagonal family's v⊙v (n × mi) and scale √((s⊙s)(v⊙v)) (n × mo) blocks
// of a prep of n rows.
func (l *inducing) diagBlocks(prep []float32, n int) (vv, sc []float32) {
	o := n * l.prepStride()
	return prep[o : o+n*l.mi], prep[o+n*l.mi : o+n*(l.mi+l.mo)]
}

// prepare computes, for n inputs, everything of the local sample that depends on the input only:
// the projections V x̃ (with Ĉ x̃), σλ√a, −λc and the mean and scale of t for the diagonal and
// matrix families. The rows are stored with stride prepStride() in prep (the diagonal family's v⊙v and
// scale in blocks after them, see diagBlocks).
func (l *inducing) prepare(in []float32, n int, prep []float32) {
	mi, mo, st := l.mi, l.mo, l.prepStride()
	lp := &l.loc
	ps := int(l.prepSize(n))
	work := prep[ps-kernels.GemmPackedWork : ps]
	kernels.GemmPacked(false, n, 1, in, l.k, lp.projP, 0, prep, st, work)
	if l.hasBias {
		kernels.AxpyRows(n, lp.pr, unitAlpha[:], 0, lp.projBias, 0, prep, st)
	}
	vOff := 0
	if !l.whitened {
		vOff = mi
	}
	f, g := l.sigma*l.lamda, -l.lamda
	// |x|² and |p[:mi]|² of every row into the two slots they become, in two calls.
	kernels.DotRows(n, l.k, in, l.k, in, l.k, prep[lp.pr:], st)
	kernels.DotRows(n, mi, prep, st, prep, st, prep[lp.pr+1:], st)
	for i := 0; i < n; i++ {
		p := prep[i*st : i*st+lp.pr+2]
		a := float64(p[lp.pr])
		if l.hasBias {
			a++
		}
		b := float64(p[lp.pr+1])
		rest := max(a-b, 0)
		sa := math.Sqrt(a)
		p[lp.pr] = f * float32(sa)
		p[lp.pr+1] = g * float32(sa-math.Sqrt(rest))
		if l.q == qMatrix {
			// |L_colᵀ v|.
			v := prep[i*st+vOff : i*st+vOff+mi]
			nrm := 0.0
			for c := 0; c < mi; c++ {
				acc := float32(0)
				for r := c; r < mi; r++ {
					acc += l.colTril[r*mi+c] * v[r]
				}
				nrm += float64(acc) * float64(acc)
			}
			prep[i*st+lp.pr+2+mo] = float32(math.Sqrt(nrm))
		}
	}
	if l.q != qDiagonal && l.q != qMatrix {
		return
	}
	// μ v for all rows; for the diagonal family also √((s⊙s)(v⊙v)), v⊙v as 0 + v·v for all rows
	// in one call.
	t0 := lp.pr + 2
	kernels.GemmPacked(false, n, 1, prep[vOff:], st, lp.muP, 0, prep[t0:], st, work)
	if l.q == qDiagonal {
		vv, sc := l.diagBlocks(prep, n)
		kernels.MulAddRows(n, mi, lp.zero, 0, prep[vOff:], st, prep[vOff:], st, vv, mi)
		kernels.GemmPacked(false, n, 1, vv, mi, lp.s2P, 0, sc, mo, work)
		kernels.SqrtPos(sc)
	}
}

// zStride is the number of normals one local sample of the layer draws: ε (M_r values, M_r·M_c
// for the full family, none otherwise), then e (d_out), then e′ (M_r).
func (l *inducing) zStride() (first, stride int) {
	switch l.q {
	case qDiagonal, qMatrix:
		first = l.mo
	case qFull:
		first = l.mo * l.mi
	}
	return first, first + l.dOut + l.mo
}

// applyScratch is the scratch apply needs for B samples of n inputs each.
func (l *inducing) applyScratch(n, B int) int64 {
	_, zst := l.zStride()
	return prod(B, zst) + prod(B, l.mo) + prod(B, n, l.mo) + prod(l.mo, l.mi) + kernels.GemmPackedWork
}

// apply draws samples fc.sample … fc.sample+B−1 of the layer's outputs for n inputs each into out
// (B × n × dOut, sample-major). prep holds n rows shared by every sample (shared) or B·n rows,
// one per output row.
func (l *inducing) apply(fc *fwdCtx, id uint32, prep []float32, shared bool, out []float32, n, B int, scratch []float32) {
	mo, dOut, st := l.mo, l.dOut, l.prepStride()
	lp := &l.loc
	rows := B * n
	first, zst := l.zStride()
	// z holds sample b's normals in row b (B × zst), drawn from its stream in one go: ε, e, e′.
	// The products below read e and (e, e′) in place.
	z, rest := scratch[:B*zst], scratch[B*zst:]
	g, rest := rest[:B*mo], rest[B*mo:]
	t, rest := rest[:rows*mo], rest[rows*mo:]
	u, rest := rest[:l.mo*l.mi], rest[l.mo*l.mi:]
	work := rest[:kernels.GemmPackedWork]
	// Output row r = b·n + i (sample b, input i) reads the prep row at b·pStep + i·st.
	pStep := n * st
	if shared {
		pStep = 0
	}
	// The diagonal family's scale of ε for output row b·n + i at sc[b·sStep + i·mo].
	var sc []float32
	sStep := 0
	if l.q == qDiagonal {
		if shared {
			_, sc = l.diagBlocks(prep, n)
		} else {
			_, sc = l.diagBlocks(prep, rows)
			sStep = n * mo
		}
	}
	if !fc.mean {
		fc.rng.NormalRows(fc.seed, uint32(fc.sample), id, z, B, zst, zst)
	}
	l.sampleT(fc, prep, pStep, sc, sStep, z, zst, g, t, u, n, B)
	if !fc.mean {
		// ĝ = [E E′] [G_z G_d]ᵀ for the B samples at once, reading (e, e′) in place; t ← t − λ c ĝ.
		kernels.GemmPacked(false, B, 1, z[first:], zst, lp.gzdP, 0, g, mo, work)
		if pStep == 0 && n == 1 {
			// One input: the same c for every sample, and t has the layout of g.
			kernels.Axpy(prep[lp.pr+1], g, t)
		} else {
			l.rowsAxpy(prep[lp.pr+1:], pStep, g, mo, t, mo, n, B)
		}
	}
	// out = t (σR⋆)ᵀ (+ σλ √a e).
	kernels.GemmPacked(false, rows, 1, t, mo, lp.rstarP, 0, out, dOut, work)
	if fc.mean {
		return
	}
	l.rowsAxpy(prep[lp.pr:], pStep, z[first:], zst, out, dOut, n, B)
}

// rowsAxpy adds, for each of apply's B·n output rows r = b·n + i, the factor al[b·pStep + i·st]
// (a column of the prep rows, see apply for pStep) times row b of x (B rows of ldy values, leading
// dimension ldx) to row r of y (B·n rows of ldy values, contiguous): each sample's vector, scaled
// per input.
func (l *inducing) rowsAxpy(al []float32, pStep int, x []float32, ldx int, y []float32, ldy, n, B int) {
	if n == 1 {
		kernels.AxpyRows(B, ldy, al, pStep, x, ldx, y, ldy)
		return
	}
	st := l.prepStride()
	for b := 0; b < B; b++ {
		kernels.AxpyRows(n, ldy, al[b*pStep:], st, x[b*ldx:], 0, y[b*n*ldy:], ldy)
	}
}

// sampleT writes t = u v for the B·n output rows of apply (rows × mo, sample-major): for the
// diagonal and matrix families the exact Gaussian μ v + scale ⊙ ε from ε in z (drawn, or the mean
// μ v), for the others u (the sample's, or the mean) times v. See apply for the arguments.
func (l *inducing) sampleT(fc *fwdCtx, prep []float32, pStep int, sc []float32, sStep int, z []float32, zst int, g, t, u []float32, n, B int) {
	mo, mi, st := l.mo, l.mi, l.prepStride()
	lp := &l.loc
	mOff := lp.pr + 2
	switch l.q {
	case qDiagonal, qMatrix:
		if l.q == qDiagonal && !fc.mean {
			// t = μ v + √((s⊙s)(v⊙v)) ⊙ ε, row by row: rows of prep, of the scales (sc) and of
			// ε (z) at their strides.
			if n == 1 {
				kernels.MulAddRows(B, mo, prep[mOff:], pStep, sc, sStep, z, zst, t, mo)
				return
			}
			for b := 0; b < B; b++ {
				po := b*pStep + mOff
				kernels.MulAddRows(n, mo, prep[po:], st, sc[b*sStep:], mo, z[b*zst:], 0, t[b*n*mo:], mo)
			}
			return
		}
		for b := 0; b < B; b++ {
			ep := z[b*zst : b*zst+mo]
			if l.q == qMatrix && !fc.mean {
				// L_row ε, once per sample.
				gb := g[b*mo : (b+1)*mo]
				kernels.Gemv(false, mo, mo, 1, l.rowTril, mo, ep, 0, gb)
				copy(ep, gb)
			}
			for i := 0; i < n; i++ {
				po := b*pStep + i*st + mOff
				ti := t[(b*n+i)*mo : (b*n+i+1)*mo]
				copy(ti, prep[po:po+mo])
				if !fc.mean { // the matrix family
					kernels.Axpy(prep[po+mo], ep, ti)
				}
			}
		}
	default: // QFull, QEnsemble, QGlobal
		d := mo * mi
		vOff := 0
		if !l.whitened {
			vOff = mi
		}
		for b := 0; b < B; b++ {
			um := lp.muT
			switch {
			case fc.mean:
			case l.q == qGlobal:
				um = l.globalBlock(fc, b)
			case l.q == qEnsemble:
				um = lp.raw[(fc.sample+b)%len(lp.raw)]
			case l.q == qFull:
				copy(u, lp.muT)
				kernels.Gemv(false, d, d, 1, l.tril, d, z[b*zst:b*zst+d], 1, u)
				um = u
			}
			for i := 0; i < n; i++ {
				po := b*pStep + i*st + vOff
				kernels.Gemv(false, mo, mi, 1, um, mi, prep[po:po+mi], 0, t[(b*n+i)*mo:(b*n+i+1)*mo])
			}
		}
	}
}

// localCost is the cost (multiply-adds, normals weighted by normalCost) of one local sample for n
// inputs whose projections are not shared with other samples.
func (l *inducing) localCost(n int) int64 {
	mo, dOut, n64 := int64(l.mo), int64(l.dOut), int64(n)
	c := l.prepCost(n) + n64*(dOut*mo+dOut+mo) + mo*dOut + mo*mo + normalCost*(dOut+2*mo)
	if l.q == qFull {
		d := mo * int64(l.mi)
		c += d*d/2 + normalCost*d
	}
	return c
}

// prepCost is the cost of prepare for n inputs.
func (l *inducing) prepCost(n int) int64 {
	c := int64(n) * (prod(l.loc.pr, l.dIn) + prod(l.mo, l.mi))
	if l.q == qDiagonal {
		c += prod(n, l.mo, l.mi)
	}
	return c
}

// weightCost is the cost of drawing one weight matrix.
func (l *inducing) weightCost() int64 {
	formed, _ := l.pathCosts(0)
	return formed
}
