package main

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// writeFAModel writes a model file with a 2 → 2 FA linear layer (bias) followed by a
// deterministic 2 → 1 layer, and returns its path with the FA tensors and the deterministic ones.
func writeFAModel(t *testing.T) (path string, c, f, psi, w2, b2 []float32) {
	t.Helper()
	const dim, rank = 6, 2
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 0.5, InputShape: []int{2},
		FA: &runtime.FASpec{Dim: dim, Rank: rank},
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 2, Out: 2, Bias: true, Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFA}},
			{Name: "1", Op: runtime.OpTanh},
			{Name: "2", Op: runtime.OpLinear, In: 2, Out: 1, Bias: true},
		}}
	c = []float32{0.5, -1, 2, 0.25, 0.1, -0.3}
	f = []float32{1, 0, 0.5, 1, -1, 2, 0, 0.5, 1, 1, 0.2, -0.4}
	psi = []float32{0.1, 0.2, 0.3, 0.4, 0.05, 0.06}
	w2, b2 = []float32{1.5, -2}, []float32{0.75}
	wr := format.NewWriter()
	modeltest.AddSpec(t, wr, spec)
	for _, tn := range []struct {
		name  string
		shape []int
		data  []float32
	}{{"fa.mean", []int{dim}, c}, {"fa.factors", []int{dim, rank}, f}, {"fa.psi", []int{dim}, psi},
		{"2.weight", []int{1, 2}, w2}, {"2.bias", []int{1}, b2}} {
		if _, err := wr.AddTensor(tn.name, tn.shape, tn.data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path = filepath.Join(t.TempDir(), "fa.ebnn")
	modeltest.Save(t, wr, path)
	return path, c, f, psi, w2, b2
}

func TestPosteriorCommandJSON(t *testing.T) {
	path, c, f, psi, w2, b2 := writeFAModel(t)
	var got struct {
		Dim   int         `json:"dim"`
		Mean  []float64   `json:"mean"`
		Cov   [][]float64 `json:"cov"`
		Exact bool        `json:"exact"`
	}
	runCLIJSON(t, &got, "posterior", "--model", path, "--json")
	const dim, rank = 6, 2
	if got.Dim != dim+3 || !got.Exact || len(got.Mean) != dim+3 || len(got.Cov) != dim+3 {
		t.Fatalf("dim %d exact %v, %d means, %d rows", got.Dim, got.Exact, len(got.Mean), len(got.Cov))
	}
	wantMean := make([]float64, 0, dim+3)
	for _, v := range c {
		wantMean = append(wantMean, float64(v))
	}
	wantMean = append(wantMean, float64(w2[0]), float64(w2[1]), float64(b2[0]))
	for i := 0; i < dim+3; i++ {
		if got.Mean[i] != wantMean[i] {
			t.Errorf("mean[%d] = %v, want %v", i, got.Mean[i], wantMean[i])
		}
		for j := 0; j < dim+3; j++ {
			want := 0.0
			if i < dim && j < dim {
				for r := 0; r < rank; r++ {
					want += float64(f[i*rank+r]) * float64(f[j*rank+r])
				}
				if i == j {
					want += float64(psi[i])
				}
			}
			if !(math.Abs(got.Cov[i][j]-want) <= 1e-7) {
				t.Errorf("cov[%d][%d] = %v, want %v", i, j, got.Cov[i][j], want)
			}
		}
	}
}

func TestPosteriorCommandCases(t *testing.T) {
	path, _, _, _, _, _ := writeFAModel(t)
	runCases(t, []cliCase{
		{name: "text", args: []string{"posterior", "--model", path}, wantCode: 0,
			wantStdout: []string{"9 parameters", "LAYER", "fa", "deterministic"}},
		{name: "max-dim", args: []string{"posterior", "--model", path, "--json", "--max-dim", "8"}, wantCode: 1,
			wantStderr: []string{"9 parameters", "limit 8", "(--max-dim 9 allows it)"}},
		{name: "default max-dim", args: []string{"posterior", "-h"}, wantCode: 0, wantStdout: []string{"--max-dim", "2000"}},
		{name: "no model", args: []string{"posterior", "--json"}, wantCode: 2, wantStderr: []string{"--model is required"}},
		{name: "bad max-dim", args: []string{"posterior", "--model", path, "--max-dim", "0"}, wantCode: 2, wantStderr: []string{"--max-dim"}},
		{name: "max-dim above the cap", args: []string{"posterior", "--model", path, "--max-dim", "16385"}, wantCode: 2, wantStderr: []string{"--max-dim must be from 1 to 16384"}},
		{name: "missing file", args: []string{"posterior", "--model", filepath.Join(t.TempDir(), "nope.ebnn")}, wantCode: 1, wantStderr: []string{"nope.ebnn"}},
		{name: "extra arg", args: []string{"posterior", "--model", path, "x"}, wantCode: 2, wantStderr: []string{`unexpected argument "x"`}},
	})
}
