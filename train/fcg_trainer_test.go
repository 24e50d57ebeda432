package train

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestFCGWEndToEnd trains a small FCG-W regression network (posterior fcg_w) for a few epochs,
// converts its checkpoint to f32 and f16 model files and checks that both load as fcg layers
// whose posterior mean and covariance (runtime.Model.Posterior) are the trainer's μ and L Lᵀ,
// computed here from the trained raw parameters, within the storage precision; Inspect shows
// the kind.
func TestFCGWEndToEnd(t *testing.T) {
	dir := t.TempDir()
	c := DefaultConfig()
	c.Arch, c.Data, c.Task, c.Posterior = "mlp:1-6-1:tanh", "toy1d", "regression", "fcg_w"
	c.NoisePrecision, c.Epochs, c.BatchSize, c.LR, c.Optimizer = 100, 30, 100, 0.01, "adam"
	c.TrainSamples, c.TestSamples = 2, 16
	c.Out = filepath.Join(dir, "fcg.ebnn")
	tr := trainRun(t, c)
	if h := tr.History; len(h) < 2 || !(h[len(h)-1].Loss < h[0].Loss) {
		t.Fatalf("loss did not decrease: %+v", h)
	}
	// θ's moments from the trained parameters: L = diag(softplus(_scale_diag)) + tril(_scale_tril, −1).
	type ref struct {
		mean, cov []float64
	}
	refs := map[string]ref{}
	vals := map[string][]float32{}
	for _, p := range tr.Nets[0].Params() {
		vals[p.Name] = p.Value
	}
	for _, name := range []string{"1", "3"} {
		mu, raw, tril := vals[name+".mean"], vals[name+"._scale_diag"], vals[name+"._scale_tril"]
		D := len(mu)
		L := make([]float64, D*D)
		for r := 0; r < D; r++ {
			L[r*D+r] = math.Log1p(math.Exp(float64(raw[r])))
			for q := 0; q < r; q++ {
				L[r*D+q] = float64(tril[r*D+q])
			}
		}
		cov := make([]float64, D*D)
		for r := 0; r < D; r++ {
			for s := 0; s < D; s++ {
				for q := 0; q < D; q++ {
					cov[r*D+s] += L[r*D+q] * L[s*D+q]
				}
			}
		}
		m := make([]float64, D)
		for i, v := range mu {
			m[i] = float64(v)
		}
		refs[name] = ref{m, cov}
	}
	for _, dtype := range []string{"f32", "f16"} {
		t.Run(dtype, func(t *testing.T) {
			out := filepath.Join(dir, "fcg_"+dtype+".ebnn")
			m := convertLoad(t, convert.Options{Checkpoint: c.Out, Out: out, DType: dtype})
			post, err := m.Posterior(1000)
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-6
			if dtype == "f16" {
				tol = 2e-3 // fp16 rounding of the stored tensors (relative 2⁻¹¹, through softplus and L Lᵀ)
			}
			for _, pl := range post.Layers {
				if pl.Kind != runtime.KindFCG {
					t.Fatalf("layer %s is %s, want fcg", pl.Name, pl.Kind)
				}
				r := refs[pl.Name]
				D := len(r.mean)
				if pl.Size != D {
					t.Fatalf("layer %s: %d parameters, want %d", pl.Name, pl.Size, D)
				}
				scale := 0.0
				for _, v := range r.cov {
					scale = math.Max(scale, math.Abs(v))
				}
				for i := 0; i < D; i++ {
					if d := math.Abs(post.Mean[pl.Offset+i] - r.mean[i]); !(d <= tol*(1+math.Abs(r.mean[i]))) {
						t.Errorf("layer %s: mean[%d] = %g, trainer %g", pl.Name, i, post.Mean[pl.Offset+i], r.mean[i])
					}
					for j := 0; j < D; j++ {
						got := post.Cov[(pl.Offset+i)*post.Dim+pl.Offset+j]
						if d := math.Abs(got - r.cov[i*D+j]); !(d <= tol*scale) {
							t.Fatalf("layer %s: cov[%d,%d] = %g, trainer %g", pl.Name, i, j, got, r.cov[i*D+j])
						}
					}
				}
			}
			ins, err := convert.Inspect(out, true)
			if err != nil {
				t.Fatal(err)
			}
			kinds := 0
			for _, l := range ins.Layers {
				if l.Kind == runtime.KindFCG {
					kinds++
				}
			}
			if kinds != 2 || !(ins.KL > 0) {
				t.Errorf("inspect: %d fcg layers, KL %g: %+v", kinds, ins.KL, ins.Layers)
			}
		})
	}
}
