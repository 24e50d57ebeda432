package train

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

// TestCheckEvalMemory: the test and OOD sets' predictions (rows × the network's outputs) are
// checked against the limit before training, at the boundary, and the error names the sets.
func TestCheckEvalMemory(t *testing.T) {
	test := &data.Dataset{Name: "csv:names.csv", N: 4000}
	ood := &data.Dataset{Name: "digits:d.csv.gz", N: 100}
	for _, tc := range []struct {
		name      string
		test, ood *data.Dataset
		rows      int
		want      []string
	}{
		{"test set", test, nil, 4000, []string{"csv:names.csv"}},
		{"with the OOD set", test, ood, 4100, []string{"csv:names.csv", "digits:d.csv.gz"}},
		{"no test set", &data.Dataset{Name: "none"}, nil, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			need := eval.MemoryNeed(tc.rows, 20000)
			if err := checkEvalMemory(tc.test, tc.ood, 20000, need); err != nil {
				t.Fatalf("at the limit: %v", err)
			}
			if tc.rows == 0 {
				return
			}
			err := checkEvalMemory(tc.test, tc.ood, 20000, need-1)
			testutil.ErrorContains(t, err, append(tc.want, "train: eval:", "GiB", "20000 outputs")...)
		})
	}
}

// TestHMCScratchMemory: posterior hmc's full-batch working space is estimated exactly (what
// newScratch allocates) and refused up front when the chains run at once would not fit:
// toy1d:1048576 with mlp:1-3000-1 asked for a 25 GB block and crashed with "fatal error: out of
// memory".
func TestHMCScratchMemory(t *testing.T) {
	d := hmcTestData(1, 10, 2, 1, 0, 1)
	tr, err := NewWithData(hmcTestConfig(t, "mlp:2-3-1:tanh", d), d, d)
	if err != nil {
		t.Fatal(err)
	}
	net := tr.hmc.net
	s := net.newScratch(10)
	got := int64(len(s.delta) + len(s.delta2))
	for _, a := range s.acts {
		got += int64(len(a))
	}
	if est := net.scratchValues(10); est != got || got != 10*(2+3+3+1+2*3) {
		t.Fatalf("estimate %d values, newScratch allocates %d", est, got)
	}
	need := got * 8 * 3
	if err := checkHMCMemory(net, 10, 3, need); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if err := checkHMCMemory(net, 10, 3, need-1); err == nil || !strings.Contains(err.Error(), "--train-limit") || !strings.Contains(err.Error(), "3 chain(s)") {
		t.Fatalf("a byte below the limit: %v", err)
	}

	c := toyConfig(t, "hmc", "")
	c.Data, c.Arch, c.TestFraction = "toy1d:1048576", "mlp:1-3000-1", 0
	c.HMCChains, c.HMCWarmup, c.HMCDraws, c.HMCSamples = 1, 1, 1, 1
	if big := int64(1048576) * (1 + 3000 + 1 + 2*3000) * 8; runtime.DefaultMaxMemory() >= big {
		t.Skipf("this machine has %d bytes of memory, enough for %d", runtime.DefaultMaxMemory(), big)
	}
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "1048576 training rows") || !strings.Contains(err.Error(), "GiB") {
		t.Fatalf("New = %v, want the working space refused with its size", err)
	}
}

// TestInitFromValueBound: init_from weights beyond ±MaxInitFromValue (finite float32 values that
// made the first loss +Inf, blamed on the learning rate) are refused naming the file and the
// tensor; weights within it that still overflow make the first step's error say that no update
// was made and point at the data and init_from.
func TestInitFromValueBound(t *testing.T) {
	base := toyConfig(t, "deterministic", "")
	base.Arch, base.Epochs = "mlp:1-16-1:relu", 1 // relu: tanh would cap the hidden values at 1
	ckpt := trainRun(t, base).Config.Out
	base.Out = filepath.Join(t.TempDir(), "from.ebnn")
	probe, err := New(base)
	if err != nil {
		t.Fatal(err)
	}
	var weights []string
	for _, p := range probe.Nets[0].Params() {
		weights = append(weights, p.Name)
	}

	huge := doctor(t, ckpt, weights[0], fillWith(3e38), nil)
	c := base
	c.InitFrom = huge
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), huge) || !strings.Contains(err.Error(), weights[0]) ||
		!strings.Contains(err.Error(), "outside ±1e+15") {
		t.Fatalf("weights of 3e38: New = %v, want a refusal naming %s and %q", err, huge, weights[0])
	}

	big := ckpt
	for _, w := range weights {
		big = doctor(t, big, w, fillWith(1e15), nil)
	}
	c.InitFrom, c.Epochs = big, 1
	tr, err := New(c)
	if err != nil {
		t.Fatalf("weights at the bound: %v", err)
	}
	failsAtFirstStep(t, tr, "weights of 1e15", "before any update", "init_from "+big, "toy1d", "rescale")
}

// fillWith returns a doctor edit that sets every value of a tensor to v.
func fillWith(v float32) func([]float32, []int) ([]float32, []int) {
	return func(d []float32, s []int) ([]float32, []int) {
		out := make([]float32, len(d))
		for i := range out {
			out[i] = v
		}
		return out, s
	}
}

// failsAtFirstStep runs tr (whose parameters are what) and checks that it fails with an error
// that says each of words and does not blame the learning rate (no update has been made).
func failsAtFirstStep(t *testing.T, tr *Trainer, what string, words ...string) {
	t.Helper()
	err := tr.Run(context.Background(), Hooks{})
	if err == nil {
		t.Fatalf("%s trained", what)
	}
	t.Logf("%s: %v", what, err)
	testutil.ErrorContains(t, err, words...)
	if strings.Contains(err.Error(), "learning rate") {
		t.Errorf("error %q blames the learning rate at the first step", err)
	}
}

// TestResumeValueBound: a checkpoint's parameters beyond ±MaxInitFromValue (finite float32
// values: a mean of 1e30, an ffg standard deviation parameter of 1e30) are refused by Resume
// naming the file and the tensor — they used to train into "the loss is +Inf (lower the learning
// rate?)" — and parameters within it that still overflow make the first step's error say that
// this run has made no update and point at the checkpoint, not at the learning rate.
func TestResumeValueBound(t *testing.T) {
	c := toyConfig(t, "ffg_w", "")
	c.Arch, c.Epochs = "mlp:1-16-1:relu", 1 // relu: tanh would cap the hidden values at 1
	ckpt := trainRun(t, c).Config.Out
	longer := func(cfg *Config) error { cfg.Epochs = 2; return nil }
	for _, name := range []string{"1.weight_mean", "1._weight_sd", "3.bias_mean"} {
		bad := doctor(t, ckpt, name, fillWith(-1e30), nil)
		if _, err := Resume(bad, longer); err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), strconv.Quote(name)) ||
			!strings.Contains(err.Error(), "outside ±1e+15") {
			t.Errorf("%s of -1e30: Resume = %v, want a refusal naming %s, %q and the bound", name, err, bad, name)
		}
	}

	big := ckpt
	for _, name := range []string{"1.weight_mean", "3.weight_mean"} {
		big = doctor(t, big, name, fillWith(1e15), nil)
	}
	tr, err := Resume(big, longer)
	if err != nil {
		t.Fatalf("means at the bound: %v", err)
	}
	failsAtFirstStep(t, tr, "means of 1e15", "first step after resuming, before any update", "checkpoint "+big, "toy1d")
}
