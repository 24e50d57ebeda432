package train

import (
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestMCDropoutTrainer trains a small MC dropout MLP on a 3-class CSV problem for a few steps
// and checks the model it writes: a dropout layer of the configured rate with MC on after each
// hidden activation (and none after the output), predictions that vary between samples (mutual
// information > 0), a Mean prediction equal, bit for bit, to the same weights without the
// dropout layers, and p and MC kept by convert.
func TestMCDropoutTrainer(t *testing.T) {
	c := DefaultConfig()
	c.Arch = "mlp:2-16-16-3"
	c.Data = "csv:" + writeCSV(t)
	c.Posterior = "mc_dropout"
	c.Dropout = 0.3
	c.WeightDecay = 1e-4
	c.Epochs, c.BatchSize, c.LR = 3, 10, 1e-2
	c.TestSamples = 8
	c.Out = filepath.Join(t.TempDir(), "mcd.ebnn")
	tr := trainRun(t, c)
	spec := tr.Spec()
	var names []string
	for i, l := range spec.Layers {
		if l.Op != runtime.OpDropout {
			continue
		}
		names = append(names, l.Name)
		if l.P != 0.3 || !l.MC {
			t.Errorf("dropout layer %q: p %v, mc %v", l.Name, l.P, l.MC)
		}
		if prev := spec.Layers[i-1].Op; prev != runtime.OpReLU {
			t.Errorf("dropout layer %q follows %s, want relu", l.Name, prev)
		}
	}
	if len(names) != 2 {
		t.Fatalf("dropout layers %v, want one after each of the 2 hidden activations", names)
	}

	for _, path := range []string{c.Out, tr.ModelPath()} {
		m, err := runtime.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		checkMCDropoutModel(t, path, m)
		m.Close()
	}
	conv := filepath.Join(t.TempDir(), "conv.ebnn")
	m := convertLoad(t, convert.Options{Checkpoint: c.Out, Out: conv})
	got := m.Spec()
	if len(got.Layers) != len(spec.Layers) {
		t.Fatalf("converted model has %d layers, the run %d", len(got.Layers), len(spec.Layers))
	}
	for i, l := range got.Layers {
		if l.Op == runtime.OpDropout && (l.P != spec.Layers[i].P || !l.MC) {
			t.Errorf("converted dropout layer %q: p %v, mc %v", l.Name, l.P, l.MC)
		}
	}
	checkMCDropoutModel(t, conv, m)
}

// checkMCDropoutModel checks that m's sampled predictions vary (mutual information > 0 for
// every input) and that its Mean prediction is the network without dropout layers, built from
// the same tensors.
func checkMCDropoutModel(t *testing.T, path string, m *runtime.Model) {
	t.Helper()
	if !m.Stochastic() {
		t.Fatalf("%s: an MC dropout model is not stochastic", path)
	}
	spec := m.Spec()
	plain := spec
	plain.Layers = nil
	for _, l := range spec.Layers {
		if l.Op != runtime.OpDropout {
			plain.Layers = append(plain.Layers, l)
		}
	}
	f := modeltest.Open(t, path)
	ts := runtime.Tensors{}
	for _, name := range m.TensorsUsed() {
		ts[name] = modeltest.Tensor(t, f, name)
	}
	pm, err := runtime.New(&plain, ts)
	if err != nil {
		t.Fatal(err)
	}
	xs := []float32{0, 2, 2, 1, 4, 0, 1, 1}
	n := len(xs) / 2
	predict := func(m *runtime.Model, o runtime.Options) []runtime.Prediction {
		o.MaxBatch = n
		p, err := m.NewPredictor(o)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]runtime.Prediction, n)
		if err := p.PredictBatch(xs, out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	sampled := predict(m, runtime.Options{Samples: 32, Seed: 3})
	mean := predict(m, runtime.Options{Mean: true})
	want := predict(pm, runtime.Options{})
	for i := range want {
		if !(sampled[i].MutualInfo > 0) {
			t.Errorf("%s: input %d: mutual information %v, want > 0", path, i, sampled[i].MutualInfo)
		}
		for j := range want[i].Probs {
			if mean[i].Probs[j] != want[i].Probs[j] {
				t.Errorf("%s: input %d: Mean probability %d is %v, the network without dropout gives %v", path, i, j, mean[i].Probs[j], want[i].Probs[j])
			}
		}
	}
}
