package train

import (
	"math"
	"strings"
	"testing"
)

// TestScaleTrilLR: Adam's first step moves every parameter with a nonzero gradient by exactly its
// learning rate (bias-corrected m̂/√v̂ = ±1, up to ε); with scale_tril_lr f the Cholesky factors of
// a full-covariance posterior (FCG-W's _scale_tril, full q(U)'s _inducing_scale_tril) move by
// f·lr and everything else by lr. With f = 1 they move by lr, as before the key existed.
func TestScaleTrilLR(t *testing.T) {
	for _, tc := range []struct {
		posterior, inference, want string
	}{
		{"fcg_w", `{"inference": "fcg"}`, "._scale_tril"},
		{"inducing", `{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 3, "inducing_cols": 2}}, "q_inducing": "full", "whitened_u": true}`, "._inducing_scale_tril"},
	} {
		for _, f := range []float64{1, 0.1, 3} {
			c := toyConfig(t, tc.posterior, tc.inference)
			c.Arch, c.LR, c.ScaleTrilLR = "mlp:1-4-1:tanh", 1e-2, f
			tr, err := New(c)
			if err != nil {
				t.Fatalf("%s: %v", tc.posterior, err)
			}
			before := map[string][]float32{}
			for _, p := range tr.params {
				before[p.Name] = append([]float32(nil), p.Value...)
			}
			if _, _, _, err := tr.step([]int{0, 1, 2, 3, 60, 61}, 1); err != nil {
				t.Fatal(err)
			}
			// Per group, no entry moves by more than its rate and the largest move is the rate
			// (entries with tiny gradients move by lr·|g|/(|g| + ε) < lr).
			maxMove := map[bool]float64{}
			tril := 0
			for _, p := range tr.params {
				isTril := strings.HasSuffix(p.Name, tc.want)
				lr := c.LR
				if isTril {
					lr *= f
					tril++
				}
				for i, v := range p.Value {
					d := math.Abs(float64(v) - float64(before[p.Name][i]))
					if !(d <= lr*(1+1e-3)+1e-7) {
						t.Fatalf("%s f=%g: %s[%d] moved by %g, more than its rate %g", tc.posterior, f, p.Name, i, d, lr)
					}
					maxMove[isTril] = max(maxMove[isTril], d)
				}
			}
			for isTril, lr := range map[bool]float64{false: c.LR, true: c.LR * f} {
				if d := maxMove[isTril]; !(math.Abs(d-lr) <= 1e-3*lr+1e-7) {
					t.Errorf("%s f=%g: the largest move of the %v group is %g, want its rate %g", tc.posterior, f, map[bool]string{false: "other", true: tc.want}[isTril], d, lr)
				}
			}
			if tril == 0 {
				t.Fatalf("%s: no parameter named *%s", tc.posterior, tc.want)
			}
		}
	}
}
