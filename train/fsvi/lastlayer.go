package fsvi

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/internal/f64"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// LastLayerPrior is the prior side of LastLayerKL at one step's N context points: the features
// Φ₀ (N × H, row-major) and outputs F₀ (N × Q) of the prior network — the network at its prior
// mean parameters, without noise — and the prior standard deviations of the last layer's
// weights SW (Q × H) and biases SB (Q; nil without a bias).
type LastLayerPrior struct {
	N, H, Q  int
	Phi0, F0 []float64
	SW, SB   []float64
}

// LastLayerKL records on tp the function-space KL of timrudner/FSVI's implementation of paper
// 004 (its calculate_function_kl; docs/FSVI.md, "fsvi_kl: last_layer"): only the last layer,
// a Linear layer f = W φ + b with q(W, b) mean-field Gaussian, is random in the output
// covariances, and the features φ are those of one weight sample of the earlier layers. For
// each output j, over the N context points,
//
//	q̃_j = N(Φ W̄_jᵀ + b̄_j, Φ diag(σ_W,j²) Φᵀ + σ_b,j² 11ᵀ + εI),
//	p̃_j = N(F₀[:, j],     Φ₀ diag(s_W,j²) Φ₀ᵀ + s_b,j² 11ᵀ + εI),
//
// and the KL is Σ_j KL(q̃_j ‖ p̃_j) — exact for the last layer, whose mean-field q makes
// different outputs independent. phi is Φ (N × H) on the tape, wm and ws the last layer's weight
// mean and σ (Q × H), bm and bs its bias mean and σ (Q; nil without a bias); the prior side is a
// constant (the reference code stops its gradient). The value is computed in float64 and the
// gradients in closed form: with G_j = ½(K_p⁻¹ − K_q⁻¹) and v_j = K_p⁻¹(m_q − m_p),
// ∂/∂Φ = Σ_j 2 G_j Φ diag(σ_W,j²) + v_j W̄_j, ∂/∂σ_W,jh = 2σ_W,jh (Φᵀ G_j Φ)_hh,
// ∂/∂σ_b,j = 2σ_b,j 1ᵀG_j1, ∂/∂W̄_j = v_jᵀΦ, ∂/∂b̄_j = 1ᵀv_j. ws is a Workspace (reused).
func LastLayerKL[T bnn.Float](tp *autodiff.Tape[T], phi, wm, ws, bm, bs *autodiff.Var[T], p *LastLayerPrior, jitter float64, w *Workspace) *autodiff.Var[T] {
	n, h, q := p.N, p.H, p.Q
	bias := bm != nil
	switch {
	case phi.Len() != n*h || wm.Len() != q*h || ws.Len() != q*h || len(p.Phi0) != n*h || len(p.F0) != n*q || len(p.SW) != q*h:
		return tp.Fail(fmt.Errorf("fsvi: last-layer KL: sizes do not match N = %d points, H = %d features, Q = %d outputs", n, h, q))
	case bias && (bs == nil || bm.Len() != q || bs.Len() != q || len(p.SB) != q):
		return tp.Fail(fmt.Errorf("fsvi: last-layer KL: the bias needs Q = %d means, standard deviations and prior sds", q))
	case !(jitter > 0):
		return tp.Fail(fmt.Errorf("fsvi: last-layer KL: jitter %g must be positive", jitter))
	}
	Phi := f64.From(phi.Value())
	W, SW := f64.From(wm.Value()), f64.From(ws.Value())
	var B, SB []float64
	if bias {
		B, SB = f64.From(bm.Value()), f64.From(bs.Value())
	}
	gPhi := make([]float64, n*h)
	gW, gSW := make([]float64, q*h), make([]float64, q*h)
	gB, gSB := make([]float64, q), make([]float64, q)
	w.kq, w.kp = grow(w.kq, n*n), grow(w.kp, n*n)
	w.iq, w.ip, w.x = grow(w.iq, n*n), grow(w.ip, n*n), grow(w.x, n*n)
	w.delta, w.v = grow(w.delta, n), grow(w.v, n)
	w.t = grow(w.t, n*h)
	s2, s02 := make([]float64, h), make([]float64, h)
	kl := 0.0
	for j := 0; j < q; j++ {
		var sb2, s0b2, bj float64
		if bias {
			sb2, s0b2, bj = SB[j]*SB[j], p.SB[j]*p.SB[j], B[j]
		}
		for k := 0; k < h; k++ {
			s2[k] = SW[j*h+k] * SW[j*h+k]
			s02[k] = p.SW[j*h+k] * p.SW[j*h+k]
		}
		for a := 0; a < n; a++ {
			pa, p0a := Phi[a*h:(a+1)*h], p.Phi0[a*h:(a+1)*h]
			for b := 0; b <= a; b++ {
				pb, p0b := Phi[b*h:(b+1)*h], p.Phi0[b*h:(b+1)*h]
				var cq, cp float64
				for k := range pa {
					cq += pa[k] * pb[k] * s2[k]
					cp += p0a[k] * p0b[k] * s02[k]
				}
				cq += sb2
				cp += s0b2
				if a == b {
					cq += jitter
					cp += jitter
				}
				w.kq[a*n+b], w.kq[b*n+a] = cq, cq
				w.kp[a*n+b], w.kp[b*n+a] = cp, cp
			}
			m := bj
			for k, x := range pa {
				m += x * W[j*h+k]
			}
			w.delta[a] = m - p.F0[a*q+j]
		}
		klj, err := gaussianKL(w, n)
		if err != nil {
			return tp.Fail(fmt.Errorf("fsvi: last-layer KL, output %d: %w", j, err))
		}
		kl += klj
		// G = ½(K_p⁻¹ − K_q⁻¹) into w.ip; T = G Φ (n × h) into w.t.
		sumG := 0.0
		for i := range w.ip {
			w.ip[i] = 0.5 * (w.ip[i] - w.iq[i])
			sumG += w.ip[i]
		}
		matMul64(w.t, w.ip, Phi, n, h)
		for a := 0; a < n; a++ {
			ta, pa, ga := w.t[a*h:(a+1)*h], Phi[a*h:(a+1)*h], gPhi[a*h:(a+1)*h]
			va := w.v[a]
			for k := range ga {
				ga[k] += 2*ta[k]*s2[k] + va*W[j*h+k]
				gSW[j*h+k] += pa[k] * ta[k]
				gW[j*h+k] += va * pa[k]
			}
			gB[j] += va
		}
		for k := 0; k < h; k++ {
			gSW[j*h+k] *= 2 * SW[j*h+k]
		}
		gSB[j] = 2 * sumG
		if bias {
			gSB[j] *= SB[j]
		}
	}
	if math.IsNaN(kl) || math.IsInf(kl, 0) {
		return tp.Fail(fmt.Errorf("fsvi: last-layer KL is %v", kl))
	}
	ins := []*autodiff.Var[T]{phi, wm, ws}
	grads := [][]float64{gPhi, gW, gSW}
	if bias {
		ins, grads = append(ins, bm, bs), append(grads, gB, gSB)
	}
	return tp.Custom("LastLayerKL", nil, []T{T(kl)}, func(gOut []T, gIns [][]T) {
		g := float64(gOut[0])
		for i, dst := range gIns {
			for k := range dst {
				dst[k] += T(g * grads[i][k])
			}
		}
	}, ins...)
}
