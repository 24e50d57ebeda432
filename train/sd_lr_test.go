package train

import (
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/optim"
)

// isSD reports whether name is an ffg layer's raw standard deviation (_weight_sd, _bias_sd).
func isSD(name string) bool {
	return strings.HasSuffix(name, "._weight_sd") || strings.HasSuffix(name, "._bias_sd")
}

// TestSDLR: Adam's first step moves every parameter with a nonzero gradient by exactly its
// learning rate (bias-corrected m̂/√v̂ = ±1, up to ε); with sd_lr f the raw standard deviations of
// an ffg posterior (_weight_sd, _bias_sd) move by f·lr and everything else (means, and for
// fcg_w the Cholesky factors) by lr. It also combines with scale_tril_lr: sd_lr reaches only the
// ffg parameters.
func TestSDLR(t *testing.T) {
	for _, posterior := range []string{"ffg_w", "fcg_w"} {
		for _, f := range []float64{1, 0.1, 10} {
			c := toyConfig(t, posterior, "")
			c.Arch, c.LR, c.SDLR = "mlp:1-4-1:tanh", 1e-2, f
			if posterior == "fcg_w" {
				c.ScaleTrilLR = 3
			}
			tr, err := New(c)
			if err != nil {
				t.Fatalf("%s: %v", posterior, err)
			}
			before := map[string][]float32{}
			for _, p := range tr.params {
				before[p.Name] = append([]float32(nil), p.Value...)
			}
			if _, _, _, err := tr.step([]int{0, 1, 2, 3, 60, 61}, 1); err != nil {
				t.Fatal(err)
			}
			rate := func(name string) (string, float64) {
				switch {
				case isSD(name):
					return "sd", c.LR * f
				case strings.HasSuffix(name, "scale_tril"):
					return "scale_tril", c.LR * 3
				}
				return "other", c.LR
			}
			// Per group, no entry moves by more than its rate and the largest move is the rate,
			// up to float32 rounding (ρ ≈ −9.2 for init_sd 1e-4: an ulp is about 1e-6).
			const tol = 4e-6
			maxMove, want := map[string]float64{}, map[string]float64{}
			sds := map[string]bool{}
			for _, p := range tr.params {
				g, lr := rate(p.Name)
				want[g] = lr
				if g == "sd" {
					sds[p.Name[strings.LastIndexByte(p.Name, '.')+1:]] = true
				}
				for i, v := range p.Value {
					d := math.Abs(float64(v) - float64(before[p.Name][i]))
					if !(d <= lr*(1+1e-3)+tol) {
						t.Fatalf("%s f=%g: %s[%d] moved by %g, more than its rate %g", posterior, f, p.Name, i, d, lr)
					}
					maxMove[g] = max(maxMove[g], d)
				}
			}
			for g, lr := range want {
				if d := maxMove[g]; !(math.Abs(d-lr) <= 1e-3*lr+tol) {
					t.Errorf("%s f=%g: the largest move of the %s group is %g, want its rate %g", posterior, f, g, d, lr)
				}
			}
			switch {
			case posterior == "ffg_w" && !(sds["_weight_sd"] && sds["_bias_sd"]):
				t.Fatalf("ffg_w: standard deviations found %v, want _weight_sd and _bias_sd", sds)
			case posterior == "fcg_w" && len(sds) > 0:
				t.Fatalf("fcg_w: sd_lr reached %v", sds)
			}
		}
	}
}

// TestSDLROneIsOneGroup: with sd_lr 1 (the default) ten training steps give bit-for-bit the
// parameters of the same trainer whose optimizer is rebuilt as a single Adam group over every
// parameter at lr, the optimizer before the key existed.
func TestSDLROneIsOneGroup(t *testing.T) {
	c := toyConfig(t, "ffg_w", "")
	c.Arch, c.LR = "mlp:1-4-1:tanh", 1e-2
	if c.SDLR != 1 {
		t.Fatalf("default sd_lr %g, want 1", c.SDLR)
	}
	a, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	b, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var all []*autodiff.Param[float32]
	for _, n := range b.Nets {
		all = append(all, n.Trainable()...)
	}
	if b.opt, err = optim.NewAdam([]optim.Group[float32]{{Params: all, LR: c.LR}}, optim.DefaultAdamConfig()); err != nil {
		t.Fatal(err)
	}
	for s := range 10 {
		idx := []int{s, s + 1, s + 2, 60 - s, 70 - s}
		if _, _, _, err := a.step(idx, 1); err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := b.step(idx, 1); err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range a.params {
		q := b.params[i]
		for j := range p.Value {
			if math.Float32bits(p.Value[j]) != math.Float32bits(q.Value[j]) {
				t.Fatalf("%s[%d]: %g with sd_lr 1, %g with one group", p.Name, j, p.Value[j], q.Value[j])
			}
		}
	}
}

// TestAdamEps: adam_eps is the ε of Adam's update m̂/(√v̂ + ε). On the first step that update is
// g/(|g| + ε) for each gradient entry g, so with ε = 1e-8 every entry that has a gradient moves by
// about the learning rate and with ε = 1 by lr·|g|/(|g| + 1) — strictly less, in the same
// direction.
func TestAdamEps(t *testing.T) {
	moves := func(eps float64) map[string][]float64 {
		c := toyConfig(t, "ffg_w", "")
		c.Arch, c.LR, c.AdamEps = "mlp:1-4-1:tanh", 1e-2, eps
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		before := map[string][]float32{}
		for _, p := range tr.params {
			before[p.Name] = append([]float32(nil), p.Value...)
		}
		if _, _, _, err := tr.step([]int{0, 1, 2, 3, 60, 61}, 1); err != nil {
			t.Fatal(err)
		}
		out := map[string][]float64{}
		for _, p := range tr.params {
			for i, v := range p.Value {
				out[p.Name] = append(out[p.Name], float64(v)-float64(before[p.Name][i]))
			}
		}
		return out
	}
	small, big := moves(1e-8), moves(1)
	n := 0
	for name, ms := range small {
		for i, m := range ms {
			if math.Abs(m) < 1e-3 { // no gradient (or float32 rounding of one)
				continue
			}
			n++
			b := big[name][i]
			if !(math.Abs(math.Abs(m)-1e-2) <= 1e-4) || !(math.Abs(b) < math.Abs(m)) || !(b*m >= 0) {
				t.Fatalf("%s[%d]: move %g with ε = 1e-8 (want ±0.01), %g with ε = 1 (want smaller, same sign)", name, i, m, b)
			}
		}
	}
	if n == 0 {
		t.Fatal("no parameter moved")
	}
}
