package fsvi

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/kernels"
)

// Workspace holds the buffers of the direct KL path (AddKLGrad without Options.Tape), reused
// from step to step. The zero value is ready to use; a Workspace is not safe for concurrent use.
type Workspace struct {
	j, a, a0 []float64 // one group's rows of J, J·diag(σ), J·diag(σ₀) (n×P)
	j0       []float64 // the prior side's J when it differs (tests: Linearization.priorBlocks)
	b        []float64 // diagJHJ's scratch (P)
	kq, kp   []float64 // K_q, K_p, then their Cholesky factors (n×n)
	iq, ip   []float64 // K_q⁻¹, K_p⁻¹ (n×n)
	x        []float64 // L_p⁻¹L_q (n×n)
	delta, v []float64 // δ, K_p⁻¹δ (n)
	sd, sd0  []float64 // σ, σ₀ over all tensors (P)
	mean     []float64 // μ − μ₀ over all tensors (P)
	gmu, gsd []float64 // ∂KL/∂μ, ∂KL/∂σ over all tensors (P)
	kq0, m   []float64 // K_q before its factorisation; twice ∂KL/∂K_p (n×n), for ∂KL/∂J
	t        []float64 // n×n scratch
	g, g0    []float64 // H·J·diag(σ), M·J·diag(σ₀) (n×P), for ∂KL/∂J
	// The factored path (factoredKL): per layer buffers, K_q and K_p over all D rows before
	// jitter, δ, H = K_p⁻¹ − K_q⁻¹, K_p⁻¹δ and M scattered over the D rows.
	fac          []factorWork
	kfq, kfp     []float64
	dfull, vfull []float64
	hfull, mfull []float64
}

// grow returns s resized to n zeros, reallocating only when its capacity is too small.
func grow(s []float64, n int) []float64 {
	if cap(s) < n {
		return make([]float64, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// tensorView is one ffg tensor's values in float64 for directKL.
type tensorView struct {
	mean, rawSD, priorMean, priorSD []float64
	hasMax                          bool
	maxSD                           float64
}

// directKL computes the KL of the linearisation lin and its gradients with respect to every
// tensor's μ and raw σ without the tape, exploiting the structure: K = A Aᵀ for A = J·diag(σ)
// (a Gram product, symmetric), ∂KL/∂σ_k = σ_k j_kᵀ (K_p⁻¹ − K_q⁻¹) j_k and ∂KL/∂μ = Jᵀ K_p⁻¹ δ
// (j_k the k-th column of J), and with PerOutput one independent block per output (Q Gram
// products of |X_C| rows instead of one of D). Everything is float64: the O(D²P) part (the two
// Gram products, lower triangles only, and diag(Jᵀ(K_p⁻¹ − K_q⁻¹)J), using its symmetry) in
// register-tiled loops. gmu and grho receive ∂KL/∂μ and ∂KL/∂ρ per tensor.
//
// When dJ is not nil (one D×P_t block per tensor, like lin.Blocks) it also receives ∂KL/∂J,
// the gradient with respect to the linearisation itself:
//
//	∂KL/∂J = (K_p⁻¹ − K_q⁻¹) J diag(σ²) + M J diag(σ₀²) + K_p⁻¹δ (μ − μ₀)ᵀ,
//	M = K_p⁻¹ − K_p⁻¹(K_q + δδᵀ)K_p⁻¹,
//
// zero outside the blocks of equal output index with PerOutput. Unless priorSide is set only the
// first term is kept: the gradient through the J of K_q alone, with the prior side (K_p and δ)
// held fixed, as the reference code stops the gradient of its prior.
func directKL(ws *Workspace, views []tensorView, lin *Linearization, jitter float64, perOutput bool, gmu, grho, dJ [][]float64, priorSide bool) (float64, error) {
	D, Q := lin.D(), lin.Outputs
	groups, n := 1, D
	if perOutput && Q > 1 {
		groups, n = Q, lin.Points
	}
	P := 0
	for _, v := range views {
		P += len(v.mean)
	}
	ws.sd, ws.sd0, ws.mean = grow(ws.sd, P), grow(ws.sd0, P), grow(ws.mean, P)
	ws.gmu, ws.gsd = grow(ws.gmu, P), grow(ws.gsd, P)
	off := 0
	for _, v := range views {
		for k, r := range v.rawSD {
			s := f64.Softplus(r)
			if v.hasMax {
				s = min(max(s, 0), v.maxSD)
			}
			ws.sd[off+k] = s
			ws.sd0[off+k] = v.priorSD[k]
			ws.mean[off+k] = v.mean[k] - v.priorMean[k]
		}
		off += len(v.mean)
	}
	ws.kq, ws.kp, ws.iq, ws.ip, ws.x = grow(ws.kq, n*n), grow(ws.kp, n*n), grow(ws.iq, n*n), grow(ws.ip, n*n), grow(ws.x, n*n)
	ws.delta, ws.v = grow(ws.delta, n), grow(ws.v, n)
	ws.j, ws.a, ws.a0, ws.b = grow(ws.j, n*P), grow(ws.a, n*P), grow(ws.a0, n*P), grow(ws.b, P)
	j0 := ws.j
	pblocks := lin.Blocks
	if lin.priorBlocks != nil {
		ws.j0 = grow(ws.j0, n*P)
		j0, pblocks = ws.j0, lin.priorBlocks
	}
	if dJ != nil {
		ws.kq0, ws.m, ws.g, ws.g0 = grow(ws.kq0, n*n), grow(ws.m, n*n), grow(ws.g, n*P), grow(ws.g0, n*P)
	}
	var kl float64
	for g := 0; g < groups; g++ {
		// Gather the group's rows of J (row i of the group is row i·Q+g of J per output, else i),
		// concatenating the tensors' columns, and δ = J(μ − μ₀).
		for i := 0; i < n; i++ {
			r := i
			if groups > 1 {
				r = i*Q + g
			}
			off := 0
			var d float64
			for t, blk := range lin.Blocks {
				p := len(blk) / D
				src, psrc := blk[r*p:(r+1)*p], pblocks[t][r*p:(r+1)*p]
				for k, jv := range src {
					c := off + k
					pv := psrc[k]
					d += pv * ws.mean[c]
					ws.j[i*P+c] = jv
					j0[i*P+c] = pv
					ws.a[i*P+c] = jv * ws.sd[c]
					ws.a0[i*P+c] = pv * ws.sd0[c]
				}
				off += p
			}
			ws.delta[i] = d
		}
		gram64(ws.kq, ws.a, n, P)
		gram64(ws.kp, ws.a0, n, P)
		for i := 0; i < n; i++ {
			ws.kq[i*n+i] += jitter
			ws.kp[i*n+i] += jitter
		}
		if dJ != nil {
			copy(ws.kq0, ws.kq)
		}
		k, err := gaussianKL(ws, n)
		if err != nil {
			return 0, err
		}
		kl += k
		if dJ != nil {
			jacobianGrad(ws, dJ, g, n, priorSide)
		}
		for i := range ws.ip {
			ws.ip[i] -= ws.iq[i]
		}
		for i := 0; i < n; i++ {
			axpy64(ws.v[i], j0[i*P:(i+1)*P], ws.gmu)
		}
		diagJHJ(ws.gsd, ws.j, ws.ip, ws.b, n, P)
		if dJ != nil {
			// H·J·diag(σ²) = (H·A)·diag(σ), A = J·diag(σ); M·J·diag(σ₀²) likewise.
			matMul64(ws.g, ws.ip, ws.a, n, P)
			if priorSide {
				matMul64(ws.g0, ws.m, ws.a0, n, P)
			}
			for i := 0; i < n; i++ {
				r := i
				if groups > 1 {
					r = i*Q + g
				}
				off := 0
				for _, blk := range dJ {
					p := len(blk) / D
					dst := blk[r*p : (r+1)*p]
					for k := range dst {
						c := off + k
						dst[k] = ws.g[i*P+c] * ws.sd[c]
						if priorSide {
							dst[k] += ws.g0[i*P+c]*ws.sd0[c] + ws.v[i]*ws.mean[c]
						}
					}
					off += p
				}
			}
		}
	}
	off = 0
	for t, v := range views {
		for k, r := range v.rawSD {
			c := off + k
			gmu[t][k] = ws.gmu[c]
			ds := f64.Sigmoid(r)
			if v.hasMax {
				if s := f64.Softplus(r); s < 0 || s > v.maxSD {
					ds = 0
				}
			}
			grho[t][k] = ws.sd[c] * ws.gsd[c] * ds
		}
		off += len(v.mean)
	}
	return kl, nil
}

// gram64 sets the n×n matrix k to A Aᵀ for the n×p row-major A: the lower triangle in 4×4 tiles
// of dot products (16 accumulators; each loaded element serves four products), mirrored.
func gram64(k, a []float64, n, p int) {
	r := 0
	for ; r+4 <= n; r += 4 {
		a0, a1, a2, a3 := a[r*p:(r+1)*p], a[(r+1)*p:(r+2)*p], a[(r+2)*p:(r+3)*p], a[(r+3)*p:(r+4)*p]
		for c := 0; c <= r; c += 4 {
			var s [16]float64
			dot4x4(&s, a0, a1, a2, a3, a[c*p:(c+1)*p], a[(c+1)*p:(c+2)*p], a[(c+2)*p:(c+3)*p], a[(c+3)*p:(c+4)*p])
			for i := 0; i < 4; i++ {
				for j := 0; j < 4; j++ {
					k[(r+i)*n+c+j], k[(c+j)*n+r+i] = s[4*i+j], s[4*i+j]
				}
			}
		}
	}
	for ; r < n; r++ {
		ar := a[r*p : (r+1)*p]
		for c := 0; c <= r; c++ {
			v := f64.Dot(ar, a[c*p:(c+1)*p])
			k[r*n+c], k[c*n+r] = v, v
		}
	}
}

// dot4x4 sets s[4i+j] to the inner product of x_i and y_j (all of len(x0)).
func dot4x4(s *[16]float64, x0, x1, x2, x3, y0, y1, y2, y3 []float64) {
	n := len(x0)
	x1, x2, x3, y0, y1, y2, y3 = x1[:n], x2[:n], x3[:n], y0[:n], y1[:n], y2[:n], y3[:n]
	var s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33 float64
	for k := 0; k < n; k++ {
		a0, a1, a2, a3 := x0[k], x1[k], x2[k], x3[k]
		b0, b1, b2, b3 := y0[k], y1[k], y2[k], y3[k]
		s00 += a0 * b0
		s01 += a0 * b1
		s02 += a0 * b2
		s03 += a0 * b3
		s10 += a1 * b0
		s11 += a1 * b1
		s12 += a1 * b2
		s13 += a1 * b3
		s20 += a2 * b0
		s21 += a2 * b1
		s22 += a2 * b2
		s23 += a2 * b3
		s30 += a3 * b0
		s31 += a3 * b1
		s32 += a3 * b2
		s33 += a3 * b3
	}
	*s = [16]float64{s00, s01, s02, s03, s10, s11, s12, s13, s20, s21, s22, s23, s30, s31, s32, s33}
}

// diagJHJ adds diag(Jᵀ H J) to out for the n×p row-major J and the symmetric n×n H, using the
// symmetry: Σ_i J_ik (H_ii J_ik + 2 Σ_{l<i} H_il J_lk); b is p scratch.
func diagJHJ(out, j, h, b []float64, n, p int) {
	for i := 0; i < n; i++ {
		clear(b)
		hr := h[i*n : (i+1)*n]
		l := 0
		for ; l+4 <= i; l += 4 {
			axpy4(hr[l], hr[l+1], hr[l+2], hr[l+3], j[l*p:(l+1)*p], j[(l+1)*p:(l+2)*p], j[(l+2)*p:(l+3)*p], j[(l+3)*p:(l+4)*p], b)
		}
		for ; l < i; l++ {
			axpy64(hr[l], j[l*p:(l+1)*p], b)
		}
		ji := j[i*p : (i+1)*p]
		hii := hr[i]
		for k, v := range ji {
			out[k] += v * (2*b[k] + hii*v)
		}
	}
}

// axpy4 adds h0·x0 + h1·x1 + h2·x2 + h3·x3 to y.
func axpy4(h0, h1, h2, h3 float64, x0, x1, x2, x3, y []float64) {
	n := len(y)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	for k := range y {
		y[k] += h0*x0[k] + h1*x1[k] + h2*x2[k] + h3*x3[k]
	}
}

// jacobianGrad (with priorSide) sets ws.m to M = K_p⁻¹ − K_p⁻¹(K_q + δδᵀ)K_p⁻¹ (twice ∂KL/∂K_p) from ws.ip = K_p⁻¹,
// ws.kq0 = K_q and ws.delta (ws.x and ws.t are scratch), and for the first group (g = 0) zeroes
// dJ, whose rows of other outputs then stay zero with PerOutput.
func jacobianGrad(ws *Workspace, dJ [][]float64, g, n int, priorSide bool) {
	if g == 0 {
		for _, blk := range dJ {
			clear(blk)
		}
	}
	if !priorSide {
		return
	}
	ws.t = grow(ws.t, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			ws.x[i*n+j] = ws.kq0[i*n+j] + ws.delta[i]*ws.delta[j]
		}
	}
	matMul64(ws.t, ws.ip, ws.x, n, n)
	matMul64(ws.x, ws.t, ws.ip, n, n)
	for i := range ws.m {
		ws.m[i] = ws.ip[i] - ws.x[i]
	}
}

// matMul64 sets the n×p matrix c to A·B for the n×n A and the n×p B (row-major).
func matMul64(c, a, b []float64, n, p int) {
	for i := 0; i < n; i++ {
		ci := c[i*p : (i+1)*p]
		clear(ci)
		ai := a[i*n : (i+1)*n]
		l := 0
		for ; l+4 <= n; l += 4 {
			axpy4(ai[l], ai[l+1], ai[l+2], ai[l+3], b[l*p:(l+1)*p], b[(l+1)*p:(l+2)*p], b[(l+2)*p:(l+3)*p], b[(l+3)*p:(l+4)*p], ci)
		}
		for ; l < n; l++ {
			axpy64(ai[l], b[l*p:(l+1)*p], ci)
		}
	}
}

func axpy64(alpha float64, x, y []float64) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

// gaussianKL factorises ws.kq and ws.kp (the n×n covariances, jitter included) in place and
// returns KL(N(0, K_q) ‖ N(δ, K_p)) for δ = ws.delta, leaving K_p⁻¹δ in ws.v, K_p⁻¹ in ws.ip
// and K_q⁻¹ in ws.iq (ws.x is scratch).
func gaussianKL(ws *Workspace, n int) (float64, error) {
	if err := kernels.Cholesky(ws.kq, n); err != nil {
		return 0, fmt.Errorf("fsvi: K_q: %w", err)
	}
	if err := kernels.Cholesky(ws.kp, n); err != nil {
		return 0, fmt.Errorf("fsvi: K_p: %w", err)
	}
	lq, lp := ws.kq, ws.kp
	// tr(K_p⁻¹K_q) = ‖L_p⁻¹L_q‖²_F, δᵀK_p⁻¹δ = ‖L_p⁻¹δ‖², as on the tape.
	copy(ws.x, lq)
	kernels.SolveTriangular(kernels.Left, kernels.Lower, false, n, n, lp, n, ws.x, n)
	copy(ws.v, ws.delta)
	kernels.SolveTriangular(kernels.Left, kernels.Lower, false, n, 1, lp, n, ws.v, 1)
	var s float64
	for _, x := range ws.x {
		s += x * x
	}
	for _, x := range ws.v {
		s += x * x
	}
	for i := 0; i < n; i++ {
		s += 2 * (math.Log(lp[i*n+i]) - math.Log(lq[i*n+i]))
	}
	// K_p⁻¹δ = L_p⁻ᵀ(L_p⁻¹δ).
	kernels.SolveTriangular(kernels.Left, kernels.Lower, true, n, 1, lp, n, ws.v, 1)
	kernels.CholeskyInverse(ws.ip, lp, n)
	kernels.CholeskyInverse(ws.iq, lq, n)
	return 0.5 * (s - float64(n)), nil
}
