package runtime

import (
	"fmt"
	"math"

	"github.com/edgebnn/edgebnn/kernels"
)

// MaxFCGDim is the largest number D of parameters (weights plus biases) of one layer with a
// full-covariance Gaussian posterior (KindFCG). Its Cholesky factor has D² entries in the file
// (D(D+1)/2 of them used), and a weight sample costs D(D+1)/2 multiply-adds, so the kind is for
// small layers: a 1-50-1 network's layers (D = 100 and 51) fit, a 784×256 one (D = 200 960)
// does not.
const MaxFCGDim = 4096

// FCGDim returns the number of parameters D a full-covariance posterior of the Linear or Conv2d
// layer ls covers: its weights (out × in, × kernel for Conv2d) and its bias.
func FCGDim(ls *LayerSpec) int {
	k := ls.In
	if ls.Op == OpConv2d {
		k *= max(ls.Kernel[0], 1) * max(ls.Kernel[1], 1)
	}
	if ls.Bias {
		k++
	}
	if ls.Out > 0 && k > maxTensor/ls.Out {
		return maxTensor
	}
	return ls.Out * k
}

// checkFCG checks an fcg layer's spec: its size against MaxFCGDim and its prior.
func checkFCG(ls *LayerSpec) error {
	p := ls.Posterior
	if d := FCGDim(ls); d > MaxFCGDim {
		bias := ""
		if ls.Bias {
			bias = ", bias included"
		}
		return fmt.Errorf("spec: layer %q: a full-covariance (fcg) posterior over %d parameters (%d outputs × %d inputs%s) exceeds the limit MaxFCGDim = %d (its Cholesky factor would hold %d² values); use ffg or inducing for this layer",
			ls.Name, d, ls.Out, d/max(ls.Out, 1), bias, MaxFCGDim, d)
	}
	if !(p.PriorSD > 0) || math.IsInf(p.PriorSD, 0) {
		return fmt.Errorf("spec: layer %q: fcg prior_sd %g must be positive and finite", ls.Name, p.PriorSD)
	}
	if !(p.PriorBiasSD >= 0) || math.IsInf(p.PriorBiasSD, 0) {
		return fmt.Errorf("spec: layer %q: fcg prior_bias_sd %g must be non-negative (0: prior_sd) and finite", ls.Name, p.PriorBiasSD)
	}
	return nil
}

// fcg is bayesianize's FCGMixin: one multivariate Gaussian q(θ) = N(μ, L Lᵀ) jointly over the
// layer's parameters θ = (weight row-major, then bias), D = len(θ), with the Cholesky factor
// L = diag(softplus(_scale_diag)) + the strict lower triangle of _scale_tril. Weights are always
// sampled whole (W = μ + L ε); there is no local strategy.
type fcg struct {
	dOut, dIn, k, dim int
	m                 []float32 // dOut × dIn weight-matrix layout, bias as last column
	row               []int32   // row[a]: θ's index of weight-matrix entry a
	l                 []float32 // L's rows packed: row r at r(r+1)/2, r+1 values
	kl                float64
}

func loadFCG(b *builder, ls *LayerSpec, dOut, dIn int) (*fcg, error) {
	if err := checkFCG(ls); err != nil {
		return nil, fmt.Errorf("runtime: %w", err)
	}
	name := ls.Name
	D := dOut * dIn
	f := &fcg{dOut: dOut, dIn: dIn, k: dIn, dim: D}
	if ls.Bias {
		f.k--
	}
	t, err := b.layerTensors(name, LayerTensors(ls), 0)
	if err != nil {
		return nil, err
	}
	// The tensors are finite (builder.tensor checks every value a model file holds).
	mean, rawDiag, tril := t["mean"], t["_scale_diag"], t["_scale_tril"]
	f.l = make([]float32, D*(D+1)/2)
	diag := make([]float64, D)
	for r := 0; r < D; r++ {
		off := r * (r + 1) / 2
		copy(f.l[off:off+r], tril[r*D:r*D+r])
		raw := rawDiag[r]
		diag[r] = softplus(float64(raw))
		f.l[off+r] = float32(diag[r])
		if !(f.l[off+r] > 0) || math.IsInf(float64(f.l[off+r]), 0) {
			return nil, fmt.Errorf("runtime: layer %q (fcg): tensor %q: diagonal entry %d of the Cholesky factor is softplus(%g) = %g, not a positive float32 (the covariance would be singular)",
				name, b.fullName(name, "_scale_diag"), r, raw, diag[r])
		}
	}
	// θ's order (weight row-major, then bias) against the weight-matrix layout.
	f.m, f.row = make([]float32, D), make([]int32, D)
	for o := 0; o < dOut; o++ {
		for j := 0; j < f.k; j++ {
			f.row[o*dIn+j] = int32(o*f.k + j)
		}
		if ls.Bias {
			f.row[o*dIn+f.k] = int32(dOut*f.k + o)
		}
	}
	for a, r := range f.row {
		f.m[a] = mean[r]
	}
	// KL[N(μ, L Lᵀ) ‖ N(0, diag s²)] = ½ (Σ_rc L_rc²/s_r² + Σ μ_r²/s_r² − D + 2 Σ log s_r − 2 Σ log L_rr)
	// with s the prior sd of θ_r (prior_sd for weights, prior_bias_sd for biases).
	p := ls.Posterior
	bsd := p.PriorBiasSD
	if bsd == 0 {
		bsd = p.PriorSD
	}
	kl := -float64(D)
	for r := 0; r < D; r++ {
		s := p.PriorSD
		if r >= dOut*f.k {
			s = bsd
		}
		off := r * (r + 1) / 2
		sq := float64(mean[r]) * float64(mean[r])
		for c := 0; c < r; c++ {
			sq += float64(f.l[off+c]) * float64(f.l[off+c])
		}
		sq += diag[r] * diag[r]
		kl += sq/(s*s) + 2*math.Log(s) - 2*math.Log(diag[r])
	}
	f.kl = kl / 2
	return f, nil
}

// weightScratch holds the D standard normal draws ε of one sample.
func (f *fcg) weightScratch() int { return f.dim }

// sampleWeight draws θ = μ + L ε and writes it in weight-matrix layout: entry a is
// μ_r + Σ_{c ≤ r} L_rc ε_c with r = row[a].
func (f *fcg) sampleWeight(_ *fwdCtx, rng *kernels.Stream, w, scratch []float32) {
	eps := scratch[:f.dim]
	rng.Normal(eps)
	for a, r32 := range f.row {
		r := int(r32)
		off := r * (r + 1) / 2
		w[a] = f.m[a] + kernels.Dot(f.l[off:off+r+1], eps[:r+1])
	}
}

func (f *fcg) meanWeight(w, _ []float32) { copy(w, f.m) }

// Local (per-input) sampling would need each input's dOut × dOut output covariance and its
// Cholesky factor; an fcg layer always samples weights.
func (f *fcg) weightOnly()                                                            {}
func (f *fcg) prepSize(int) int64                                                     { return 0 }
func (f *fcg) prepare([]float32, int, []float32)                                      {}
func (f *fcg) applyScratch(int, int) int64                                            { return 0 }
func (f *fcg) apply(*fwdCtx, uint32, []float32, bool, []float32, int, int, []float32) {}
func (f *fcg) localCost(int) int64                                                    { return math.MaxInt32 }
func (f *fcg) prepCost(int) int64                                                     { return 0 }

// weightCost counts the D normal draws and the triangular product L ε.
func (f *fcg) weightCost() int64 { return prod(normalCost, f.dim) + prod(f.dim, f.dim+1)/2 }

// covariance returns L Lᵀ (D × D, θ order) in float64.
func (f *fcg) covariance() []float64 {
	D := f.dim
	cov := make([]float64, D*D)
	for r := 0; r < D; r++ {
		lr := f.l[r*(r+1)/2:]
		for s := 0; s <= r; s++ {
			ls := f.l[s*(s+1)/2:]
			v := 0.0
			for c := 0; c <= s; c++ {
				v += float64(lr[c]) * float64(ls[c])
			}
			cov[r*D+s], cov[s*D+r] = v, v
		}
	}
	return cov
}
