package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
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
	zcC              []float32 // 2mi × dIn: Z_c stacked on C = Ψ_c⁻¹ Z_c
	r                []float32 // dOut × mo: R = Z_rᵀ Ψ_r⁻¹
	dr, dc           []float32 // diag(D_r), diag(D_c)
	lhatR, lhatC     []float32 // chol(Z_r Z_rᵀ), chol(Z_c Z_cᵀ), jittered
	lr, lc           []float32 // chol(Ψ_r), chol(Ψ_c), jittered (whitening)
	whitened         bool
	q                string
	mean             []float32   // mo × mi (row-major u)
	sd               []float32   // diagonal: mo × mi
	tril             []float32   // full: d × d lower, d = mo·mi, row-major vec(u)
	rowTril, colTril []float32   // matrix: mo × mo, mi × mi
	members          [][]float32 // ensemble: each member's u, already whitened
	meanU            []float32   // u at the posterior mean (member 0 for ensembles), whitened
	kl               float64
}

func loadInducing(b *builder, ls *LayerSpec, dOut, dIn int) (*inducing, error) {
	p := ls.Posterior
	mo, mi := p.InducingRows, p.InducingCols
	name := ls.Name
	errf := func(format string, args ...any) error {
		return fmt.Errorf("runtime: layer %q (inducing): %s", name, fmt.Sprintf(format, args...))
	}
	if mo < 1 || mi < 1 || mo > 4096 || mi > 4096 {
		return nil, errf("inducing_rows %d / inducing_cols %d out of range", mo, mi)
	}
	if !(p.PriorSD > 0) || math.IsInf(p.PriorSD, 0) {
		return nil, errf("prior_sd %g must be positive", p.PriorSD)
	}
	l := &inducing{name: name, dOut: dOut, dIn: dIn, k: dIn, mo: mo, mi: mi, hasBias: ls.Bias,
		sigma: float32(p.PriorSD), whitened: p.WhitenedU, q: p.QInducing}
	if ls.Bias {
		l.k = dIn - 1
	}
	zr32, err := b.tensor(name, "z_row", mo, dOut)
	if err != nil {
		return nil, err
	}
	zc32, err := b.tensor(name, "z_col", mi, dIn)
	if err != nil {
		return nil, err
	}
	dRow, err := b.tensor(name, "_d_row", mo)
	if err != nil {
		return nil, err
	}
	dCol, err := b.tensor(name, "_d_col", mi)
	if err != nil {
		return nil, err
	}
	lam, err := b.tensor(name, "_lamda")
	if err != nil {
		return nil, err
	}
	lamda := softplus(float64(lam[0]))
	if p.MaxLamda != nil {
		lamda = math.Min(lamda, *p.MaxLamda)
	}
	l.lamda = float32(lamda)

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
	l.zcC = make([]float32, 2*mi*dIn)
	copy(l.zcC, zc32)
	for i, v := range c {
		l.zcC[mi*dIn+i] = float32(v)
	}
	l.dr, l.dc = to32(dr), to32(dc)
	l.lhatR, l.lhatC = to32(lhr), to32(lhc)
	l.lr, l.lc = to32(lr), to32(lc)

	klU, err := l.loadQ(b, ls, lr, lc)
	if err != nil {
		return nil, err
	}
	l.kl = klU + float64(dIn)*float64(dOut)*(lamda*lamda/2-math.Log(lamda)-0.5)
	return l, nil
}

// loadQ reads q(U) and returns KL[q(U) ‖ p(U)] (MATH.md §1; bayesianize's definition).
func (l *inducing) loadQ(b *builder, ls *LayerSpec, lr, lc []float64) (float64, error) {
	mo, mi, name := l.mo, l.mi, ls.Name
	d := mo * mi
	var (
		mean []float32
		err  error
	)
	switch l.q {
	case QDiagonal, QMatrix:
		mean, err = b.tensor(name, "inducing_mean", mo, mi)
	case QFull:
		mean, err = b.tensor(name, "inducing_mean", d)
	case QEnsemble:
		k := ls.Posterior.EnsembleSize
		if k < 1 || k > 1024 {
			return 0, fmt.Errorf("runtime: layer %q (inducing): ensemble_size %d out of range", name, k)
		}
		mean, err = b.tensor(name, "inducing_mean", k, mo, mi)
	default:
		return 0, fmt.Errorf("runtime: layer %q (inducing): q_inducing %q is not diagonal, full, matrix or ensemble", name, l.q)
	}
	if err != nil {
		return 0, err
	}
	mu := to64(mean)
	// Prior precision factors: whitened p(U) = N(0, I); else U ~ MN(0, Ψ_r, Ψ_c) (jittered).
	var aInv, bInv []float64
	logDetP := 0.0
	if !l.whitened {
		aInv, bInv = cholInverse(lr, mo), cholInverse(lc, mi)
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
		am := mul64(false, false, mo, mi, mo, aInv, m)
		amb := mul64(false, false, mo, mi, mi, am, bInv)
		s := 0.0
		for i := range m {
			s += m[i] * amb[i]
		}
		return s
	}
	var kl float64
	switch l.q {
	case QDiagonal:
		sdRaw, err := b.tensor(name, "_inducing_sd", mo, mi)
		if err != nil {
			return 0, err
		}
		sd := make([]float64, d)
		tr, logDetQ := 0.0, 0.0
		for i := range sd {
			sd[i] = softplus(float64(sdRaw[i]))
			if p := l.maxSDU(ls); p != nil {
				sd[i] = math.Min(sd[i], *p)
			}
			tr += sd[i] * sd[i] * precDiag(i/mi, i%mi)
			logDetQ += 2 * math.Log(sd[i])
		}
		kl = 0.5 * (tr + maha(mu) - float64(d) + logDetP - logDetQ)
		l.sd = to32(sd)
	case QFull:
		raw, err := b.tensor(name, "_inducing_scale_tril", d*(d+1)/2)
		if err != nil {
			return 0, err
		}
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
			pc := mul64(false, false, mo, mi, mi, mul64(false, false, mo, mi, mo, aInv, col), bInv)
			for a := range col {
				tr += col[a] * pc[a]
			}
		}
		kl = 0.5 * (tr + maha(mu) - float64(d) + logDetP - 2*logDiagSum(lq, d))
		l.tril = to32(lq)
	case QMatrix:
		rr, err := b.tensor(name, "_inducing_row_scale_tril", mo*(mo+1)/2)
		if err != nil {
			return 0, err
		}
		cr, err := b.tensor(name, "_inducing_col_scale_tril", mi*(mi+1)/2)
		if err != nil {
			return 0, err
		}
		lRow, lCol := vecToChol(rr, mo), vecToChol(cr, mi)
		aq := mul64(false, true, mo, mo, mo, lRow, lRow)
		bq := mul64(false, true, mi, mi, mi, lCol, lCol)
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
	case QEnsemble:
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
		return 0, nil
	}
	l.mean = mean
	l.meanU = append([]float32(nil), mean...)
	if l.whitened {
		l.whiten(l.meanU, make([]float32, d))
	}
	return kl, nil
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
	case QEnsemble:
		copy(u, l.members[fc.sample%len(l.members)])
		return
	case QDiagonal:
		rng.Normal(u[:d])
		for i := range u[:d] {
			u[i] = l.mean[i] + l.sd[i]*u[i]
		}
	case QFull:
		eps := tmp[:d]
		rng.Normal(eps)
		copy(u, l.mean)
		kernels.Gemv(false, d, d, 1, l.tril, d, eps, 1, u)
	case QMatrix:
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
	u, tmp := scratch[:d], scratch[d:3*d]
	e2, e3, e4 := scratch[3*d:4*d], scratch[4*d:5*d], scratch[5*d:6*d]
	ubar, t := scratch[6*d:7*d], scratch[7*d:8*d]
	big := scratch[8*d : 8*d+mo*dIn]
	l.sampleU(fc, rng, u, tmp)
	e1 := w[:dOut*dIn]
	rng.Normal(e1)
	rng.Normal(e2)
	rng.Normal(e3)
	rng.Normal(e4)
	// Ū = (Z_r E1) Z_cᵀ
	kernels.Gemm(false, false, mo, dIn, dOut, 1, l.zr, dOut, e1, dIn, 0, big, dIn)
	kernels.Gemm(false, true, mo, mi, dIn, 1, big, dIn, l.zcC, dIn, 0, ubar, mi)
	// + L̂_r E2 D_c
	kernels.Gemm(false, false, mo, mi, mo, 1, l.lhatR, mo, e2, mi, 0, t, mi)
	for i := 0; i < mo; i++ {
		for j := 0; j < mi; j++ {
			ubar[i*mi+j] += t[i*mi+j] * l.dc[j]
		}
	}
	// + D_r E3 L̂_cᵀ
	kernels.Gemm(false, true, mo, mi, mi, 1, e3, mi, l.lhatC, mi, 0, t, mi)
	for i := 0; i < mo; i++ {
		for j := 0; j < mi; j++ {
			ubar[i*mi+j] += l.dr[i] * (t[i*mi+j] + e4[i*mi+j]*l.dc[j])
		}
	}
	// core = u − λŪ; big = core C; W = σλ E1 + σ R big.
	for i := range ubar {
		ubar[i] = u[i] - l.lamda*ubar[i]
	}
	kernels.Gemm(false, false, mo, dIn, mi, 1, ubar, mi, l.zcC[mi*dIn:], dIn, 0, big, dIn)
	kernels.Gemm(false, false, dOut, dIn, mo, l.sigma, l.r, mo, big, dIn, l.sigma*l.lamda, w, dIn)
}

// meanWeight is σ R u C with u at q(U)'s mean (member 0 for ensembles).
func (l *inducing) meanWeight(w, scratch []float32) {
	big := scratch[:l.mo*l.dIn]
	kernels.Gemm(false, false, l.mo, l.dIn, l.mi, 1, l.meanU, l.mi, l.zcC[l.mi*l.dIn:], l.dIn, 0, big, l.dIn)
	kernels.Gemm(false, false, l.dOut, l.dIn, l.mo, l.sigma, l.r, l.mo, big, l.dIn, 0, w, l.dIn)
}

// Local sampling (MATH.md §1, per input): prep holds, per input, Z_c x̃ and C x̃ (2mi values)
// followed by √a and c = √a − √(a − b) for all inputs.
func (l *inducing) prepSize(n int) int { return n * (2*l.mi + 2) }

func (l *inducing) prepare(in []float32, n int, prep []float32) {
	mi := l.mi
	p := prep[:n*2*mi]
	augmentedProject(l.zcC, 2*mi, l.k, l.dIn, l.hasBias, in, n, p)
	sa, cc := prep[n*2*mi:n*(2*mi+1)], prep[n*(2*mi+1):n*(2*mi+2)]
	for i := 0; i < n; i++ {
		x := in[i*l.k : (i+1)*l.k]
		a := float64(kernels.Dot(x, x))
		if l.hasBias {
			a++
		}
		pi := p[i*2*mi : (i+1)*2*mi]
		b := float64(kernels.Dot(pi[:mi], pi[mi:]))
		rest := a - b
		if rest < 0 {
			rest = 0
		}
		sa[i] = float32(math.Sqrt(a))
		cc[i] = float32(math.Sqrt(a) - math.Sqrt(rest))
	}
}

func (l *inducing) applyScratch(n int) int {
	return 3*l.mo*l.mi + n*l.mo + 2*l.dOut + 2*l.mo
}

func (l *inducing) apply(fc *fwdCtx, rng *kernels.Stream, prep, out []float32, n int, scratch []float32) {
	mo, mi, dOut := l.mo, l.mi, l.dOut
	d := mo * mi
	u, tmp := scratch[:d], scratch[d:3*d]
	s := scratch[3*d : 3*d+n*mo]
	rest := scratch[3*d+n*mo:]
	e, v := rest[:dOut], rest[dOut:2*dOut]
	e2, g := rest[2*dOut:2*dOut+mo], rest[2*dOut+mo:2*dOut+2*mo]
	l.sampleU(fc, rng, u, tmp)
	// mean = σ R u (C x̃): S = (C x̃) uᵀ is n × mo; out = σ S Rᵀ.
	kernels.Gemm(false, true, n, mo, mi, 1, prep[mi:], 2*mi, u, mi, 0, s, mo)
	kernels.Gemm(false, true, n, dOut, mo, l.sigma, s, mo, l.r, mo, 0, out, dOut)
	if fc.mean {
		return
	}
	// noise = σλ(√a e − c R (Z_r e + D_r e′)), e and e′ shared by the batch's inputs.
	rng.Normal(e)
	rng.Normal(e2)
	kernels.Gemv(false, mo, dOut, 1, l.zr, dOut, e, 0, g)
	for i := range g {
		g[i] += l.dr[i] * e2[i]
	}
	kernels.Gemv(false, dOut, mo, 1, l.r, mo, g, 0, v)
	sl := l.sigma * l.lamda
	sa, cc := prep[n*2*mi:n*(2*mi+1)], prep[n*(2*mi+1):n*(2*mi+2)]
	for i := 0; i < n; i++ {
		kernels.Axpy(sl*sa[i], e, out[i*dOut:(i+1)*dOut])
		kernels.Axpy(-sl*cc[i], v, out[i*dOut:(i+1)*dOut])
	}
}

func (l *inducing) localFlops(n int) int {
	return n*(2*l.mi*l.dIn+l.mo*l.mi+l.dOut*l.mo+2*l.dOut) + 2*l.mo*l.dOut
}

func (l *inducing) weightFlops() int {
	return 2*l.mo*l.dOut*l.dIn + l.mo*l.mi*l.dIn + 2*l.dOut*l.dIn
}
