package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bfvi"
)

// TestBernsteinLastEndToEnd trains a Two Moons MLP whose last layer is BF-VI (posterior
// bernstein_last) for a few epochs, converts its checkpoint and checks that the runtime's
// predictive probabilities (quantile-table sampling) agree with Monte-Carlo predictions from
// the exact flows (train/bfvi through the Net) within Monte-Carlo error, and that fp16
// conversion stores a flow tensor as fp16 only when its accuracy gate passed.
func TestBernsteinLastEndToEnd(t *testing.T) {
	dir := t.TempDir()
	c := DefaultConfig()
	c.Arch, c.Data, c.Posterior = "mlp:2-16-2", "moons", "bernstein_last"
	c.BernsteinDegree, c.Epochs, c.BatchSize, c.LR, c.Optimizer = 10, 5, 50, 0.01, "adam"
	c.TrainSamples, c.TestSamples = 1, 32
	c.Out = filepath.Join(dir, "bf.ebnn")
	tr := trainRun(t, c)
	for _, h := range tr.History {
		t.Logf("epoch %d: loss %.4f nll %.4f kl %.1f", h.Epoch, h.Loss, h.NLL, h.KL)
	}
	rep, err := tr.Evaluate()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("test: %+v", *rep.Classification)
	m := convertLoad(t, convert.Options{Checkpoint: c.Out, Out: filepath.Join(dir, "bf_conv.ebnn")})
	if li := m.Layers(); li[len(li)-1].Kind != runtime.KindBernstein || li[0].Kind != runtime.KindDeterministic {
		t.Fatalf("layers %+v", li)
	}
	const K = 4000
	p, err := m.NewPredictor(runtime.Options{Samples: K, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	net := tr.Nets[0]
	tp := autodiff.NewTape[float32]()
	inputs := [][]float32{{0, 0.5}, {1, -0.5}, {-1, 1}, {2, 0}, {0.5, 0.25}}
	for _, x := range inputs {
		var pr runtime.Prediction
		if err := p.Predict(x, &pr); err != nil {
			t.Fatal(err)
		}
		// Exact flows: K sampled passes of the Net (bfvi.Flow.Eval per weight).
		sum, sum2 := make([]float64, 2), make([]float64, 2)
		tp.NoGrad(func() {
			for s := 0; s < K; s++ {
				tp.Reset()
				net.Begin()
				net.Seed(1234, int64(s))
				out := net.Forward(tp, tp.Const(x, 1, 2), false).Value()
				mx := math.Max(float64(out[0]), float64(out[1]))
				e0, e1 := math.Exp(float64(out[0])-mx), math.Exp(float64(out[1])-mx)
				for k, v := range []float64{e0 / (e0 + e1), e1 / (e0 + e1)} {
					sum[k] += v
					sum2[k] += v * v
				}
			}
		})
		for k := range sum {
			mu := sum[k] / K
			sd := math.Sqrt(math.Max(sum2[k]/K-mu*mu, 0))
			se := math.Sqrt((sd*sd + float64(pr.Std[k])*float64(pr.Std[k])) / K)
			t.Logf("x=%v class %d: runtime %.4f, exact flows %.4f (s.e. %.4f)", x, k, pr.Probs[k], mu, se)
			if d := math.Abs(float64(pr.Probs[k]) - mu); !(d <= 5*se+0.01) {
				t.Errorf("x=%v class %d: runtime %.4f vs exact flows %.4f (5 s.e. %.4f + 0.01)", x, k, pr.Probs[k], mu, 5*se)
			}
		}
	}
	// fp16 conversion: the gate decides each flow tensor, and stores it as fp16 only when every
	// flow's runtime samples stay within the table's Kolmogorov bound.
	r16, err := convert.Convert(convert.Options{Checkpoint: c.Out, Out: filepath.Join(dir, "bf16.ebnn"), DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	quantised := map[string]bool{}
	for _, q := range r16.Quant {
		quantised[q.Name] = true
	}
	gated := 0
	for _, g := range r16.Bernstein {
		t.Logf("fp16 gate: %+v", g)
		gated++
		if quantised[g.Name] != g.F16 || (g.F16 && !(g.KS <= g.Bound)) {
			t.Errorf("fp16 gate %+v but quantised %v", g, quantised[g.Name])
		}
	}
	if gated == 0 {
		t.Errorf("no fp16 gate report for the flow tensors (quant: %+v)", r16.Quant)
	}
}

// TestBernsteinLastLRTooLarge checks that a learning rate that drives posterior
// bernstein_last's flow parameters out of range (a scale parameter below about −745) is named
// as the cause, whether the next step's pass or the check after an epoch's last update finds
// them, and that no checkpoint or model is written: lr 1e6 used to fail with only "bfvi: flow
// scale parameters a₁′ = -999994.0625, a₂′ = 999999 underflow", or, when the update was the
// epoch's last, with the runtime's "flow scales … underflow to zero" on evaluation.
func TestBernsteinLastLRTooLarge(t *testing.T) {
	for _, tc := range []struct {
		name      string
		optimizer string
		lr        float64
		batch     int // 200: every epoch one update
		epochs    int
		want      []string
	}{
		{"adam lr 1e6, next step", "adam", 1e6, 50, 2, []string{"after 1 update(s) at learning rate lr 1e+06, optimizer adam", "lower it"}},
		{"adam lr 1e6, the last epoch's last update", "adam", 1e6, 200, 1, []string{"after 1 update(s) at learning rate lr 1e+06, optimizer adam", "lower it"}},
		{"sgd lr 1e6", "sgd", 1e6, 50, 2, []string{"after 1 update(s) at learning rate lr 1e+06, optimizer sgd", "lower it"}},
		{"sgd lr 10", "sgd", 10, 50, 2, []string{"at learning rate lr 10, optimizer sgd", "lower it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tr, err := New(bernsteinLRConfig(dir, tc.optimizer, tc.lr, tc.batch, tc.epochs))
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Run(context.Background(), Hooks{})
			if err == nil {
				t.Fatalf("lr %g trained", tc.lr)
			}
			if !errors.Is(err, bfvi.ErrParamRange) {
				t.Errorf("error %q does not wrap bfvi.ErrParamRange", err)
			}
			testutil.ErrorContains(t, err, append(tc.want, "bernstein_last", "underflow")...)
			checkNothingWritten(t, dir)
		})
	}
}

// bernsteinLRConfig is a bernstein_last run on the moons writing into dir, with the optimizer,
// learning rate, batch size and epochs given.
func bernsteinLRConfig(dir, optimizer string, lr float64, batch, epochs int) Config {
	c := DefaultConfig()
	c.Arch, c.Data, c.Posterior = "mlp:2-16-2", "moons", "bernstein_last"
	c.BernsteinDegree, c.Epochs, c.BatchSize, c.LR, c.Optimizer = 10, epochs, batch, lr, optimizer
	c.TrainSamples, c.TestSamples = 1, 8
	c.Out = filepath.Join(dir, "bf.ebnn")
	return c
}

// checkNothingWritten fails the test if dir holds any file.
func checkNothingWritten(t *testing.T, dir string) {
	t.Helper()
	if ents, _ := os.ReadDir(dir); len(ents) > 0 {
		names := []string{}
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("wrote %v", names)
	}
}

// TestBernsteinLastInterruptAfterBadUpdate: an interrupt just after the update that drove
// bernstein_last's flow parameters out of range (before any later pass sees them) does not save
// them: the interrupt's checkpoint is refused naming the flow and lr, and nothing is written. It
// used to write a checkpoint whose flows the runtime and the next sampling pass refuse.
func TestBernsteinLastInterruptAfterBadUpdate(t *testing.T) {
	dir := t.TempDir()
	tr, err := New(bernsteinLRConfig(dir, "adam", 1e6, 50, 2))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err = tr.Run(ctx, Hooks{Step: func(s StepInfo) {
		if s.Step == 1 {
			cancel() // after the first update, before the pass that would find it
		}
	}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Run = %v, want the interrupt", err)
	}
	if !errors.Is(err, ErrParamRange) || !errors.Is(err, bfvi.ErrParamRange) {
		t.Errorf("error %q does not wrap ErrParamRange and bfvi.ErrParamRange", err)
	}
	for _, w := range []string{"not written", "epoch 1 step 1", "underflow", "lower lr (now 1e+06)"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error %v does not say %q", err, w)
		}
	}
	checkNothingWritten(t, dir)
}
