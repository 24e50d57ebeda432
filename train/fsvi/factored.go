package fsvi

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// The factored path. For a Linear layer z = W a + b the Jacobian row of output r (context point
// n = r / Q) with respect to W is the outer product G[r,:] ⊗ A[n,:] of g = ∂f_r/∂z and the
// layer's input a at that point, and with respect to b it is G[r,:]. With q's variances S
// (d_out × d_in) and s_b, a layer's part of K = J diag(σ²) Jᵀ is then
//
//	K[r,r′] = Σ_o G[r,o] G[r′,o] B_o[n,n′],   B_o[n,n′] = Σ_i S[o,i] A[n,i] A[n′,i] + s_b[o],
//
// which costs d_out·d_in·|X_C|(|X_C|+1)/2 multiply-adds for B (one GEMM against the pairwise
// products A[n,:] ⊙ A[n′,:]) and d_out·D²/2 for K, instead of the D²·P/2 of the Gram product of
// the materialised J — and no D×P matrix at all. The gradients have the same structure:
//
//	∂KL/∂μ_W = Cᵀ A,                C[n,o] = Σ_q v[nQ+q] G[nQ+q,o],  v = K_p⁻¹ δ,
//	diag(Jᵀ H J)_W[o,i] = Σ_{n,n′} E_o[n,n′] A[n,i] A[n′,i],  E_o[n,n′] = Σ_{q,q′} G[nq,o] H[nq,n′q′] G[n′q′,o],
//
// and a row of ∂KL/∂J = H J diag(σ²) (+ the prior side's terms) is diag(σ²) ⊙ (T_rᵀ A) with
// T_r[n′,o] = Σ_q′ H[r,n′Q+q′] G[n′Q+q′,o], formed one row at a time (FactoredRows).

// denseFactor is one Linear ffg layer's Jacobian in factored form.
type denseFactor struct {
	w, b      int       // indices of the weight and bias tensors (b = −1: no bias)
	dOut, dIn int       // the weight is dOut × dIn, row-major
	a         []float64 // Points × dIn: the layer's input at each context point
	g         []float64 // D × dOut: row r is ∂f_r/∂z at the point of row r
}

// Linearize is Jacobian, in factored form when every ffg layer of net is a Linear layer run once
// per pass in FFGTensors' order (MLPs): then no D×P matrix is formed and AddKLGrad takes the
// factored path (see the comment above denseFactor), whose cost grows with the layers' sizes
// times |X_C|² instead of D²·P. Other networks (Conv2d layers, residual blocks whose order
// differs) get Jacobian's dense blocks.
func Linearize[T bnn.Float](tp *autodiff.Tape[T], net *bnn.Net[T], ts []bnn.FFGTensor[T], x []T, m int, shape []int) (*Linearization, error) {
	lin, ok, err := factoredJacobian(tp, net, ts, x, m, shape)
	if err != nil || ok {
		return lin, err
	}
	return Jacobian(tp, net, ts, x, m, shape)
}

// Factorable reports whether Linearize factors the Jacobian of net (every ffg layer a Linear
// layer, run in ts's order), from one pass of a zero input of the given shape.
func Factorable[T bnn.Float](tp *autodiff.Tape[T], net *bnn.Net[T], ts []bnn.FFGTensor[T], shape []int) (bool, error) {
	dim := 1
	for _, s := range shape {
		dim *= s
	}
	defer tp.Reset()
	tp.Reset()
	net.Begin()
	var taps []bnn.LayerTap[T]
	net.ForwardMeanTapped(tp, tp.Const(make([]T, dim), append([]int{1}, shape...)...), &taps)
	if err := tp.Err(); err != nil {
		return false, fmt.Errorf("fsvi: forward pass: %w", err)
	}
	_, ok := mapFactors(taps, ts)
	return ok, nil
}

// FactoredBytes is the memory of the factored path's buffers (float64) for points context
// points, outputs outputs and Linear layers of the given (d_out, d_in): the T products (twice
// with the prior side of ∂KL/∂J), the pairwise products, B and E, the D×D matrices and the
// factors themselves.
func FactoredBytes(points, outputs int, layers [][2]int, priorSide bool) int64 {
	m, D := int64(points), int64(points)*int64(outputs)
	np := m * (m + 1) / 2
	t := int64(1)
	if priorSide {
		t = 2
	}
	n := 6 * D * D
	for _, l := range layers {
		dOut, dIn := int64(l[0]), int64(l[1])
		n += t*D*m*dOut + np*(dIn+3*dOut) + m*dIn + D*dOut + 6*dOut*dIn
	}
	return 8 * n
}

// factoredJacobian returns ok = false, without an error, when the network's ffg layers do not
// map one to one onto ts as Linear layers.
func factoredJacobian[T bnn.Float](tp *autodiff.Tape[T], net *bnn.Net[T], ts []bnn.FFGTensor[T], x []T, m int, shape []int) (*Linearization, bool, error) {
	dim := 1
	for _, s := range shape {
		dim *= s
	}
	if m < 1 || len(x) != m*dim {
		return nil, false, fmt.Errorf("fsvi: %d context values for %d points of shape %v", len(x), m, shape)
	}
	if len(ts) == 0 {
		return nil, false, fmt.Errorf("fsvi: the network has no mean-field Gaussian tensors")
	}
	defer func() {
		tp.Reset()
		for _, p := range net.Params() {
			clear(p.Grad)
		}
	}()
	lin := &Linearization{Points: m}
	one := append([]int{1}, shape...)
	var taps []bnn.LayerTap[T]
	var seed []T
	for n := 0; n < m; n++ {
		tp.Reset()
		net.Begin()
		taps = taps[:0]
		out := net.ForwardMeanTapped(tp, tp.Const(x[n*dim:(n+1)*dim], one...), &taps)
		if err := tp.Err(); err != nil {
			return nil, false, fmt.Errorf("fsvi: linearisation forward pass: %w", err)
		}
		q := out.Len()
		if n == 0 {
			lin.Outputs = q
			fs, ok := mapFactors(taps, ts)
			if !ok {
				return nil, false, nil
			}
			for i := range fs {
				fs[i].a = make([]float64, m*fs[i].dIn)
				fs[i].g = make([]float64, m*q*fs[i].dOut)
			}
			lin.factors = fs
			seed = make([]T, q)
		} else if len(taps) != len(lin.factors) || q != lin.Outputs {
			return nil, false, fmt.Errorf("fsvi: linearisation: point %d ran %d ffg layers and %d outputs, point 0 %d and %d",
				n, len(taps), q, len(lin.factors), lin.Outputs)
		}
		for i, f := range lin.factors {
			in := taps[i].In.Value()
			if len(in) != f.dIn || taps[i].Out.Len() != f.dOut {
				return nil, false, fmt.Errorf("fsvi: linearisation: layer %q changed shape between context points", taps[i].Layer)
			}
			dst := f.a[n*f.dIn : (n+1)*f.dIn]
			for k, v := range in {
				dst[k] = float64(v)
			}
		}
		for j := 0; j < q; j++ {
			tp.ZeroGrads()
			clear(seed)
			seed[j] = 1
			if err := tp.BackwardFrom(out, seed); err != nil {
				return nil, false, fmt.Errorf("fsvi: linearisation reverse pass: %w", err)
			}
			r := n*q + j
			for i, f := range lin.factors {
				dst := f.g[r*f.dOut : (r+1)*f.dOut]
				gr := taps[i].Out.Grad()
				if gr == nil {
					clear(dst)
					continue
				}
				for k, v := range gr {
					dst[k] = float64(v)
				}
			}
		}
	}
	return lin, true, nil
}

// mapFactors matches the tapped layers with ts: each tap a Linear layer whose weight (and bias,
// when the next tensor is the same layer's and has d_out values) are the next tensors.
func mapFactors[T bnn.Float](taps []bnn.LayerTap[T], ts []bnn.FFGTensor[T]) ([]denseFactor, bool) {
	var fs []denseFactor
	k := 0
	for _, tp := range taps {
		dIn, dOut := tp.In.Len(), tp.Out.Len()
		if tp.Conv || k >= len(ts) || ts[k].Layer != tp.Layer || len(ts[k].Mean.Value) != dIn*dOut {
			return nil, false
		}
		f := denseFactor{w: k, b: -1, dOut: dOut, dIn: dIn}
		k++
		if k < len(ts) && ts[k].Layer == tp.Layer && len(ts[k].Mean.Value) == dOut {
			f.b = k
			k++
		}
		fs = append(fs, f)
	}
	return fs, k == len(ts)
}

// Dense returns the Jacobian as D×P_t blocks, one per tensor (Blocks itself for a dense
// linearisation; formed from the factors otherwise, for tests and the tape path).
func (l *Linearization) Dense() [][]float64 {
	if l.factors == nil {
		return l.Blocks
	}
	nt := 0
	for _, f := range l.factors {
		nt = max(nt, f.w+1, f.b+1)
	}
	blocks := make([][]float64, nt)
	D, Q := l.D(), l.Outputs
	for _, f := range l.factors {
		pw := f.dOut * f.dIn
		bw := make([]float64, D*pw)
		var bb []float64
		if f.b >= 0 {
			bb = make([]float64, D*f.dOut)
		}
		for r := 0; r < D; r++ {
			a := f.a[(r/Q)*f.dIn : (r/Q+1)*f.dIn]
			for o, gv := range f.g[r*f.dOut : (r+1)*f.dOut] {
				row := bw[r*pw+o*f.dIn : r*pw+(o+1)*f.dIn]
				for i, av := range a {
					row[i] = gv * av
				}
				if bb != nil {
					bb[r*f.dOut+o] = gv
				}
			}
		}
		blocks[f.w] = bw
		if f.b >= 0 {
			blocks[f.b] = bb
		}
	}
	return blocks
}

// factorWork is one layer's buffers of the factored path.
type factorWork struct {
	s2, s02, dmu  []float64 // σ², σ₀², μ − μ₀ of the weight (dOut × dIn)
	b2, b02, dmub []float64 // the same for the bias (dOut; zeros without one)
	pairs         []float64 // npair × dIn: A[n,:] ⊙ A[n′,:] for n ≥ n′
	bq, bp        []float64 // npair × dOut: B_o for q and the prior
	u             []float64 // Points × dOut: A (μ − μ₀)ᵀ + (μ_b − μ₀_b)
	c             []float64 // Points × dOut
	t, t0         []float64 // D × Points × dOut: T for H and (prior side) for M
	e             []float64 // npair × dOut
	gw, gs        []float64 // dOut × dIn: ∂KL/∂μ and diag(Jᵀ H J) of the weight
}

// pairIndex is the row of the pair (n, n′), n ≥ n′, in factorWork.pairs.
func pairIndex(n, n2 int) int { return n*(n+1)/2 + n2 }

func gemm(tA, tB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	ta, tb := blas.NoTrans, blas.NoTrans
	ar, ac, br, bc := m, k, k, n
	if tA {
		ta, ar, ac = blas.Trans, k, m
	}
	if tB {
		tb, br, bc = blas.Trans, n, k
	}
	blas64.Gemm(ta, tb, alpha,
		blas64.General{Rows: ar, Cols: ac, Data: a, Stride: lda},
		blas64.General{Rows: br, Cols: bc, Data: b, Stride: ldb},
		beta, blas64.General{Rows: m, Cols: n, Data: c, Stride: ldc})
}

// FactoredRows gives the rows of ∂KL/∂J of a factored linearisation one at a time (AddKLGrad
// with Options.JacobianRows): the D×P matrix is never formed. A row costs |X_C|·P multiply-adds
// (the products T_rᵀ A), done by the float32 kernels: a row is a finite-difference direction for
// JacobianVJP, where float32's relative rounding (about |X_C|·6·10⁻⁸) is far below the
// differences' own error. It refers to the Workspace's buffers and is valid until the next
// AddKLGrad with that Workspace.
type FactoredRows struct {
	lin       *Linearization
	work      []factorWork
	priorSide bool
	v         []float64   // K_p⁻¹δ over the D rows (prior side)
	a32       [][]float32 // each layer's A in float32
	t32, p32  []float32
}

// NumRows is D.
func (fr *FactoredRows) NumRows() int { return fr.lin.D() }

// Row writes row r of ∂KL/∂J into dst (one P_t slice per tensor), with float32 products.
func (fr *FactoredRows) Row(r int, dst [][]float64) { fr.row(r, dst, false) }

// row is Row, with float64 products when exact (Options.JacobianGrad's blocks).
func (fr *FactoredRows) row(r int, dst [][]float64, exact bool) {
	m := fr.lin.Points
	for li, f := range fr.lin.factors {
		w := &fr.work[li]
		tr := w.t[r*m*f.dOut : (r+1)*m*f.dOut]
		dw := dst[f.w]
		// dw = σ² ⊙ (T_rᵀ A), (T_rᵀ A)[o,i] = Σ_n′ T_r[n′,o] A[n′,i].
		fr.product(li, tr, w.s2, dw, exact, false)
		var db []float64
		if f.b >= 0 {
			db = dst[f.b]
			for o := range db {
				s := 0.0
				for n := 0; n < m; n++ {
					s += tr[n*f.dOut+o]
				}
				db[o] = w.b2[o] * s
			}
		}
		if !fr.priorSide {
			continue
		}
		t0 := w.t0[r*m*f.dOut : (r+1)*m*f.dOut]
		fr.product(li, t0, w.s02, dw, exact, true)
		vr := fr.v[r]
		for k := range dw {
			dw[k] += vr * w.dmu[k]
		}
		if db != nil {
			for o := range db {
				s := 0.0
				for n := 0; n < m; n++ {
					s += t0[n*f.dOut+o]
				}
				db[o] += w.b02[o]*s + vr*w.dmub[o]
			}
		}
	}
}

// product sets (adds, when add) dst = s ⊙ (tᵀ A) for layer li's A and the |X_C| × d_out t.
func (fr *FactoredRows) product(li int, t, s, dst []float64, exact, add bool) {
	f := &fr.lin.factors[li]
	m := fr.lin.Points
	if exact {
		w := &fr.work[li]
		w.gw = grow(w.gw, len(dst))
		gemm(true, false, f.dOut, f.dIn, m, 1, t, f.dOut, f.a, f.dIn, 0, w.gw, f.dIn)
		for k := range dst {
			if !add {
				dst[k] = 0
			}
			dst[k] += s[k] * w.gw[k]
		}
		return
	}
	fr.p32 = grow32(fr.p32, len(dst))
	fr.t32 = grow32(fr.t32, len(t))
	for k, v := range t {
		fr.t32[k] = float32(v)
	}
	kernels.Gemm(true, false, f.dOut, f.dIn, m, 1, fr.t32, f.dOut, fr.a32[li], f.dIn, 0, fr.p32, f.dIn)
	for k := range dst {
		if !add {
			dst[k] = 0
		}
		dst[k] += s[k] * float64(fr.p32[k])
	}
}

// grow32 returns s resized to n, reallocating only when its capacity is too small.
func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// factoredKL is directKL for a factored linearisation: the same KL and gradients (and, with rows
// or dJ, ∂KL/∂J) from the layers' factors.
func factoredKL(ws *Workspace, views []tensorView, lin *Linearization, jitter float64, perOutput bool, gmu, grho, dJ [][]float64,
	rows *FactoredRows, priorSide bool) (float64, error) {
	D, Q, m := lin.D(), lin.Outputs, lin.Points
	npair := m * (m + 1) / 2
	if len(ws.fac) < len(lin.factors) {
		ws.fac = append(ws.fac, make([]factorWork, len(lin.factors)-len(ws.fac))...)
	}
	ws.kfq, ws.kfp = grow(ws.kfq, D*D), grow(ws.kfp, D*D)
	ws.dfull = grow(ws.dfull, D)
	wantJ := dJ != nil || rows != nil
	for li, f := range lin.factors {
		w := &ws.fac[li]
		pw := f.dOut * f.dIn
		w.s2, w.s02, w.dmu = grow(w.s2, pw), grow(w.s02, pw), grow(w.dmu, pw)
		w.b2, w.b02, w.dmub = grow(w.b2, f.dOut), grow(w.b02, f.dOut), grow(w.dmub, f.dOut)
		fill := func(v tensorView, s2, s02, dmu []float64) {
			for k, r := range v.rawSD {
				s := f64.Softplus(r)
				if v.hasMax {
					s = min(max(s, 0), v.maxSD)
				}
				s2[k] = s * s
				s02[k] = v.priorSD[k] * v.priorSD[k]
				dmu[k] = v.mean[k] - v.priorMean[k]
			}
		}
		fill(views[f.w], w.s2, w.s02, w.dmu)
		if f.b >= 0 {
			fill(views[f.b], w.b2, w.b02, w.dmub)
		}
		w.pairs = grow(w.pairs, npair*f.dIn)
		for n := 0; n < m; n++ {
			an := f.a[n*f.dIn : (n+1)*f.dIn]
			for n2 := 0; n2 <= n; n2++ {
				a2 := f.a[n2*f.dIn : (n2+1)*f.dIn]
				dst := w.pairs[pairIndex(n, n2)*f.dIn : (pairIndex(n, n2)+1)*f.dIn]
				for i, v := range an {
					dst[i] = v * a2[i]
				}
			}
		}
		// B (npair × dOut) = pairs · S ᵀ + s_b.
		w.bq, w.bp = grow(w.bq, npair*f.dOut), grow(w.bp, npair*f.dOut)
		for p := 0; p < npair; p++ {
			copy(w.bq[p*f.dOut:(p+1)*f.dOut], w.b2)
			copy(w.bp[p*f.dOut:(p+1)*f.dOut], w.b02)
		}
		gemm(false, true, npair, f.dOut, f.dIn, 1, w.pairs, f.dIn, w.s2, f.dIn, 1, w.bq, f.dOut)
		gemm(false, true, npair, f.dOut, f.dIn, 1, w.pairs, f.dIn, w.s02, f.dIn, 1, w.bp, f.dOut)
		for r := 0; r < D; r++ {
			gr := f.g[r*f.dOut : (r+1)*f.dOut]
			n := r / Q
			for r2 := 0; r2 <= r; r2++ {
				if perOutput && r%Q != r2%Q {
					continue
				}
				g2 := f.g[r2*f.dOut : (r2+1)*f.dOut]
				p := pairIndex(n, r2/Q)
				bq, bp := w.bq[p*f.dOut:(p+1)*f.dOut], w.bp[p*f.dOut:(p+1)*f.dOut]
				var sq, sp float64
				for o, gv := range gr {
					gg := gv * g2[o]
					sq += gg * bq[o]
					sp += gg * bp[o]
				}
				ws.kfq[r*D+r2] += sq
				ws.kfp[r*D+r2] += sp
			}
		}
		// δ = J(μ − μ₀): U = A (μ − μ₀)ᵀ + (μ_b − μ₀_b), δ[r] += G[r,:]·U[n,:].
		w.u = grow(w.u, m*f.dOut)
		for n := 0; n < m; n++ {
			copy(w.u[n*f.dOut:(n+1)*f.dOut], w.dmub)
		}
		gemm(false, true, m, f.dOut, f.dIn, 1, f.a, f.dIn, w.dmu, f.dIn, 1, w.u, f.dOut)
		for r := 0; r < D; r++ {
			ws.dfull[r] += f64.Dot(f.g[r*f.dOut:(r+1)*f.dOut], w.u[(r/Q)*f.dOut:(r/Q+1)*f.dOut])
		}
	}
	for r := 0; r < D; r++ {
		for r2 := 0; r2 < r; r2++ {
			ws.kfq[r2*D+r], ws.kfp[r2*D+r] = ws.kfq[r*D+r2], ws.kfp[r*D+r2]
		}
	}
	// Per group (one per output with perOutput): the Gaussian KL, v = K_p⁻¹δ, H = K_p⁻¹ − K_q⁻¹
	// and, for the prior side of ∂KL/∂J, M; scattered back over the D rows.
	groups, n := 1, D
	if perOutput && Q > 1 {
		groups, n = Q, m
	}
	row := func(g, i int) int {
		if groups > 1 {
			return i*Q + g
		}
		return i
	}
	ws.kq, ws.kp, ws.iq, ws.ip, ws.x = grow(ws.kq, n*n), grow(ws.kp, n*n), grow(ws.iq, n*n), grow(ws.ip, n*n), grow(ws.x, n*n)
	ws.delta, ws.v = grow(ws.delta, n), grow(ws.v, n)
	ws.hfull, ws.vfull = grow(ws.hfull, D*D), grow(ws.vfull, D)
	if priorSide && wantJ {
		ws.kq0, ws.m, ws.mfull = grow(ws.kq0, n*n), grow(ws.m, n*n), grow(ws.mfull, D*D)
	}
	var kl float64
	for g := 0; g < groups; g++ {
		for i := 0; i < n; i++ {
			ri := row(g, i)
			ws.delta[i] = ws.dfull[ri]
			for j := 0; j < n; j++ {
				rj := row(g, j)
				ws.kq[i*n+j] = ws.kfq[ri*D+rj]
				ws.kp[i*n+j] = ws.kfp[ri*D+rj]
			}
			ws.kq[i*n+i] += jitter
			ws.kp[i*n+i] += jitter
		}
		if priorSide && wantJ {
			copy(ws.kq0, ws.kq)
		}
		k, err := gaussianKL(ws, n)
		if err != nil {
			return 0, err
		}
		kl += k
		if priorSide && wantJ {
			jacobianGrad(ws, nil, g, n, true)
		}
		for i := 0; i < n; i++ {
			ri := row(g, i)
			ws.vfull[ri] = ws.v[i]
			for j := 0; j < n; j++ {
				rj := row(g, j)
				ws.hfull[ri*D+rj] = ws.ip[i*n+j] - ws.iq[i*n+j]
				if priorSide && wantJ {
					ws.mfull[ri*D+rj] = ws.m[i*n+j]
				}
			}
		}
	}
	for li, f := range lin.factors {
		w := &ws.fac[li]
		pw := f.dOut * f.dIn
		// ∂KL/∂μ: C[n,o] = Σ_q v[nQ+q] G[nQ+q,o]; weight Cᵀ A, bias Σ_n C[n,o].
		w.c = grow(w.c, m*f.dOut)
		for r := 0; r < D; r++ {
			axpy64(ws.vfull[r], f.g[r*f.dOut:(r+1)*f.dOut], w.c[(r/Q)*f.dOut:(r/Q+1)*f.dOut])
		}
		w.gw = grow(w.gw, pw)
		gemm(true, false, f.dOut, f.dIn, m, 1, w.c, f.dOut, f.a, f.dIn, 0, w.gw, f.dIn)
		// T[r,n′,o] = Σ_q′ H[r,n′Q+q′] G[n′Q+q′,o] (and T0 with M), E from T.
		w.t = grow(w.t, D*m*f.dOut)
		tMat(w.t, ws.hfull, f.g, D, m, Q, f.dOut)
		if priorSide && wantJ {
			w.t0 = grow(w.t0, D*m*f.dOut)
			tMat(w.t0, ws.mfull, f.g, D, m, Q, f.dOut)
		}
		w.e = grow(w.e, npair*f.dOut)
		for n := 0; n < m; n++ {
			for n2 := 0; n2 <= n; n2++ {
				e := w.e[pairIndex(n, n2)*f.dOut : (pairIndex(n, n2)+1)*f.dOut]
				for q := 0; q < Q; q++ {
					r := n*Q + q
					gr := f.g[r*f.dOut : (r+1)*f.dOut]
					tr := w.t[(r*m+n2)*f.dOut : (r*m+n2+1)*f.dOut]
					for o, gv := range gr {
						e[o] += gv * tr[o]
					}
				}
				if n2 != n {
					for o := range e {
						e[o] *= 2 // E_o is symmetric: the pair (n′, n) counts too
					}
				}
			}
		}
		w.gs = grow(w.gs, pw)
		gemm(true, false, f.dOut, f.dIn, npair, 1, w.e, f.dOut, w.pairs, f.dIn, 0, w.gs, f.dIn)
		setGrads(views[f.w], w.gw, w.gs, w.s2, gmu[f.w], grho[f.w])
		if f.b >= 0 {
			gb, sb := make([]float64, f.dOut), make([]float64, f.dOut)
			for n := 0; n < m; n++ {
				axpy64(1, w.c[n*f.dOut:(n+1)*f.dOut], gb)
			}
			for p := 0; p < npair; p++ {
				axpy64(1, w.e[p*f.dOut:(p+1)*f.dOut], sb)
			}
			setGrads(views[f.b], gb, sb, w.b2, gmu[f.b], grho[f.b])
		}
	}
	if wantJ {
		fr := rows
		if fr == nil {
			fr = &FactoredRows{}
		}
		a32 := fr.a32[:0]
		for li, f := range lin.factors {
			var buf []float32
			if li < cap(a32) {
				buf = a32[:li+1][li]
			}
			buf = grow32(buf, len(f.a))
			for k, v := range f.a {
				buf[k] = float32(v)
			}
			a32 = append(a32, buf)
		}
		*fr = FactoredRows{lin: lin, work: ws.fac[:len(lin.factors)], priorSide: priorSide, v: ws.vfull, a32: a32, t32: fr.t32, p32: fr.p32}
		if dJ != nil {
			dst := make([][]float64, len(dJ))
			for r := 0; r < D; r++ {
				for i, blk := range dJ {
					p := len(blk) / D
					dst[i] = blk[r*p : (r+1)*p]
				}
				fr.row(r, dst, true)
			}
		}
	}
	return kl, nil
}

// tMat sets t[r,n′,o] = Σ_q′ h[r, n′Q+q′] g[n′Q+q′, o] for the D×D h and the D×dOut g.
func tMat(t, h, g []float64, D, m, Q, dOut int) {
	for r := 0; r < D; r++ {
		hr := h[r*D : (r+1)*D]
		for n2 := 0; n2 < m; n2++ {
			dst := t[(r*m+n2)*dOut : (r*m+n2+1)*dOut]
			clear(dst)
			for q := 0; q < Q; q++ {
				if hv := hr[n2*Q+q]; hv != 0 {
					axpy64(hv, g[(n2*Q+q)*dOut:(n2*Q+q+1)*dOut], dst)
				}
			}
		}
	}
}

// setGrads writes ∂KL/∂μ (gm) and ∂KL/∂ρ = σ · diag(Jᵀ H J) · ∂σ/∂ρ for one tensor, as directKL.
func setGrads(v tensorView, gm, diag, s2, gmu, grho []float64) {
	copy(gmu, gm)
	for k, r := range v.rawSD {
		ds := f64.Sigmoid(r)
		if v.hasMax {
			if s := f64.Softplus(r); s < 0 || s > v.maxSD {
				ds = 0
			}
		}
		grho[k] = math.Sqrt(s2[k]) * diag[k] * ds
	}
}

// Factored reports whether J is held in factored form (Linearize of a network of Linear layers).
func (l *Linearization) Factored() bool { return l.factors != nil }
