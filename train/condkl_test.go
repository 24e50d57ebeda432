package train

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestConditionalKLConfig: conditional_kl is weight (the default, any posterior) or
// function_space (posterior inducing only); it round-trips through Set/Get and the config JSON,
// and a config (or checkpoint) without the key means weight.
func TestConditionalKLConfig(t *testing.T) {
	if got := DefaultConfig().ConditionalKL; got != "weight" {
		t.Fatalf("default conditional_kl %q, want weight", got)
	}
	tests := []struct {
		value, posterior string
		err              string
	}{
		{"weight", "inducing", ""},
		{"weight", "ffg_w", ""},
		{"weight", "deterministic", ""},
		{"function_space", "inducing", ""},
		{"function_space", "ffg_w", `conditional_kl function_space applies to posterior inducing, not "ffg_w"`},
		{"function_space", "fcg_w", `not "fcg_w"`},
		{"function_space", "deterministic", `not "deterministic"`},
		{"function_space", "ensemble_w", `not "ensemble_w"`},
		{"function_space", "mc_dropout", `not "mc_dropout"`},
		{"function_space", "vifa", `not "vifa"`},
		{"functional", "inducing", `conditional_kl "functional" is not weight or function_space`},
		{"", "inducing", `conditional_kl "" is not weight or function_space`},
	}
	for _, tc := range tests {
		t.Run(tc.value+"/"+tc.posterior, func(t *testing.T) {
			c := DefaultConfig()
			c.Arch, c.Data, c.Out = "mlp:4-3", "toy1d", "x.ebnn"
			c.Posterior, c.Dropout = tc.posterior, 0
			if tc.posterior == "mc_dropout" {
				c.Dropout = 0.1
			}
			if err := c.Set("conditional-kl", tc.value); err != nil {
				t.Fatal(err)
			}
			if got := c.Get("conditional_kl"); got != tc.value {
				t.Fatalf("Get %q after Set %q", got, tc.value)
			}
			err := c.Validate()
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				b, err := json.Marshal(c)
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), `"conditional_kl":"`+tc.value+`"`) {
					t.Fatalf("JSON lacks conditional_kl %s: %s", tc.value, b)
				}
				back := DefaultConfig()
				if err := back.ParseConfig(b, "round-trip"); err != nil || back.ConditionalKL != tc.value {
					t.Fatalf("round trip: %q (%v), want %q", back.ConditionalKL, err, tc.value)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
	old := DefaultConfig()
	if err := old.ParseConfig([]byte(`{"arch": "mlp:1-4-1", "posterior": "inducing"}`), "old"); err != nil || old.ConditionalKL != "weight" {
		t.Fatalf("a config without conditional_kl: %q (%v), want weight", old.ConditionalKL, err)
	}
}

// TestConditionalKLTrainer: the KL the trainer reports for its first step (parameters at their
// initial values) with function_space is the weight objective's KL minus (1 − β)·R(λ) of the
// output layer (d_in 9 = 8 hidden units + bias, d_out 1, β = 4/9 for toy1d:4; the input
// layer's d_in 2 ≤ N keeps β = 1), R(λ) = d_in·d_out·(λ²/2 − log λ − ½) at the initial λ; on
// the 100-point toy (N ≥ every d_in) the two objectives give the same run. The option survives a
// checkpoint and --resume, and the resumed run continues as the uninterrupted one.
func TestConditionalKLTrainer(t *testing.T) {
	const inference = `{"inference": "inducing", "inducing_rows": 2, "inducing_cols": 2, "whitened_u": true}`
	conf := func(data, mode string, epochs int) Config {
		c := toyConfig(t, "inducing", inference)
		c.Arch, c.Data, c.Epochs, c.BatchSize, c.ConditionalKL = "mlp:1-8-1:tanh", data, epochs, 100, mode
		return c
	}
	// N = 4 < 9.
	w := conf("toy1d:4", "weight", 1)
	tw, err := New(w)
	if err != nil {
		t.Fatal(err)
	}
	var raw float64
	for _, p := range tw.Nets[0].Params() {
		if p.Name == "3._lamda" {
			raw = float64(p.Value[0])
		}
	}
	if raw == 0 {
		t.Fatal("no parameter 3._lamda")
	}
	if err := tw.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	fs := trainRun(t, conf("toy1d:4", "function_space", 1))
	if tw.ConditionalKL != nil || len(fs.ConditionalKL) != 2 {
		t.Fatalf("weights: weight run %+v, function_space run %+v", tw.ConditionalKL, fs.ConditionalKL)
	}
	if g := fs.ConditionalKL; g[0].Layer != "1" || g[0].DIn != 2 || g[0].Beta != 1 || g[1].Layer != "3" || g[1].DIn != 9 || !(math.Abs(g[1].Beta-4.0/9) <= 1e-15) {
		t.Fatalf("weights %+v, want layer 1 d_in 2 β 1, layer 3 d_in 9 β 4/9", g)
	}
	lam := math.Log1p(math.Exp(raw))
	r := 9 * (lam*lam/2 - math.Log(lam) - 0.5)
	want := tw.History[0].KL - (1-4.0/9)*r
	if got := fs.History[0].KL; !(math.Abs(got-want) <= 1e-5*want) {
		t.Fatalf("function_space KL %.7g, want %.7g = weight KL %.7g − (5/9)·R %.7g", got, want, tw.History[0].KL, r)
	}
	// N = 100 ≥ every d_in: the same run.
	a, b := trainRun(t, conf("toy1d", "weight", 3)), trainRun(t, conf("toy1d", "function_space", 3))
	for i := range a.History {
		if a.History[i].KL != b.History[i].KL || a.History[i].Loss != b.History[i].Loss {
			t.Fatalf("N = 100, epoch %d: weight loss %g KL %g, function_space %g, %g", i+1,
				a.History[i].Loss, a.History[i].KL, b.History[i].Loss, b.History[i].KL)
		}
	}
	for _, g := range b.ConditionalKL {
		if g.Beta != 1 {
			t.Fatalf("N = 100: %+v", b.ConditionalKL)
		}
	}
	// Checkpoint and resume.
	c := conf("toy1d:4", "function_space", 4)
	full, part, res := runAndResume(t, c, func(c *Config) { c.Epochs = 2 }, func(cfg *Config) error { cfg.Epochs = 4; return nil })
	st, err := ReadState(part.Config.Out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Config.ConditionalKL != "function_space" || res.Config.ConditionalKL != "function_space" || len(res.ConditionalKL) != 2 || res.ConditionalKL[1].Beta != fs.ConditionalKL[1].Beta {
		t.Fatalf("checkpoint conditional_kl %q, resumed %q with weights %+v", st.Config.ConditionalKL, res.Config.ConditionalKL, res.ConditionalKL)
	}
	if err := res.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	for e := 2; e < 4; e++ {
		if d := math.Abs(res.History[e].KL - full.History[e].KL); !(d <= 1e-4*full.History[e].KL) {
			t.Errorf("epoch %d: resumed KL %.7g, uninterrupted %.7g", e+1, res.History[e].KL, full.History[e].KL)
		}
	}
	requireSameParams(t, "uninterrupted", full, "resumed", res, 1e-5)
}

// TestToy1DN: data toy1d:N has N points, half in each cluster; N outside [2, MaxToy1DPoints] or
// not a number is an error naming the key.
func TestToy1DN(t *testing.T) {
	for _, tc := range []struct {
		data string
		n    int
		err  string
	}{
		{"toy1d", 100, ""},
		{"toy1d:16", 16, ""},
		{"toy1d:1", 0, "toy1d:N with N in [2,"},
		{"toy1d:x", 0, "config: data toy1d:x"},
		{"toy1d:", 0, "config: data toy1d:"},
	} {
		t.Run(tc.data, func(t *testing.T) {
			c := toyConfig(t, "deterministic", "")
			c.Data = tc.data
			test, _, err := LoadEvalData(c)
			if testutil.WantError(t, err, tc.err) {
				return
			}
			if test.N != 201 {
				t.Fatalf("test grid of %d points", test.N)
			}
			c.Epochs = 0
			full, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			if full.Train.N != tc.n {
				t.Fatalf("%d training points, want %d", full.Train.N, tc.n)
			}
			left := 0
			for _, x := range full.Train.X {
				if x < 0 {
					left++
				}
			}
			if left != tc.n/2 {
				t.Fatalf("%d of %d points in the left cluster", left, tc.n)
			}
		})
	}
}
