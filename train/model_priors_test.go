package train

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestModelFileOmitsDefaultPriors: the deployable model file of an FFG-W run leaves out the prior
// buffers (the runtime rebuilds them from the spec, the bias sd from prior_bias_sd when it
// differs from the weights'), the checkpoint keeps them, and both report the same KL — computed
// here from the checkpoint's tensors with the config's priors.
func TestModelFileOmitsDefaultPriors(t *testing.T) {
	for _, c := range []struct {
		name, inference string
		wsd, bsd        func(dIn int) float64 // the effective prior sds for a layer of d_in inputs (bias counted)
	}{
		{"same sd", `{"inference": "ffg", "prior_weight_sd": 0.7, "prior_bias_sd": 0.7}`,
			func(int) float64 { return 0.7 }, func(int) float64 { return 0.7 }},
		{"bias sd differs, width scaled", `{"inference": "ffg", "prior_weight_sd": 2, "prior_bias_sd": 0.5, "sqrt_width_scaling": true}`,
			func(d int) float64 { return 2 / math.Sqrt(float64(d)) }, func(d int) float64 { return 0.5 / math.Sqrt(float64(d)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := toyConfig(t, "ffg_w", c.inference)
			cfg.Epochs = 2
			tr, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := tr.Run(context.Background(), Hooks{}); err != nil {
				t.Fatal(err)
			}
			priors := func(path string) (n int) {
				f, err := format.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				for _, name := range f.Tensors() {
					if strings.Contains(name, ".prior_") {
						n++
					}
				}
				return n
			}
			if n := priors(tr.ModelPath()); n != 0 {
				t.Errorf("model file stores %d prior buffers, want 0", n)
			}
			if n := priors(cfg.Out); n != 8 {
				t.Errorf("checkpoint stores %d prior buffers, want 8 (two layers × 4)", n)
			}
			ck, err := format.Open(cfg.Out)
			if err != nil {
				t.Fatal(err)
			}
			defer ck.Close()
			tensor := func(name string) []float32 {
				v, _, err := fileTensors{ck}.Tensor(name)
				if err != nil {
					t.Fatal(err)
				}
				return v
			}
			for _, path := range []string{cfg.Out, tr.ModelPath()} {
				m, err := runtime.Load(path)
				if err != nil {
					t.Fatal(err)
				}
				var lin []runtime.LayerSpec
				for _, ls := range m.Spec().Layers {
					if ls.Posterior != nil {
						lin = append(lin, ls)
					}
				}
				if len(lin) != 2 || len(m.Layers()) != 2 {
					t.Fatalf("%s: %d ffg layers, %d layer infos; want 2", path, len(lin), len(m.Layers()))
				}
				for i, l := range m.Layers() {
					ls := lin[i]
					dIn := ls.In + 1
					want := 0.0
					kl := func(mean, raw float32, ps float64) {
						s := math.Log1p(math.Exp(float64(raw)))
						want += math.Log(ps/s) + (s*s+float64(mean)*float64(mean))/(2*ps*ps) - 0.5
					}
					wm, ws := tensor(ls.Name+".weight_mean"), tensor(ls.Name+"._weight_sd")
					for j := range wm {
						kl(wm[j], ws[j], float64(float32(c.wsd(dIn))))
					}
					bm, bs := tensor(ls.Name+".bias_mean"), tensor(ls.Name+"._bias_sd")
					for j := range bm {
						kl(bm[j], bs[j], float64(float32(c.bsd(dIn))))
					}
					if !(math.Abs(l.KL-want) <= 1e-9*math.Abs(want)) {
						t.Errorf("%s: layer %s: KL %.12g, want %.12g", path, ls.Name, l.KL, want)
					}
				}
				m.Close()
			}
		})
	}
}
