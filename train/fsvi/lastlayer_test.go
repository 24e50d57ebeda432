package fsvi

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

// lastLayerCase is a random instance of LastLayerKL's inputs: N points, H features, Q outputs.
type lastLayerCase struct {
	n, h, q             int
	phi, wm, ws, bm, bs []float64
	prior               LastLayerPrior
}

func newLastLayerCase(seed uint64, n, h, q int, bias bool) *lastLayerCase {
	r := rand.New(rand.NewPCG(seed, 3))
	vec := func(k int, shift, scale float64) []float64 {
		v := make([]float64, k)
		for i := range v {
			v[i] = shift + scale*r.NormFloat64()
		}
		return v
	}
	abs := func(v []float64) []float64 {
		for i := range v {
			v[i] = math.Abs(v[i]) + 0.05
		}
		return v
	}
	c := &lastLayerCase{n: n, h: h, q: q, phi: vec(n*h, 0, 1), wm: vec(q*h, 0, 0.5), ws: abs(vec(q*h, 0, 0.3))}
	c.prior = LastLayerPrior{N: n, H: h, Q: q, Phi0: vec(n*h, 0, 1), F0: vec(n*q, 0, 1), SW: abs(vec(q*h, 0.5, 0.2))}
	if bias {
		c.bm, c.bs, c.prior.SB = vec(q, 0, 0.5), abs(vec(q, 0, 0.3)), abs(vec(q, 0.5, 0.2))
	}
	return c
}

// kl records LastLayerKL on a fresh float64 tape with the case's inputs as parameters and returns
// its value and the parameters (phi, wm, ws[, bm, bs]).
func (c *lastLayerCase) kl(t *testing.T, jitter float64) (float64, []*autodiff.Param[float64]) {
	t.Helper()
	tp := autodiff.NewTape[float64]()
	param := func(name string, v []float64, shape ...int) *autodiff.Param[float64] {
		p, err := autodiff.NewParam(name, append([]float64(nil), v...), shape...)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ps := []*autodiff.Param[float64]{param("phi", c.phi, c.n, c.h), param("wm", c.wm, c.q, c.h), param("ws", c.ws, c.q, c.h)}
	var bm, bs *autodiff.Var[float64]
	if c.bm != nil {
		ps = append(ps, param("bm", c.bm, c.q), param("bs", c.bs, c.q))
		bm, bs = tp.Param(ps[3]), tp.Param(ps[4])
	}
	out := LastLayerKL(tp, tp.Param(ps[0]), tp.Param(ps[1]), tp.Param(ps[2]), bm, bs, &c.prior, jitter, &Workspace{})
	if err := tp.Err(); err != nil {
		t.Fatal(err)
	}
	if err := tp.Backward(out); err != nil {
		t.Fatal(err)
	}
	return out.Item(), ps
}

// refKL is the KL of the case from its definition, with gonum: Σ_j KL(N(m_q, K_q) ‖ N(m_p, K_p)),
// covariances built entry by entry.
func (c *lastLayerCase) refKL(t *testing.T, jitter float64) float64 {
	t.Helper()
	n, h := c.n, c.h
	total := 0.0
	for j := 0; j < c.q; j++ {
		kq, kp := mat.NewSymDense(n, nil), mat.NewSymDense(n, nil)
		mq, mp := mat.NewVecDense(n, nil), mat.NewVecDense(n, nil)
		for a := 0; a < n; a++ {
			for b := a; b < n; b++ {
				var vq, vp float64
				for k := 0; k < h; k++ {
					vq += c.phi[a*h+k] * c.phi[b*h+k] * c.ws[j*h+k] * c.ws[j*h+k]
					vp += c.prior.Phi0[a*h+k] * c.prior.Phi0[b*h+k] * c.prior.SW[j*h+k] * c.prior.SW[j*h+k]
				}
				if c.bm != nil {
					vq += c.bs[j] * c.bs[j]
					vp += c.prior.SB[j] * c.prior.SB[j]
				}
				if a == b {
					vq += jitter
					vp += jitter
				}
				kq.SetSym(a, b, vq)
				kp.SetSym(a, b, vp)
			}
			m := 0.0
			for k := 0; k < h; k++ {
				m += c.phi[a*h+k] * c.wm[j*h+k]
			}
			if c.bm != nil {
				m += c.bm[j]
			}
			mq.SetVec(a, m)
			mp.SetVec(a, c.prior.F0[a*c.q+j])
		}
		var cq, cp mat.Cholesky
		if !cq.Factorize(kq) || !cp.Factorize(kp) {
			t.Fatalf("output %d: covariance not positive definite", j)
		}
		var x mat.Dense
		if err := cp.SolveTo(&x, kq); err != nil {
			t.Fatal(err)
		}
		d := mat.NewVecDense(n, nil)
		d.SubVec(mq, mp)
		var y mat.VecDense
		if err := cp.SolveVecTo(&y, d); err != nil {
			t.Fatal(err)
		}
		total += 0.5 * (mat.Trace(&x) + mat.Dot(d, &y) - float64(n) + cp.LogDet() - cq.LogDet())
	}
	return total
}

// TestLastLayerKL: the value against the definition (gonum), and every gradient against central
// differences of the value, with and without a bias, for one and several outputs.
func TestLastLayerKL(t *testing.T) {
	const jitter = 1e-6
	for _, c := range []struct {
		name    string
		n, h, q int
		bias    bool
	}{
		{"bias", 5, 4, 3, true},
		{"no bias", 4, 6, 2, false},
		{"one point", 1, 3, 2, true},
		{"more points than features", 7, 3, 1, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			lc := newLastLayerCase(uint64(c.n*100+c.h*10+c.q), c.n, c.h, c.q, c.bias)
			got, ps := lc.kl(t, jitter)
			want := lc.refKL(t, jitter)
			if !(math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))) {
				t.Fatalf("KL = %.12g, want %.12g", got, want)
			}
			inputs := [][]float64{lc.phi, lc.wm, lc.ws, lc.bm, lc.bs}
			for i, p := range ps {
				for k := range inputs[i] {
					x := inputs[i][k]
					step := 1e-5 * math.Max(1, math.Abs(x))
					inputs[i][k] = x + step
					up := lc.refKL(t, jitter)
					inputs[i][k] = x - step
					down := lc.refKL(t, jitter)
					inputs[i][k] = x
					fd := (up - down) / (2 * step)
					if g := p.Grad[k]; !(math.Abs(g-fd) <= 1e-5*math.Max(1, math.Abs(fd))) {
						t.Errorf("∂KL/∂%s[%d] = %.9g, central difference %.9g", p.Name, k, g, fd)
					}
				}
			}
		})
	}
}

// TestLastLayerKLZero: q̃ equal to p̃ (the same features, means, standard deviations) gives 0.
func TestLastLayerKLZero(t *testing.T) {
	lc := newLastLayerCase(9, 4, 5, 3, true)
	lc.prior.Phi0 = append([]float64(nil), lc.phi...)
	lc.prior.SW, lc.prior.SB = append([]float64(nil), lc.ws...), append([]float64(nil), lc.bs...)
	for a := 0; a < lc.n; a++ {
		for j := 0; j < lc.q; j++ {
			m := lc.bm[j]
			for k := 0; k < lc.h; k++ {
				m += lc.phi[a*lc.h+k] * lc.wm[j*lc.h+k]
			}
			lc.prior.F0[a*lc.q+j] = m
		}
	}
	if got, _ := lc.kl(t, 1e-6); !(math.Abs(got) <= 1e-9) {
		t.Errorf("KL(q̃ ‖ q̃) = %g, want 0", got)
	}
}

// TestLastLayerKLErrors: mismatched sizes and a non-positive jitter are the tape's error.
func TestLastLayerKLErrors(t *testing.T) {
	for _, c := range []struct {
		name   string
		edit   func(*lastLayerCase)
		jitter float64
		want   string
	}{
		{"features", func(c *lastLayerCase) { c.prior.H = 5 }, 1e-6, "sizes"},
		{"prior outputs", func(c *lastLayerCase) { c.prior.F0 = c.prior.F0[1:] }, 1e-6, "sizes"},
		{"bias prior", func(c *lastLayerCase) { c.prior.SB = nil }, 1e-6, "bias"},
		{"jitter", func(*lastLayerCase) {}, 0, "jitter"},
	} {
		lc := newLastLayerCase(2, 3, 4, 2, true)
		c.edit(lc)
		tp := autodiff.NewTape[float64]()
		v := func(x []float64, shape ...int) *autodiff.Var[float64] { return tp.Const(x, shape...) }
		LastLayerKL(tp, v(lc.phi, 3, 4), v(lc.wm, 2, 4), v(lc.ws, 2, 4), v(lc.bm, 2), v(lc.bs, 2), &lc.prior, c.jitter, &Workspace{})
		if err := tp.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}
