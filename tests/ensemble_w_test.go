package tests

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/eval"
)

// Ensemble-W end to end: train a tiny ensemble of K deterministic networks, write the checkpoint,
// convert it to f16, load it and predict; the predictive must be the average of the members'
// softmax outputs (regression: the mixture's mean and variance), with each member predicted by
// its own single-network model.

// ensCSV writes a small 3-class problem with two features.
func ensCSV(t *testing.T) string {
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := 0; i < 120; i++ {
		c := i % 3
		x := float64(c)*1.5 + 0.6*math.Sin(float64(i)*1.3)
		y := float64(2-c) + 0.6*math.Cos(float64(i*7))
		fmt.Fprintf(&b, "%.4f,%.4f,%d\n", x, y, c)
	}
	p := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// ensArch has a BatchNorm1d, so that each member's running statistics are part of the model.
const ensArch = `{"layers": [
  {"name": "fc1", "type": "Linear", "in_features": 2, "out_features": 32},
  {"name": "bn1", "type": "BatchNorm1d", "num_features": 32},
  {"name": "relu", "type": "ReLU"},
  {"name": "fc2", "type": "Linear", "in_features": 32, "out_features": 3}
]}`

func ensConfig(t *testing.T, k int) train.Config {
	c := train.DefaultConfig()
	c.Posterior = "ensemble_w"
	c.EnsembleSize = k
	c.Data, c.Task, c.Arch = "csv:"+ensCSV(t), "classification", ensArch
	c.Epochs, c.BatchSize, c.LR = 3, 20, 1e-2
	c.TestSamples = 16 // ensembles evaluate with one sample per member regardless
	c.EvalEvery = 0
	c.Out = filepath.Join(t.TempDir(), "ens.ebnn")
	return c
}

func trainEnsemble(t *testing.T, c train.Config) *train.Trainer {
	t.Helper()
	tr, err := train.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), train.Hooks{}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// memberModels builds each member as its own single network from the model file's tensors
// (member k's under "member<k>/"; spec without members).
func memberModels(t *testing.T, path string) []*runtime.Model {
	t.Helper()
	f := modeltest.Open(t, path)
	spec := modeltest.Spec(t, f)
	k := spec.Members
	spec.Members = 0
	var out []*runtime.Model
	for e := 0; e < k; e++ {
		prefix := ""
		if e > 0 {
			prefix = fmt.Sprintf("member%d/", e)
		}
		ts := runtime.Tensors{}
		for _, name := range f.Tensors() {
			rest, ok := strings.CutPrefix(name, prefix)
			if !ok || strings.HasPrefix(name, "optim/") || (e == 0 && strings.HasPrefix(name, "member")) {
				continue
			}
			ts[rest] = modeltest.Tensor(t, f, name)
		}
		m, err := runtime.New(spec, ts)
		if err != nil {
			t.Fatalf("member %d: %v", e, err)
		}
		out = append(out, m)
	}
	return out
}

// averageSoftmax returns (1/K) Σ_k softmax(member k's logits for x), in float64.
func averageSoftmax(t *testing.T, members []*runtime.Model, x []float32) []float64 {
	t.Helper()
	var avg []float64
	for _, m := range members {
		p, err := m.NewPredictor(runtime.Options{KeepSamples: true})
		if err != nil {
			t.Fatal(err)
		}
		var pr runtime.Prediction
		if err := p.Predict(x, &pr); err != nil {
			t.Fatal(err)
		}
		if avg == nil {
			avg = make([]float64, len(pr.Outputs))
		}
		mx := math.Inf(-1)
		for _, v := range pr.Outputs {
			mx = math.Max(mx, float64(v))
		}
		z := 0.0
		for _, v := range pr.Outputs {
			z += math.Exp(float64(v) - mx)
		}
		for j, v := range pr.Outputs {
			avg[j] += math.Exp(float64(v)-mx) / z / float64(len(members))
		}
	}
	return avg
}

// TestEnsembleWEndToEnd: train → checkpoint → convert f16 → load → predict.
func TestEnsembleWEndToEnd(t *testing.T) {
	const K = 3
	c := ensConfig(t, K)
	tr := trainEnsemble(t, c)
	// The checkpoint and the deployable model both hold every member.
	for _, path := range []string{c.Out, tr.ModelPath()} {
		m, err := runtime.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if m.Members() != K {
			t.Errorf("%s: %d members, want %d", path, m.Members(), K)
		}
		m.Close()
	}
	// The trainer's evaluation is the runtime's on the checkpoint, one sample per member.
	last := tr.History[len(tr.History)-1].Test
	if last == nil || last.Classification == nil {
		t.Fatal("no classification report after the last epoch")
	}
	m, err := runtime.Load(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	opt := tr.PredictOptions()
	if opt.Samples != K {
		t.Errorf("trainer predicts with %d samples, want %d", opt.Samples, K)
	}
	rep, err := eval.Evaluate(m, tr.Test, nil, opt)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Classification.NLL != last.Classification.NLL || rep.Classification.Accuracy != last.Classification.Accuracy {
		t.Errorf("trainer evaluation %+v, runtime on the checkpoint %+v", *last.Classification, *rep.Classification)
	}
	// f32 reference: the members as trained.
	f32Members := memberModels(t, c.Out)
	out := filepath.Join(t.TempDir(), "ens16.ebnn")
	crep, err := convert.Convert(convert.Options{Checkpoint: c.Out, Out: out, DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	if crep.Members != K || crep.Parameters != K*crep.DeterministicParameters {
		t.Errorf("convert report: members %d, parameters %d, deterministic %d", crep.Members, crep.Parameters, crep.DeterministicParameters)
	}
	cm, err := runtime.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer cm.Close()
	if cm.Members() != K {
		t.Fatalf("converted model has %d members", cm.Members())
	}
	f16Members := memberModels(t, out)
	p, err := cm.NewPredictor(runtime.Options{Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	if p.Options().Samples != K {
		t.Errorf("default samples %d, want %d", p.Options().Samples, K)
	}
	var maxF16 float64
	for i := 0; i < tr.Test.N; i++ {
		x := tr.Test.Row(i)
		var pr runtime.Prediction
		if err := p.Predict(x, &pr); err != nil {
			t.Fatal(err)
		}
		exact := averageSoftmax(t, f16Members, x)
		trained := averageSoftmax(t, f32Members, x)
		for j := range exact {
			if d := math.Abs(float64(pr.Probs[j]) - exact[j]); !(d <= 1e-6) {
				t.Fatalf("input %d class %d: p = %v, average of the converted members %v", i, j, pr.Probs[j], exact[j])
			}
			maxF16 = math.Max(maxF16, math.Abs(float64(pr.Probs[j])-trained[j]))
		}
	}
	// fp16 weights move the probabilities a little.
	if !(maxF16 <= 1e-3) {
		t.Errorf("f16 model differs from the trained members' average by %.3g", maxF16)
	}
	t.Logf("f16 vs trained f32 members: max |Δp| = %.2g over %d inputs", maxF16, tr.Test.N)
	in, err := convert.Inspect(out, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Members != K || in.MemberParameters != crep.DeterministicParameters {
		t.Errorf("inspect: members %d, %d parameters per member (want %d)", in.Members, in.MemberParameters, crep.DeterministicParameters)
	}
}

// TestEnsembleWRegression: a toy1d ensemble (regression, which the trainer could not evaluate
// before Ensemble-W had a model form) predicts the mixture: mean = average of the members'
// means, epistemic variance = their variance, total = that plus the noise variance.
func TestEnsembleWRegression(t *testing.T) {
	const K = 2
	c := train.DefaultConfig()
	c.Posterior, c.EnsembleSize = "ensemble_w", K
	c.Data, c.Task, c.Arch, c.NoisePrecision = "toy1d", "regression", "mlp:1-8-1:tanh", 100
	c.Epochs, c.BatchSize, c.LR, c.EvalEvery = 2, 25, 1e-2, 0
	c.Out = filepath.Join(t.TempDir(), "toy.ebnn")
	tr := trainEnsemble(t, c)
	if tr.History[len(tr.History)-1].Test.Regression == nil {
		t.Fatal("no regression report")
	}
	out := filepath.Join(t.TempDir(), "toy16.ebnn")
	if _, err := convert.Convert(convert.Options{Checkpoint: c.Out, Out: out, DType: "f16"}); err != nil {
		t.Fatal(err)
	}
	m, err := runtime.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	members := memberModels(t, out)
	p, err := m.NewPredictor(runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, xv := range []float32{-1.5, -0.3, 0, 0.8, 1.9} {
		x := []float32{xv}
		var pr runtime.Prediction
		if err := p.Predict(x, &pr); err != nil {
			t.Fatal(err)
		}
		var s, s2 float64
		for _, mm := range members {
			mp, err := mm.NewPredictor(runtime.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var one runtime.Prediction
			if err := mp.Predict(x, &one); err != nil {
				t.Fatal(err)
			}
			s += float64(one.Mean[0])
			s2 += float64(one.Mean[0]) * float64(one.Mean[0])
		}
		mean := s / K
		ev := s2/K - mean*mean
		if !(math.Abs(float64(pr.Mean[0])-mean) <= 1e-6) || !(math.Abs(float64(pr.EpistemicVar[0])-ev) <= 1e-6) ||
			!(math.Abs(float64(pr.Var[0])-(ev+1.0/c.NoisePrecision)) <= 1e-6) {
			t.Errorf("x = %v: mean %v, epistemic %v, var %v; members give %v, %v, %v", xv, pr.Mean[0], pr.EpistemicVar[0],
				pr.Var[0], mean, ev, ev+1.0/c.NoisePrecision)
		}
	}
}
