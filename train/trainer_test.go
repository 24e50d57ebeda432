package train

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// toyConfig is a fast regression run on the toy 1-D data (no data files needed).
func toyConfig(t *testing.T, posterior, inference string) Config {
	c := DefaultConfig()
	c.Arch = "mlp:1-16-1:tanh"
	c.Data = "toy1d"
	c.Task = "regression"
	c.NoisePrecision = 100
	c.Posterior = posterior
	if inference != "" {
		if err := c.Inference.Set(inference); err != nil {
			t.Fatal(err)
		}
	}
	c.BatchSize = 25
	c.Epochs = 30
	if testing.Short() {
		c.Arch, c.Epochs = "mlp:1-8-1:tanh", 10
	}
	c.LR = 1e-2
	c.TestSamples = 4
	c.EvalEvery = 1000
	c.Out = filepath.Join(t.TempDir(), "toy.ebnn")
	return c
}

// writeCSV writes a small, linearly separable 3-class problem.
func writeCSV(t *testing.T) string {
	var b strings.Builder
	b.WriteString("a,b,label\n")
	for i := 0; i < 90; i++ {
		c := i % 3
		x := float64(c)*2 + 0.3*math.Sin(float64(i))
		y := float64(2-c) + 0.3*math.Cos(float64(i*7))
		b.WriteString(strings.Join([]string{ftoa(x), ftoa(y), []string{"cat", "dog", "eel"}[c]}, ",") + "\n")
	}
	p := filepath.Join(t.TempDir(), "d.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ftoa(v float64) string { return strings.TrimRight(strings.TrimRight(fmtF(v), "0"), ".") }

// TestTrainingReducesLoss trains every posterior briefly and checks that the objective falls.
func TestTrainingReducesLoss(t *testing.T) {
	cases := []struct {
		name, posterior, inference string
		dropout                    float64
		global                     string
	}{
		{"deterministic", "deterministic", "", 0, ""},
		{"ffg_w", "ffg_w", `{"inference": "ffg", "init_sd": 1e-3}`, 0, ""},
		{"inducing_diag", "inducing", `{"inference": "inducing", "inducing_rows": 4, "inducing_cols": 4, "init_lamda": 0.01}`, 0, ""},
		{"inducing_full", "inducing", `{"inference": "inducing", "inducing_rows": 2, "inducing_cols": 3, "q_inducing": "full"}`, 0, ""},
		{"ensemble_u", "inducing", `{"inference": "inducing", "inducing_rows": 3, "inducing_cols": 3, "q_inducing": "ensemble", "ensemble_size": 3}`, 0, ""},
		{"ensemble_w", "ensemble_w", "", 0, ""},
		{"mc_dropout", "mc_dropout", "", 0.1, ""},
		{"global_u", "inducing", `{"inference": "inducing", "inducing_rows": 3, "inducing_cols": 3, "init_lamda": 0.01}`, 0, "2x3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, tc.posterior, tc.inference)
			c.EnsembleSize = 3
			c.Dropout = tc.dropout
			c.GlobalInducing = tc.global
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			var first, last float64
			err = tr.Run(context.Background(), Hooks{Epoch: func(m EpochMetrics) {
				if m.Epoch == 1 {
					first = m.NLL
				}
				last = m.NLL
			}})
			if err != nil {
				t.Fatal(err)
			}
			if !(last < first) {
				t.Errorf("NLL went from %.4g to %.4g", first, last)
			}
			h := tr.History[len(tr.History)-1]
			if h.Test == nil {
				t.Fatal("no evaluation after the last epoch")
			}
			if _, err := os.Stat(c.Out); err != nil {
				t.Fatalf("final checkpoint: %v", err)
			}
			// The checkpoint is a model file the runtime loads.
			m, err := runtime.Load(c.Out)
			if err != nil {
				t.Fatal(err)
			}
			m.Close()
			// The converter takes the training checkpoint as it is (optimizer state left out;
			// Ensemble-W with every member).
			m = convertLoad(t, convert.Options{Checkpoint: c.Out, Out: filepath.Join(t.TempDir(), "converted.ebnn"), DType: "f16"})
			if m.Members() != len(tr.Nets) {
				t.Errorf("converted model has %d members, the run %d networks", m.Members(), len(tr.Nets))
			}
			// The deployable model has the parameters but no optimizer state.
			f, err := format.Open(tr.ModelPath())
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, name := range f.Tensors() {
				if strings.HasPrefix(name, OptimPrefix) {
					t.Errorf("model file holds optimizer tensor %q", name)
				}
			}
			if m, err := runtime.FromFile(f); err != nil {
				t.Fatal(err)
			} else if m.Stochastic() == (tc.posterior == "deterministic") {
				t.Errorf("model stochastic = %v for posterior %s", m.Stochastic(), tc.posterior)
			} else if (m.GlobalKL() != 0) != (tc.global != "") {
				t.Errorf("global KL %g with global_inducing %q", m.GlobalKL(), tc.global)
			}
		})
	}
}

// TestResume checks that a checkpoint restores parameters, optimizer state and counters, and
// that training resumed after k epochs ends where an uninterrupted run ends.
func TestResume(t *testing.T) {
	c := toyConfig(t, "inducing", `{"inference": "inducing", "inducing_rows": 3, "inducing_cols": 3}`)
	c.Epochs = 4
	full, half, res := runAndResume(t, c, func(c *Config) { c.Epochs = 2 }, func(cfg *Config) error { cfg.Epochs = 4; return nil })
	if res.Epoch != 2 || res.Step != half.Step {
		t.Fatalf("resumed at epoch %d step %d, want 2 and %d", res.Epoch, res.Step, half.Step)
	}
	requireSameParams(t, "checkpoint", half, "restored", res, 0)
	if err := res.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	requireSameParams(t, "uninterrupted", full, "resumed", res, 1e-5)
}

// runAndResume trains c to the end (full), trains a copy edited by cut into its own output file
// (part), and resumes part's checkpoint with the edit resume (res, not yet run).
func runAndResume(t *testing.T, c Config, cut func(*Config), resume func(*Config) error) (full, part, res *Trainer) {
	t.Helper()
	full = trainRun(t, c)
	c2 := c
	c2.Out = filepath.Join(t.TempDir(), "part.ebnn")
	cut(&c2)
	part = trainRun(t, c2)
	var err error
	if res, err = Resume(c2.Out, resume); err != nil {
		t.Fatal(err)
	}
	return full, part, res
}

// requireSameParams fails unless the first network's parameters of a and b agree to within the
// relative tolerance rel (0: exactly).
func requireSameParams(t *testing.T, nameA string, a *Trainer, nameB string, b *Trainer, rel float64) {
	t.Helper()
	for i, p := range a.Nets[0].Params() {
		q := b.Nets[0].Params()[i]
		for j := range p.Value {
			if d := math.Abs(float64(p.Value[j] - q.Value[j])); !(d <= rel*(1+math.Abs(float64(p.Value[j])))) {
				t.Fatalf("%s[%d]: %s %v, %s %v", p.Name, j, nameA, p.Value[j], nameB, q.Value[j])
			}
		}
	}
}

// TestInterrupt checks that a cancelled run writes a checkpoint and returns the context error.
func TestInterrupt(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	ctx, cancel := context.WithCancel(context.Background())
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var wrote string
	err = tr.Run(ctx, Hooks{Step: func(s StepInfo) {
		if s.Step == 3 {
			cancel()
		}
	}, Checkpoint: func(p string) { wrote = p }})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Run returned %v after cancel", err)
	}
	if wrote != tr.EpochCheckpointPath() {
		t.Fatalf("checkpoint written to %q, want %q", wrote, tr.EpochCheckpointPath())
	}
	s, err := ReadState(wrote)
	if err != nil {
		t.Fatal(err)
	}
	if s.Step != 3 || s.Epoch != 0 {
		t.Fatalf("state step %d epoch %d, want 3 and 0", s.Step, s.Epoch)
	}
}

func TestKLWeight(t *testing.T) {
	cases := []struct {
		ml, ann int
		want    []float64
	}{
		{0, 0, []float64{1, 1, 1}},
		{1, 0, []float64{0, 0, 1, 1}},
		{1, 2, []float64{0, 0, 0.5, 1, 1}},
		{0, 4, []float64{0, 0.25, 0.5, 0.75, 1}},
	}
	for _, tc := range cases {
		c := Config{MLEpochs: tc.ml, AnnealingEpochs: tc.ann}
		for e, w := range tc.want {
			if got := c.KLWeight(e); !(math.Abs(got-w) <= 1e-12) {
				t.Errorf("ml %d ann %d epoch %d: weight %v, want %v", tc.ml, tc.ann, e, got, w)
			}
		}
	}
}

// TestMinStepsGates checks which epochs are evaluated and checkpointed when epochs are tiny:
// toy data of 100 points at batch 50 gives 2 steps per epoch.
func TestMinStepsGates(t *testing.T) {
	cases := []struct {
		name                string
		evalEvery, evalMin  int
		ckptEvery, ckptMin  int
		wantEval, wantCkpts []int // epochs (1-based) evaluated / checkpointed
	}{
		{"defaults off", 1, 0, 1, 0, []int{1, 2, 3, 4, 5, 6, 7}, []int{1, 2, 3, 4, 5, 6, 7}},
		{"min steps 5", 1, 5, 1, 5, []int{3, 6, 7}, []int{3, 6, 7}},
		{"min steps and every", 2, 3, 3, 1, []int{2, 4, 6, 7}, []int{3, 6, 7}},
		{"min steps 4", 1, 4, 0, 0, []int{2, 4, 6, 7}, []int{7}},
		{"never but last", 0, 0, 0, 200, []int{7}, []int{7}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, "deterministic", "")
			c.Arch, c.Epochs, c.BatchSize, c.TestSamples = "mlp:1-4-1:tanh", 7, 50, 1
			c.EvalEvery, c.EvalMinSteps = tc.evalEvery, tc.evalMin
			c.CheckpointEvery, c.CheckpointMinSteps = tc.ckptEvery, tc.ckptMin
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			if spe := tr.StepsPerEpoch(); spe != 2 {
				t.Skipf("toy data gives %d steps per epoch; the table assumes 2", spe)
			}
			var evals, ckpts []int
			err = tr.Run(context.Background(), Hooks{
				Epoch: func(m EpochMetrics) {
					if m.Test != nil {
						evals = append(evals, m.Epoch)
					}
				},
				Checkpoint: func(p string) {
					if p != tr.ModelPath() {
						ckpts = append(ckpts, tr.Epoch)
					}
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(evals, tc.wantEval) || !slices.Equal(ckpts, tc.wantCkpts) {
				t.Errorf("evaluated %v, checkpointed %v; want %v, %v", evals, ckpts, tc.wantEval, tc.wantCkpts)
			}
		})
	}
}

// TestMinStepsValidate checks that negative gates are refused with the key's name.
func TestMinStepsValidate(t *testing.T) {
	for _, key := range []string{"eval_min_steps", "checkpoint_min_steps", "eval_every", "checkpoint_every"} {
		c := toyConfig(t, "deterministic", "")
		if err := c.Set(key, "-1"); err != nil {
			t.Fatal(err)
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%s = -1: Validate() = %v, want an error naming it", key, err)
		}
	}
}

// TestTrainingMemoryCheck: New refuses, before allocating anything, a network whose weights
// would not fit in memory while training, naming the arch and the weight count.
func TestTrainingMemoryCheck(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Arch = "mlp:1-1000000000-1"
	_, err := New(c)
	if err == nil || !strings.Contains(err.Error(), "mlp:1-1000000000-1") || !strings.Contains(err.Error(), "3000000001 parameters") {
		t.Fatalf("New = %v, want a refusal naming the arch and its 3,000,000,001 weights", err)
	}
	// A small network whose posterior is not: 1024 inducing matrices of 4096×4096 per layer (a
	// 147-byte config once asked for 137 GB), counted from the tensors the schema declares.
	c = toyConfig(t, "inducing", `{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 4096, "inducing_cols": 4096, "q_inducing": "ensemble", "ensemble_size": 1024}}}`)
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "parameters") || !strings.Contains(err.Error(), "GiB") ||
		!strings.Contains(err.Error(), "posterior inducing with its inference config") {
		t.Fatalf("New = %v, want a refusal counting the inducing matrices and naming the inference config", err)
	}
	// The limit itself: 1-16-1 has 16·2 + 1·17 = 49 weights.
	spec := &runtime.Spec{Layers: []runtime.LayerSpec{
		{Op: runtime.OpLinear, In: 1, Out: 16}, {Op: runtime.OpTanh}, {Op: runtime.OpLinear, In: 16, Out: 1},
		{Op: runtime.OpResidual, Body: []runtime.LayerSpec{{Op: runtime.OpConv2d, In: 2, Out: 3, Kernel: [2]int{3, 3}}}},
	}}
	w := int64(49 + 3*(2*9+1))
	// trainingFloats float32 values per weight, and trainingOverhead.
	need := func(floats int64) int64 { return w*4*floats + trainingOverhead }
	for _, tc := range []struct {
		posterior string
		latent    int
		members   int
		samples   int
		limit     int64
		ok        bool
	}{
		{"deterministic", 0, 1, 1, need(15), true},
		{"deterministic", 0, 1, 1, need(15) - 1, false},
		{"ensemble_w", 0, 4, 1, need(48), true},
		{"ensemble_w", 0, 4, 1, need(48) - 1, false},
		{"ffg_w", 0, 1, 2, need(22), true},
		{"ffg_w", 0, 1, 2, need(22) - 1, false},
		{"inducing", 0, 1, 4, need(64), true},
		{"inducing", 0, 1, 4, need(64) - 1, false},
		{"vifa", 3, 1, 1, need(83), true},
		{"vifa", 3, 1, 1, need(83) - 1, false},
		{"fa_em", 3, 1, 1, need(67), true},
		{"fa_em", 3, 1, 1, need(67) - 1, false},
		{"swag", 3, 1, 1, need(60), true},
		{"swag", 3, 1, 1, need(60) - 1, false},
	} {
		cfg := Config{Arch: "x", Posterior: tc.posterior, LatentDim: tc.latent, TrainSamples: tc.samples}
		if err := checkTrainingMemory(spec, &cfg, tc.members, tc.limit); (err == nil) != tc.ok {
			t.Errorf("%+v: %v", tc, err)
		}
	}
}

// doctor copies the checkpoint src to a new file in dir, with the tensor (or blob) name
// replaced by edit's result, and returns its path.
func doctor(t *testing.T, src, name string, tensor func([]float32, []int) ([]float32, []int), blob func([]byte) []byte) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "doctored.ebnn")
	modeltest.Rewrite(t, src, out, name, tensor, blob)
	return out
}

// TestResumeRefusesBadCheckpoints: a checkpoint is an input like any other — NaN parameters or
// optimizer state, a tensor of the right size but the wrong shape, and counters out of range are
// errors naming the file, before anything trains; and a resumed run with nothing left to train
// is an error, not a "wrote" without a file.
func TestResumeRefusesBadCheckpoints(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs = 2
	good := trainRun(t, c).Config.Out
	p0 := func() string {
		tr, err := Resume(good, nil)
		if err != nil {
			t.Fatal(err)
		}
		return tr.Nets[0].Params()[0].Name
	}()
	var optName string
	if f, err := format.Open(good); err == nil {
		for _, n := range f.Tensors() {
			if strings.HasPrefix(n, OptimPrefix) {
				optName = n
				break
			}
		}
		f.Close()
	}
	state := func(key string, v any) func([]byte) []byte {
		return func(b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m[key] = v
			out, _ := json.Marshal(m)
			return out
		}
	}
	secret := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secret, []byte(`{"SECRET": "hunter2"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	config := func(key, v string) func([]byte) []byte {
		return func(b []byte) []byte {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			m["config"].(map[string]any)[key] = v
			out, _ := json.Marshal(m)
			return out
		}
	}
	nan := func(v []float32, s []int) ([]float32, []int) { v[0] = float32(math.NaN()); return v, s }
	for _, tc := range []struct {
		name, path, want string
	}{
		{"NaN parameter", doctor(t, good, p0, nan, nil), "value 0 is NaN"},
		{"NaN optimizer state", doctor(t, good, optName, nan, nil), "optimizer state"},
		{"reshaped parameter", doctor(t, good, p0, func(v []float32, s []int) ([]float32, []int) {
			return v, []int{s[len(s)-1], len(v) / s[len(s)-1]}
		}, nil), "has shape"},
		{"negative epoch", doctor(t, good, TrainBlob, nil, state("epoch", -1000000000)), "out of range"},
		{"negative step", doctor(t, good, TrainBlob, nil, state("step", -5)), "out of range"},
		// Paths a checkpoint names are not opened (their contents once came back in errors).
		{"inference path", doctor(t, good, TrainBlob, nil, config("inference", secret)), "names a file"},
		{"arch path", doctor(t, good, TrainBlob, nil, config("arch", secret)), "names a file"},
		// A setting this trainer does not know (a newer edgebnn's, or an edit) is not ignored.
		{"unknown setting", doctor(t, good, TrainBlob, nil, config("warp_drive", "on")), `unknown field "warp_drive"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Resume(tc.path, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.path) || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("Resume = %v, want an error naming the file and %q", err, tc.want)
			}
		})
	}
	tr, err := Resume(good, func(c *Config) error { c.Epochs = 2; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), Hooks{}); err == nil || !strings.Contains(err.Error(), "nothing to train") {
		t.Fatalf("resuming 2 of 2 epochs: %v, want nothing to train", err)
	}
	c.Epochs, c.Out = 0, filepath.Join(t.TempDir(), "zero.ebnn")
	if tr, err := New(c); err != nil {
		t.Fatal(err)
	} else if err := tr.Run(context.Background(), Hooks{}); err == nil || !strings.Contains(err.Error(), "epochs 0") {
		t.Fatalf("epochs 0: %v, want an error", err)
	}
}

// TestFashionMNISTTestShape: test images of another shape than the training images — the same
// number of pixels, 14×56 against 28×28 — are refused, naming the directory and both shapes.
func TestFashionMNISTTestShape(t *testing.T) {
	dir := t.TempDir()
	idx := func(name string, dims ...uint32) {
		n := uint32(1)
		for _, d := range dims {
			n *= d
		}
		b := binary.BigEndian.AppendUint32(nil, 0x800|uint32(len(dims)))
		for _, d := range dims {
			b = binary.BigEndian.AppendUint32(b, d)
		}
		if err := os.WriteFile(filepath.Join(dir, name), append(b, make([]byte, n)...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	idx("train-images-idx3-ubyte", 2, 28, 28)
	idx("train-labels-idx1-ubyte", 2)
	idx("t10k-images-idx3-ubyte", 2, 14, 56)
	idx("t10k-labels-idx1-ubyte", 2)
	c := DefaultConfig()
	c.Arch, c.Data, c.DataDir, c.Out = "mlp:784-10", "fmnist", dir, filepath.Join(t.TempDir(), "m.ebnn")
	if _, err := New(c); err == nil || !strings.Contains(err.Error(), "the test images are [1 14 56], the training images [1 28 28]") {
		t.Fatalf("New = %v, want the shapes named", err)
	}
}

// TestActivationMemoryCheck: a step's activations — values per example × (batch + fsvi's
// context) × samples × members × 4 values of 4 bytes — against the limit, at the boundary.
func TestActivationMemoryCheck(t *testing.T) {
	const per = 1000
	for _, tc := range []struct {
		name    string
		edit    func(*Config)
		members int
		rows    int64
	}{
		{"batch", func(c *Config) { c.BatchSize = 100 }, 1, 100},
		{"samples", func(c *Config) { c.BatchSize, c.TrainSamples = 100, 3 }, 1, 300},
		{"members", func(c *Config) { c.BatchSize = 100 }, 4, 400},
		{"fsvi context", func(c *Config) { c.BatchSize, c.Objective, c.ContextSize = 100, "fsvi", 28 }, 1, 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			c.Arch = "x"
			tc.edit(&c)
			need := per * tc.rows * 16
			if err := checkActivationMemory(per, &c, tc.members, need); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			if err := checkActivationMemory(per, &c, tc.members, need-1); err == nil || !strings.Contains(err.Error(), "lower --batch-size") {
				t.Errorf("a byte below the limit: %v", err)
			}
		})
	}
}
