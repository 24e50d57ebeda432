package train

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
)

func fsviToyConfig(t *testing.T) Config {
	c := toyConfig(t, "ffg_w", `{"inference": "ffg", "init_sd": 1e-3}`)
	c.Objective = "fsvi"
	c.Context = "uniform"
	c.ContextSize = 8
	c.Arch, c.Epochs = "mlp:1-8-1:tanh", 20
	if testing.Short() {
		c.Epochs = 8
	}
	return c
}

func TestFSVIConfigValidation(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"posterior", func(c *Config) { c.Posterior = "deterministic"; c.Inference.JSON = "" }, "objective fsvi needs posterior ffg_w"},
		{"objective", func(c *Config) { c.Objective = "fsmap" }, "objective \"fsmap\""},
		{"context", func(c *Config) { c.Context = "gaussian" }, "context \"gaussian\""},
		{"context_size", func(c *Config) { c.ContextSize = 0 }, "context_size 0 outside"},
		{"covariance", func(c *Config) { c.FSVICovariance = "diag" }, "fsvi_covariance"},
		{"jitter", func(c *Config) { c.FSVIJitter = 0 }, "fsvi_jitter"},
		{"jacobian_grad", func(c *Config) { c.FSVIJacobianGrad = "true" }, "fsvi_jacobian_grad \"true\""},
		{"fsvi_kl", func(c *Config) { c.FSVIKL = "full" }, "fsvi_kl \"full\" is not linearized or last_layer"},
		{"temperature", func(c *Config) { c.Temperature = -1 }, "temperature -1 outside"},
	}
	for _, tc := range cases {
		c := fsviToyConfig(t)
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
	c := fsviToyConfig(t)
	c.ContextSize = MaxContextSize
	c.Arch, c.Task, c.Data = "mlp:2-4-3", "classification", "csv:"+writeCSV(t)
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "context_size 4096 × 3 outputs") {
		t.Errorf("context_size 4096 × 3 outputs: error %v", err)
	}
}

// TestFSVISameInitAsMFVI: objective fsvi and the ELBO (MFVI) start from the same q, and with
// temperature 0 (no KL term) one step moves them identically; with the KL they differ.
func TestFSVISameInitAsMFVI(t *testing.T) {
	step := func(objective string, temp float64) []float32 {
		c := fsviToyConfig(t)
		c.Objective, c.Temperature = objective, temp
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		var init []float32
		for _, p := range tr.params {
			init = append(init, p.Value...)
		}
		if _, _, _, err := tr.step([]int{0, 1, 2, 3, 60, 61}, 1); err != nil {
			t.Fatal(err)
		}
		var out []float32
		for _, p := range tr.params {
			out = append(out, p.Value...)
		}
		return append(init, out...)
	}
	a, b := step("elbo", 0), step("fsvi", 0)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("value %d: elbo %g, fsvi %g (temperature 0)", i, a[i], b[i])
		}
	}
	a, b = step("elbo", 1), step("fsvi", 1)
	n := len(a) / 2
	same := true
	for i := range a[:n] {
		if a[i] != b[i] {
			t.Fatalf("initial value %d differs: elbo %g, fsvi %g", i, a[i], b[i])
		}
	}
	for i := n; i < len(a); i++ {
		same = same && a[i] == b[i]
	}
	if same {
		t.Error("the function-space and parameter-space KL gave the same step")
	}
}

// TestFSVIJacobianGradStep: with fsvi_jacobian_grad q or both a step from the same state has the
// same gradient for the raw σ's as with none (the gradient through J reaches only the means, up to
// the float32 rounding of the order of operations) and a different one for the means, q and both
// different from each other too.
func TestFSVIJacobianGradStep(t *testing.T) {
	step := func(mode string) (mean, raw []float64) {
		c := fsviToyConfig(t)
		c.FSVIJacobianGrad = mode
		c.Temperature = 100 // KL weight 1 (N = 100): the KL's gradient, not the NLL's, dominates
		// σ not tiny, so that q̃'s covariance J diag(σ²) Jᵀ has a gradient through J worth seeing.
		if err := c.Inference.Set(`{"inference": "ffg", "init_sd": 0.3}`); err != nil {
			t.Fatal(err)
		}
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := tr.step([]int{0, 1, 2, 3, 60, 61}, 1); err != nil {
			t.Fatal(err)
		}
		for _, x := range tr.fs.ts { // the step's gradients stay until the next ZeroGrad
			for _, g := range x.Mean.Grad {
				mean = append(mean, float64(g))
			}
			for _, g := range x.RawSD.Grad {
				raw = append(raw, float64(g))
			}
		}
		return mean, raw
	}
	diff := func(a, b []float64) (d, m float64) {
		t.Helper()
		if len(a) == 0 || len(a) != len(b) {
			t.Fatalf("comparing %d values with %d", len(a), len(b))
		}
		for i := range a {
			d, m = max(d, math.Abs(a[i]-b[i])), max(m, math.Abs(a[i]))
		}
		return d, m
	}
	m0, r0 := step("none")
	mq, rq := step("q")
	mb, rb := step("both")
	for _, c := range []struct {
		name   string
		m1, r1 []float64
	}{{"q", mq, rq}, {"both", mb, rb}} {
		if d, m := diff(r0, c.r1); !(d <= 1e-5*m) {
			t.Errorf("%s: ∂/∂ρ differs by %g (max %g) from none", c.name, d, m)
		}
		if d, m := diff(m0, c.m1); !(d >= 1e-3*m) {
			t.Errorf("%s: ∂/∂μ differs by only %g (max %g) from none", c.name, d, m)
		}
	}
	if d, m := diff(mq, mb); !(d >= 1e-3*m) {
		t.Errorf("∂/∂μ of q and both differ by only %g (max %g)", d, m)
	}
}

// TestFSVITrainCheckpointRuntime trains objective fsvi briefly, then checks that the model file
// is an ordinary ffg model: runtime.Load reads it and its mean prediction equals the network
// computed by hand from the file's weight_mean/bias_mean tensors.
func TestFSVITrainCheckpointRuntime(t *testing.T) {
	for _, kl := range []string{"linearized", "last_layer"} {
		t.Run(kl, func(t *testing.T) { fsviTrainCheckpointRuntime(t, kl) })
	}
}

func fsviTrainCheckpointRuntime(t *testing.T, fsviKL string) {
	c := fsviToyConfig(t)
	c.FSVIKL = fsviKL
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var first, last EpochMetrics
	if err := tr.Run(context.Background(), Hooks{Epoch: func(m EpochMetrics) {
		if m.Epoch == 1 {
			first = m
		}
		last = m
	}}); err != nil {
		t.Fatal(err)
	}
	if !(last.Loss < first.Loss) || !(last.KL > 0) {
		t.Errorf("loss %.4g → %.4g, KL %.4g", first.Loss, last.Loss, last.KL)
	}
	f, err := format.Open(tr.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	ts := map[string][]float32{}
	for _, name := range []string{"1.weight_mean", "1.bias_mean", "3.weight_mean", "3.bias_mean", "1._weight_sd", "3._bias_sd"} {
		v, _, err := fileTensors{f}.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		ts[name] = v
	}
	f.Close()
	m, err := runtime.Load(tr.ModelPath())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	spec := m.Spec()
	for _, l := range spec.Layers {
		if l.Op == runtime.OpLinear && (l.Posterior == nil || l.Posterior.Kind != runtime.KindFFG) {
			t.Errorf("layer %s is not ffg: %+v", l.Name, l.Posterior)
		}
	}
	p, err := m.NewPredictor(runtime.Options{Samples: 1, Mean: true, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []float32{-1.5, -0.8, 0, 0.7, 1.8} {
		var out runtime.Prediction
		if err := p.Predict([]float32{x}, &out); err != nil {
			t.Fatal(err)
		}
		want := float64(ts["3.bias_mean"][0])
		for j := 0; j < 8; j++ {
			h := math.Tanh(float64(ts["1.weight_mean"][j])*float64(x) + float64(ts["1.bias_mean"][j]))
			want += float64(ts["3.weight_mean"][j]) * h
		}
		if !(math.Abs(float64(out.Mean[0])-want) <= 1e-5) {
			t.Errorf("x = %g: runtime mean %g, by hand %g", x, out.Mean[0], want)
		}
	}
	// A sampled prediction varies: the file carries σ.
	ps, err := m.NewPredictor(runtime.Options{Samples: 16, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	var out runtime.Prediction
	if err := ps.Predict([]float32{3}, &out); err != nil {
		t.Fatal(err)
	}
	if !(out.EpistemicVar[0] > 0) {
		t.Errorf("epistemic variance %g at x = 3", out.EpistemicVar[0])
	}
}

// TestFSVILastLayerGradient: with fsvi_kl last_layer the step's KL (its features from one weight
// sample of the earlier layers, fixed by the step's seed) has gradients with respect to the
// earlier layers' means and raw σ's — the path by which timrudner/FSVI's KL trains them — and
// those and the last layer's agree with central differences of the KL.
func TestFSVILastLayerGradient(t *testing.T) {
	c := fsviToyConfig(t)
	c.FSVIKL = "last_layer"
	if err := c.Inference.Set(`{"inference": "ffg", "init_sd": 0.2}`); err != nil {
		t.Fatal(err)
	}
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	n := tr.Nets[0]
	kl := func(grad bool) float64 {
		tp := autodiff.NewTape[float32]()
		n.Begin()
		n.Seed(c.Seed, 0)
		v, err := tr.fs.lastLayerKL(tr, tp)
		if err != nil {
			t.Fatal(err)
		}
		if grad {
			for _, x := range tr.fs.ts {
				clear(x.Mean.Grad)
				clear(x.RawSD.Grad)
			}
			if err := tp.Backward(v); err != nil {
				t.Fatal(err)
			}
		}
		return float64(v.Item())
	}
	if k := kl(true); !(k > 0) {
		t.Fatalf("KL = %g", k)
	}
	// ts: layer 1's weight and bias, layer 3's (the last) weight and bias.
	type grads struct{ mean, raw []float32 }
	var g []grads
	for _, x := range tr.fs.ts {
		g = append(g, grads{append([]float32(nil), x.Mean.Grad...), append([]float32(nil), x.RawSD.Grad...)})
	}
	for i, x := range tr.fs.ts {
		for _, p := range []struct {
			what string
			v, g []float32
		}{{"mean", x.Mean.Value, g[i].mean}, {"raw sd", x.RawSD.Value, g[i].raw}} {
			nonzero := false
			for k := range p.v {
				nonzero = nonzero || p.g[k] != 0
				if k%3 != 0 {
					continue // a third of the entries: enough to catch a wrong formula
				}
				v0 := p.v[k]
				h := float32(1e-2)
				p.v[k] = v0 + h
				up := kl(false)
				p.v[k] = v0 - h
				down := kl(false)
				p.v[k] = v0
				fd := (up - down) / float64(2*h)
				if d := math.Abs(float64(p.g[k]) - fd); !(d <= 0.02*math.Abs(fd)+1e-3) {
					t.Errorf("tensor %d (%s) %s[%d]: gradient %.6g, central difference %.6g", i, x.Layer, p.what, k, p.g[k], fd)
				}
			}
			if !nonzero {
				t.Errorf("tensor %d (%s) %s: every gradient is zero", i, x.Layer, p.what)
			}
		}
	}
}

// TestFSVISingularCovarianceHint: context points far from unit scale make the output covariances
// singular beside fsvi_jitter; the first step's error says so — the context, the inputs' largest
// magnitude, the jitter — and what to change, not only "matrix is not positive definite". A
// larger jitter trains.
func TestFSVISingularCovarianceHint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ctx.csv")
	if err := os.WriteFile(path, []byte("x\n1\n2\n1e6\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, kl := range []string{"linearized", "last_layer"} {
		c := toyConfig(t, "ffg_w", "")
		c.Objective, c.Arch = "fsvi", "mlp:1-8-1" // relu: tanh would cap the features at 1
		c.Context, c.ContextSize, c.Epochs, c.FSVIKL = "data:"+path, 32, 1, kl
		c.Out = filepath.Join(t.TempDir(), "m.ebnn")
		tr, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		err = tr.Run(context.Background(), Hooks{})
		if err == nil {
			t.Fatalf("%s: context points of 1e6 trained", kl)
		}
		for _, w := range []string{"not positive definite", "data:" + path, "|x| = 1e+06", "fsvi_jitter 1e-06", "raise fsvi_jitter"} {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", kl, err, w)
			}
		}
		if strings.Contains(err.Error(), "learning rate") {
			t.Errorf("%s: error %q blames the learning rate before any update", kl, err)
		}
		c.FSVIJitter = 1
		trainRun(t, c)
	}
	// After updates, a learning rate too large is a cause too (lr 1e6: K_q singular at the
	// second step).
	c := toyConfig(t, "ffg_w", "")
	c.Objective, c.Arch, c.Context, c.ContextSize, c.Epochs, c.LR = "fsvi", "mlp:1-4-1", "random-monochrome", 32, 2, 1e6
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), Hooks{}); err == nil || !strings.Contains(err.Error(), "after 1 update(s), lower the learning rate lr 1e+06") {
		t.Errorf("lr 1e6: %v", err)
	}
}
