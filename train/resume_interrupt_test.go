package train

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
)

// interruptAt runs c until its training step at (1-based, counting every step of the run) has
// finished, cancels, and returns the trainer and the path of the checkpoint Run wrote on the
// interrupt.
func interruptAt(t *testing.T, c Config, at int64) (*Trainer, string) {
	t.Helper()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wrote string
	err = tr.Run(ctx, Hooks{Step: func(s StepInfo) {
		if s.Step == at {
			cancel()
		}
	}, Checkpoint: func(p string) { wrote = p }})
	if err == nil || ctx.Err() == nil {
		t.Fatalf("Run = %v, want the interrupt", err)
	}
	if wrote == "" {
		t.Fatal("no checkpoint written on the interrupt")
	}
	return tr, wrote
}

// requireSameTensors fails unless the model files a and b hold the same tensors, bit for bit.
func requireSameTensors(t *testing.T, a, b string) {
	t.Helper()
	fa, err := format.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	fb, err := format.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer fb.Close()
	if na, nb := fa.Tensors(), fb.Tensors(); !slices.Equal(na, nb) {
		t.Fatalf("tensors differ: %v and %v", na, nb)
	}
	for _, name := range fa.Tensors() {
		x, _, err := fileTensors{fa}.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		y, _, err := fileTensors{fb}.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		for i := range x {
			if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
				t.Fatalf("tensor %q[%d]: uninterrupted %v, interrupted and resumed %v", name, i, x[i], y[i])
			}
		}
	}
}

// TestInterruptMidEpochResume: a run interrupted inside an epoch (Ctrl-C) and resumed from the
// checkpoint it wrote ends exactly where the uninterrupted run ends — the same steps, learning
// rates, epoch losses and tensors (parameters, optimizer state, factor-analysis state) — for
// every kind of training loop: the checkpoint records the epoch's minibatch position and partial
// sums, and the minibatch order and noise are keyed by epoch and step. Before session 35 the
// resumed run trained the interrupted epoch again from its first minibatch (4 epochs of 5 steps
// ended at step 22 with other weights).
func TestInterruptMidEpochResume(t *testing.T) {
	cases := []struct {
		name string
		cfg  func(t *testing.T) Config
	}{
		{"ffg_w cosine", func(t *testing.T) Config {
			c := toyConfig(t, "ffg_w", `{"inference": "ffg"}`)
			c.LRSchedule = "cosine"
			return c
		}},
		{"inducing step schedule", func(t *testing.T) Config {
			c := toyConfig(t, "inducing", `{"inference": "inducing", "inducing_rows": 3, "inducing_cols": 3}`)
			c.Milestones, c.Gamma = []int{2}, 0.5
			return c
		}},
		{"ensemble_w", func(t *testing.T) Config {
			c := toyConfig(t, "ensemble_w", "")
			c.EnsembleSize = 2
			return c
		}},
		{"mc_dropout", func(t *testing.T) Config {
			c := toyConfig(t, "mc_dropout", "")
			c.Dropout = 0.2
			return c
		}},
		{"fsvi", func(t *testing.T) Config { return fsviToyConfig(t) }},
		{"vifa", func(t *testing.T) Config { c := faConfig(t, "vifa"); c.FAAverageEpochs = 2; return c }},
		{"fa_em", func(t *testing.T) Config { c := faConfig(t, "fa_em"); c.FAStartEpoch, c.FAEvery = 1, 1; return c }},
		{"swag", func(t *testing.T) Config { c := faConfig(t, "swag"); c.FAStartEpoch, c.FAEvery = 1, 1; return c }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.cfg(t)
			c.Epochs, c.BatchSize = 4, 20 // toy1d: 100 training points, 5 minibatches an epoch
			c.EvalEvery, c.EvalMinSteps, c.CheckpointMinSteps = 1, 0, 0
			full := trainRun(t, c)
			spe := int64(full.StepsPerEpoch())
			if spe < 3 {
				t.Fatalf("%d steps an epoch: the test interrupts inside one", spe)
			}
			c2 := c
			c2.Out = filepath.Join(t.TempDir(), "int.ebnn")
			part, ckpt := interruptAt(t, c2, spe+2) // epoch 2, after its second step
			s, err := ReadState(ckpt)
			if err != nil {
				t.Fatal(err)
			}
			if s.Epoch != 1 || s.Batch != 2 || s.Partial == nil || s.Step != spe+2 {
				t.Fatalf("checkpoint at epoch %d batch %d step %d (partial %v), want 1, 2, %d", s.Epoch, s.Batch, s.Step, s.Partial, spe+2)
			}
			if len(part.History) != 1 {
				t.Fatalf("the interrupted run recorded %d epochs, want 1", len(part.History))
			}
			res, err := Resume(ckpt, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Run(context.Background(), Hooks{}); err != nil {
				t.Fatal(err)
			}
			if res.Step != full.Step || len(res.History) != len(full.History) {
				t.Fatalf("resumed run ends at step %d after %d epochs, the uninterrupted one at %d after %d",
					res.Step, len(res.History), full.Step, len(full.History))
			}
			for i, a := range full.History {
				b := res.History[i]
				if a.Step != b.Step || a.LR != b.LR || a.Loss != b.Loss || a.NLL != b.NLL || a.KL != b.KL || (a.Test == nil) != (b.Test == nil) {
					t.Errorf("epoch %d: uninterrupted step %d lr %g loss %g nll %g kl %g tested %v; resumed step %d lr %g loss %g nll %g kl %g tested %v",
						a.Epoch, a.Step, a.LR, a.Loss, a.NLL, a.KL, a.Test != nil, b.Step, b.LR, b.Loss, b.NLL, b.KL, b.Test != nil)
				}
			}
			requireSameTensors(t, c.Out, c2.Out)
		})
	}
}

// TestInterruptInFinetuneKeepsState: a run interrupted inside its first fine-tuning epoch (after
// prune_snr) resumes with the pruned network and the fine-tuning optimizer state it saved, and
// ends where the uninterrupted run ends; before session 35 its checkpoint (epoch = epochs) read
// as "not pruned yet", so the resumed run pruned again and started a new optimizer.
func TestInterruptInFinetuneKeepsState(t *testing.T) {
	c := toyConfig(t, "ffg_w", `{"inference": "ffg", "init_sd": 0.05}`)
	c.Epochs, c.FinetuneEpochs, c.PruneSNR, c.BatchSize = 2, 2, 0.3, 20
	c.EvalMinSteps, c.CheckpointMinSteps = 0, 0
	full := trainRun(t, c)
	spe := int64(full.StepsPerEpoch())
	c2 := c
	c2.Out = filepath.Join(t.TempDir(), "ft.ebnn")
	_, ckpt := interruptAt(t, c2, 2*spe+2) // fine-tuning epoch 1, after its second step
	s, err := ReadState(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if s.Epoch != c.Epochs || s.Batch != 2 || s.OptimSteps != 2 {
		t.Fatalf("checkpoint at epoch %d batch %d, optimizer step %d; want %d, 2 and 2", s.Epoch, s.Batch, s.OptimSteps, c.Epochs)
	}
	res, err := Resume(ckpt, nil)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(-1)
	if err := res.Run(context.Background(), Hooks{Step: func(StepInfo) {
		if first < 0 {
			first = res.opt.State().Step
		}
	}}); err != nil {
		t.Fatal(err)
	}
	if first != s.OptimSteps+1 {
		t.Errorf("the first resumed step leaves the optimizer at step %d, want %d: the saved state was replaced", first, s.OptimSteps+1)
	}
	if res.PruneSNRReport != nil {
		t.Errorf("the resumed run pruned the pruned network again")
	}
	requireSameTensors(t, c.Out, c2.Out)
}

// TestEvalGateAfterResume: with eval_min_steps, a run resumed at an epoch boundary evaluates at
// the same epochs as the uninterrupted run (the gate counts from the last evaluation in the
// history, not from the checkpoint).
func TestEvalGateAfterResume(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs, c.BatchSize = 50, 100 // one step an epoch
	c.EvalEvery, c.EvalMinSteps = 1, 20
	c.CheckpointEvery, c.CheckpointMinSteps = 30, 0
	full := trainRun(t, c) // evaluates at 20, 40, 50; its per-epoch checkpoint is epoch 30's
	res, err := Resume(full.EpochCheckpointPath(), func(cfg *Config) error {
		cfg.Out = filepath.Join(t.TempDir(), "res.ebnn")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.Epoch != 30 {
		t.Fatalf("checkpoint at epoch %d, want 30", res.Epoch)
	}
	if err := res.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	var tested []int
	for i := range full.History {
		if a, b := full.History[i].Test != nil, res.History[i].Test != nil; a != b {
			t.Errorf("epoch %d: evaluated uninterrupted %v, resumed %v", full.History[i].Epoch, a, b)
		} else if a {
			tested = append(tested, full.History[i].Epoch)
		}
	}
	if !slices.Equal(tested, []int{20, 40, 50}) {
		t.Errorf("evaluated at epochs %v, want 20, 40, 50", tested)
	}
}

// TestResumeMidEpochKeepsBatching: a checkpoint written inside an epoch counts minibatches of its
// batch_size over its training examples, so resuming it with another batch_size or train_limit
// is refused, naming the checkpoint and the settings it needs; at an epoch's end both may change.
func TestResumeMidEpochKeepsBatching(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs, c.BatchSize = 3, 20
	_, ckpt := interruptAt(t, c, 7) // epoch 2, after its second step
	for _, edit := range []func(*Config){
		func(c *Config) { c.BatchSize = 10 },
		func(c *Config) { c.TrainLimit = 50 },
	} {
		_, err := Resume(ckpt, func(c *Config) error { edit(c); return nil })
		if err == nil || !strings.Contains(err.Error(), ckpt) || !strings.Contains(err.Error(), "batch_size 20, train_limit 0") {
			t.Errorf("Resume with other batching = %v, want an error naming %s and its settings", err, ckpt)
		}
	}
	full := trainRun(t, c)
	if _, err := Resume(full.Config.Out, func(c *Config) error { c.Epochs, c.BatchSize, c.TrainLimit = 4, 10, 50; return nil }); err != nil {
		t.Errorf("Resume at an epoch's end with other batching: %v", err)
	}
}

// TestResumeMidEpochPhase: a prune_snr run (3 epochs, then fine-tuning) interrupted inside its
// third training epoch and resumed with --epochs 2 — the interrupted epoch becomes the first
// fine-tuning one — prunes on entering it: whether the run had begun fine-tuning is the
// checkpoint's phase, not the edited config's (it took "inside an epoch" for "pruned already"
// and fine-tuned nothing pruned).
func TestResumeMidEpochPhase(t *testing.T) {
	c := toyConfig(t, "ffg_w", `{"inference": "ffg", "init_sd": 0.05}`)
	c.Epochs, c.FinetuneEpochs, c.PruneSNR, c.BatchSize = 3, 1, 0.3, 20
	c.EvalMinSteps, c.CheckpointMinSteps = 0, 0
	_, ckpt := interruptAt(t, c, 12) // 5 steps an epoch: epoch 3, after its second step
	res, err := Resume(ckpt, func(c *Config) error { c.Epochs = 2; return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	if res.mask == nil || res.mask.pruned() == 0 || res.PruneSNRReport == nil {
		t.Errorf("resumed into the fine-tuning phase: fine-tuned with nothing pruned (report %v)", res.PruneSNRReport)
	}
}

// TestResumeMidEpochTrainingSet: a checkpoint written inside an epoch records the size of its
// training set; resuming it with settings that change the set — laplace_val holds out the last
// examples, which batch_size and train_limit checks do not see — is refused, naming the file.
func TestResumeMidEpochTrainingSet(t *testing.T) {
	c := toyConfig(t, "laplace", "")
	c.Epochs, c.BatchSize = 3, 20
	_, ckpt := interruptAt(t, c, 7) // 5 minibatches an epoch: epoch 2, after its second
	s, err := ReadState(ckpt)
	if err != nil {
		t.Fatal(err)
	}
	if s.Batch != 2 || s.TrainN == 0 {
		t.Fatalf("checkpoint at batch %d with %d training examples, want 2 and the count", s.Batch, s.TrainN)
	}
	if _, err := Resume(ckpt, func(c *Config) error { c.LaplaceVal = 30; return nil }); err == nil || !strings.Contains(err.Error(), ckpt) || !strings.Contains(err.Error(), "training examples") {
		t.Errorf("Resume with another laplace_val = %v, want an error naming %s and the training set", err, ckpt)
	}
	if _, err := Resume(ckpt, nil); err != nil {
		t.Errorf("Resume with the same settings: %v", err)
	}
}
