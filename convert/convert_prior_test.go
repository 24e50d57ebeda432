package convert

import (
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// priorFields are an FFG layer's optional prior buffers.
var priorFields = []string{"prior_weight_mean", "prior_weight_sd", "prior_bias_mean", "prior_bias_sd"}

// storedPriors lists the prior buffers stored in the model file at path.
func storedPriors(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, name := range modeltest.Open(t, path).Tensors() {
		for _, f := range priorFields {
			if strings.HasSuffix(name, "."+f) {
				out = append(out, name)
			}
		}
	}
	slices.Sort(out)
	return out
}

// loadKLAndPrediction loads path and returns its layers' KL and one K = 16 prediction of a fixed
// input with a fixed seed.
func loadKLAndPrediction(t *testing.T, path string) ([]float64, runtime.Prediction) {
	t.Helper()
	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var kl []float64
	for _, l := range m.Layers() {
		kl = append(kl, l.KL)
	}
	p, err := m.NewPredictor(runtime.Options{Samples: 16, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var pred runtime.Prediction
	if err := p.Predict([]float32{0.5, -1, 2, 0.25, -0.75, 1}, &pred); err != nil {
		t.Fatal(err)
	}
	return kl, pred
}

// TestConvertOmitsDefaultPriors: an FFG layer's prior buffers that hold the spec's prior
// (mean 0, sd prior_sd) are left out of the converted file, which the runtime then reads with
// the same KL and the same predictions; a buffer that differs anywhere is kept; a file without
// them converts again (f16 too, and as a mixture member) without a config.
func TestConvertOmitsDefaultPriors(t *testing.T) {
	src, _ := writeFFGModel(t) // priors: mean 0, sd 1 = the spec's prior_sd
	dir := t.TempDir()

	// A source whose layer "2" has a non-default weight prior sd and layer "0" one nonzero bias
	// prior mean.
	edited := filepath.Join(dir, "edited.ebnn")
	{
		f := modeltest.Open(t, src)
		w := format.NewWriter()
		for _, name := range f.Tensors() {
			tn := modeltest.Tensor(t, f, name)
			v := slices.Clone(tn.Data)
			switch name {
			case "2.prior_weight_sd":
				for i := range v {
					v[i] = 0.5
				}
			case "0.prior_bias_mean":
				v[len(v)-1] = 1e-3
			}
			if _, err := w.AddTensor(name, tn.Shape, v, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		modeltest.AddSpec(t, w, modeltest.Spec(t, f))
		modeltest.Save(t, w, edited)
	}

	for _, c := range []struct {
		name, src, dtype string
		want             []string // prior buffers kept
	}{
		{"default priors", src, "f32", nil},
		{"default priors f16", src, "f16", nil},
		{"edited priors", edited, "f32", []string{"0.prior_bias_mean", "2.prior_weight_sd"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".ebnn")
			if _, err := Convert(Options{Checkpoint: c.src, Out: out, DType: c.dtype}); err != nil {
				t.Fatal(err)
			}
			if got := storedPriors(t, out); !slices.Equal(got, c.want) {
				t.Errorf("stored prior buffers %q, want %q", got, c.want)
			}
			if got, want := storedPriors(t, c.src), 8; len(got) != want {
				t.Fatalf("source has %d prior buffers, want %d", len(got), want)
			}
			klSrc, pSrc := loadKLAndPrediction(t, c.src)
			klOut, pOut := loadKLAndPrediction(t, out)
			for i := range klSrc {
				// f16 rounds the means and raw sds, which moves the KL by ~1e-3 relative.
				tol := 1e-12
				if c.dtype == "f16" {
					tol = 1e-2
				}
				if !(math.Abs(klOut[i]-klSrc[i]) <= tol*math.Abs(klSrc[i])) {
					t.Errorf("layer %d: KL %.12g, source %.12g", i, klOut[i], klSrc[i])
				}
			}
			if c.dtype == "f32" && !slices.Equal(pOut.Probs, pSrc.Probs) {
				t.Errorf("prediction %v, source %v", pOut.Probs, pSrc.Probs)
			}

			// Converted again without a config: the omitted buffers come from the spec.
			again := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".again.ebnn")
			if _, err := Convert(Options{Checkpoint: out, Out: again, DType: "f16"}); err != nil {
				t.Fatalf("reconverting %s: %v", out, err)
			}
			if got := storedPriors(t, again); !slices.Equal(got, c.want) {
				t.Errorf("reconverted: stored prior buffers %q, want %q", got, c.want)
			}
		})
	}

	// A mixture of two converted files (no prior buffers): the members' buffers stay out too.
	a, b := filepath.Join(dir, "a.ebnn"), filepath.Join(dir, "b.ebnn")
	if _, err := Convert(Options{Checkpoint: src, Out: a}); err != nil {
		t.Fatal(err)
	}
	if _, err := Convert(Options{Checkpoint: src, Out: b}); err != nil {
		t.Fatal(err)
	}
	mix := filepath.Join(dir, "mix.ebnn")
	if _, err := Convert(Options{Checkpoint: a, Members: []string{b}, Out: mix}); err != nil {
		t.Fatal(err)
	}
	if got := storedPriors(t, mix); len(got) != 0 {
		t.Errorf("mixture: stored prior buffers %q, want none", got)
	}
	kl, _ := loadKLAndPrediction(t, mix)
	klA, _ := loadKLAndPrediction(t, a)
	if len(kl) == 0 || !(math.Abs(kl[0]-klA[0]) <= 1e-12*math.Abs(klA[0])) {
		t.Errorf("mixture KL %v, member's %v", kl, klA)
	}
}
