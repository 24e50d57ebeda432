package convert

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestConvertBayesianizeFCG converts a state_dict laid out as bayesianize's FCGMixin writes it
// (mean, _scale_diag, _scale_tril and the prior buffers prior_mean, prior_scale_tril) with an
// inference config giving one Linear layer "fcg": the layer becomes kind fcg with the config's
// priors (prior_weight_sd "neal": fan_in^-1/2 without the bias), the tensors pass unchanged, the
// prior buffers are dropped, and the runtime's posterior mean is the state_dict's mean.
func TestConvertBayesianizeFCG(t *testing.T) {
	dir := t.TempDir()
	arch := "Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=True)\n  (1): Tanh()\n  (2): Linear(in_features=2, out_features=2, bias=True)\n)\n"
	cfg := `{"inference": {"0": {"inference": "fcg", "prior_weight_sd": "neal", "prior_bias_sd": 0.8}}}`
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	const D = 2 * (3 + 1)
	mean := make([]float32, D)
	diag := make([]float32, D)
	tril := make([]float32, D*D)
	prior := make([]float32, D*D)
	for i := range mean {
		mean[i] = float32(i)/4 - 1
		diag[i] = -2 + float32(i)/10
		prior[i*D+i] = 0.5
		for j := 0; j < i; j++ {
			tril[i*D+j] = 0.01 * float32(i-j)
		}
	}
	var ts []safetensors.Tensor
	add := func(name string, shape []int, v []float32) {
		tn, err := safetensors.NewF32(name, shape, v)
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tn)
	}
	add("0.mean", []int{D}, mean)
	add("0._scale_diag", []int{D}, diag)
	add("0._scale_tril", []int{D, D}, tril)
	add("0.prior_mean", []int{D}, make([]float32, D))
	add("0.prior_scale_tril", []int{D, D}, prior)
	add("2.weight", []int{2, 2}, []float32{0.1, -0.2, 0.3, 0.4})
	add("2.bias", []int{2}, []float32{0.05, -0.05})
	sd := filepath.Join(dir, "sd.safetensors")
	writeSafetensors(t, sd, ts)
	out := filepath.Join(dir, "fcg.ebnn")
	if _, err := Convert(Options{Checkpoint: sd, Config: write("cfg.json", cfg), Arch: write("model.txt", arch), Out: out}); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	spec := m.Spec()
	p := spec.Layers[0].Posterior
	if p == nil || p.Kind != runtime.KindFCG || !(math.Abs(p.PriorSD-1/math.Sqrt(3)) <= 1e-12) || p.PriorBiasSD != 0.8 {
		t.Fatalf("layer 0 posterior %+v, want fcg with prior_sd 1/√3, prior_bias_sd 0.8", p)
	}
	if l := m.Layers(); len(l) != 2 || l[0].Kind != runtime.KindFCG || l[1].Kind != runtime.KindDeterministic {
		t.Fatalf("layers %+v", l)
	}
	post, err := m.Posterior(100)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range mean {
		if post.Mean[i] != float64(v) {
			t.Errorf("posterior mean[%d] = %g, want %g", i, post.Mean[i], v)
		}
	}
	// Cov[θ_1, θ_0] = L_10 L_00 = 0.01 · softplus(−2).
	if want := 0.01 * math.Log1p(math.Exp(-2)); !(math.Abs(post.Cov[1*post.Dim+0]-want) <= 1e-8) {
		t.Errorf("Cov[1,0] = %g, want %g", post.Cov[1*post.Dim+0], want)
	}
	ins, err := Inspect(out, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ins.Sections {
		if s.Name == "0.prior_mean" || s.Name == "0.prior_scale_tril" {
			t.Errorf("prior buffer %s stored", s.Name)
		}
	}
}
