package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// divergingConfig is toy1d regression on arch, trained by SGD (momentum 0.9) at learning rate
// lr: large enough that the parameters pass ±MaxInitFromValue within a few steps while the loss
// stays finite (the values are finite float32s).
func divergingConfig(t *testing.T, arch string, lr float64, epochs, batch int) Config {
	c := DefaultConfig()
	c.Arch, c.Data, c.Task, c.Posterior = arch, "toy1d", "regression", "deterministic"
	c.Optimizer, c.LR, c.Epochs, c.BatchSize = "sgd", lr, epochs, batch
	c.CheckpointMinSteps = 0 // a per-epoch checkpoint after every epoch
	c.Out = filepath.Join(t.TempDir(), "m.ebnn")
	return c
}

// checkRangeError fails unless err wraps ErrParamRange and says where, which tensor, and to
// lower lr.
func checkRangeError(t *testing.T, err error, c Config, where string) {
	t.Helper()
	if err == nil {
		t.Fatalf("lr %g trained to the end", c.LR)
	}
	if !errors.Is(err, ErrParamRange) {
		t.Errorf("error %q does not wrap ErrParamRange", err)
	}
	testutil.ErrorContains(t, err, where, `tensor "`, "outside ±1e+15", fmt.Sprintf("lower lr (now %g)", c.LR), "nothing is written")
}

// checkWritten fails unless, of c's checkpoint, model and per-epoch checkpoint, only the last
// exists (when lastEpochs > 0) and is the resumable state after lastEpochs epochs.
func checkWritten(t *testing.T, tr *Trainer, lastEpochs int) {
	t.Helper()
	for _, p := range []string{tr.Config.Out, tr.ModelPath()} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written (stat: %v)", filepath.Base(p), err)
		}
	}
	last := tr.EpochCheckpointPath()
	if lastEpochs == 0 {
		if _, err := os.Stat(last); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s was written (stat: %v)", filepath.Base(last), err)
		}
		return
	}
	s, err := ReadState(last)
	if err != nil {
		t.Fatalf("the earlier per-epoch checkpoint: %v", err)
	}
	if s.Epoch != lastEpochs || s.Batch != 0 {
		t.Errorf("%s holds epoch %d (minibatch %d), want the end of epoch %d", filepath.Base(last), s.Epoch, s.Batch, lastEpochs)
	}
	if _, err := Resume(last, nil); err != nil {
		t.Errorf("the per-epoch checkpoint left does not resume: %v", err)
	}
}

// TestRunRefusesOutOfRangeParams: a learning rate that drives the parameters beyond
// ±MaxInitFromValue (finite, and the loss too) stops the run at the end of that epoch with an
// error naming the tensor, the epoch and step, and lr, and writes no checkpoint or model for
// that state; an earlier per-epoch checkpoint stays. The trainer used to write the final
// checkpoint and model (values of 4e21), which its own --resume then refused: "tensor
// \"1.weight\": value 2 is 4.3830926e+21, outside ±1e+15".
func TestRunRefusesOutOfRangeParams(t *testing.T) {
	for _, tc := range []struct {
		name          string
		arch          string
		lr            float64
		epochs, batch int
		where         string
		lastEpochs    int // the per-epoch checkpoint left: after this many epochs (0: none)
	}{
		{"the only epoch", "mlp:1-16-1", 1e6, 1, 50, "epoch 1 step 2", 0},
		{"the last epoch, after good ones", "mlp:1-1", 1000, 3, 50, "epoch 3 step 6", 2},
		{"a middle epoch", "mlp:1-16-1", 300, 5, 50, "epoch 3 step 6", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := divergingConfig(t, tc.arch, tc.lr, tc.epochs, tc.batch)
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			err = tr.Run(context.Background(), Hooks{})
			checkRangeError(t, err, c, "train: "+tc.where+": ")
			checkWritten(t, tr, tc.lastEpochs)
		})
	}
}

// TestInterruptRefusesOutOfRangeParams: an interrupt (Ctrl-C) just after an update that drove
// the parameters beyond ±MaxInitFromValue writes no checkpoint of that state — the per-epoch
// checkpoint of an earlier epoch stays as it was, byte for byte — and the run's error joins the
// interrupt to one naming the checkpoint not written, the tensor, the epoch and step, and lr.
// The interrupt save used to write the values (5e22), which --resume then refused.
func TestInterruptRefusesOutOfRangeParams(t *testing.T) {
	for _, tc := range []struct {
		name       string
		arch       string
		lr         float64
		posterior  string
		at         int64 // the step after which the run is interrupted
		where      string
		lastEpochs int
	}{
		{"first epoch", "mlp:1-16-1", 1e6, "deterministic", 2, "epoch 1 step 2", 0},
		{"first epoch, ensemble_w", "mlp:1-16-1", 1e6, "ensemble_w", 2, "epoch 1 step 2", 0},
		{"first epoch, fa_em", "mlp:1-16-1", 1e6, "fa_em", 2, "epoch 1 step 2", 0},
		{"second epoch", "mlp:1-16-1", 300, "deterministic", 6, "epoch 2 step 6", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := divergingConfig(t, tc.arch, tc.lr, 3, 25)
			c.Posterior, c.EnsembleSize = tc.posterior, 2
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			last := tr.EpochCheckpointPath()
			var good []byte // the per-epoch checkpoint as written
			var wrote []string
			err = tr.Run(ctx, Hooks{
				Step: func(s StepInfo) {
					if s.Step == tc.at {
						cancel()
					}
				},
				Checkpoint: func(p string) {
					wrote = append(wrote, p)
					if ctx.Err() == nil {
						var rerr error
						if good, rerr = os.ReadFile(p); rerr != nil {
							t.Error(rerr)
						}
					}
				},
			})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Run = %v, want the interrupt", err)
			}
			checkRangeError(t, err, c, "checkpoint "+last+" not written: train: "+tc.where+": ")
			if len(wrote) != tc.lastEpochs {
				t.Errorf("checkpoints reported written: %v, want %d (the earlier epochs')", wrote, tc.lastEpochs)
			}
			checkWritten(t, tr, tc.lastEpochs)
			if tc.lastEpochs > 0 {
				if b, err := os.ReadFile(last); err != nil || !bytes.Equal(b, good) {
					t.Errorf("the per-epoch checkpoint changed on the interrupt (read: %v)", err)
				}
			}
		})
	}
}

// TestSaveRefusesOutOfRangeState: SaveCheckpoint and SaveModel refuse, writing nothing, a state
// holding a value Resume refuses — a parameter NaN, ±Inf or beyond ±MaxInitFromValue, an
// optimizer state value NaN or ±Inf or (SGD momentum) beyond ±optim.MaxMomentum, a vifa model
// tensor overflowing float32 — naming it; a value at the bound is written.
func TestSaveRefusesOutOfRangeState(t *testing.T) {
	param := func(v float32) func(*Trainer) {
		return func(tr *Trainer) { tr.Nets[0].Params()[0].Value[0] = v }
	}
	buffer := func(prefix string, v float32) func(*Trainer) {
		return func(tr *Trainer) {
			for name, buf := range tr.opt.SharedState().Buffers { // the optimizer's own
				if strings.HasPrefix(name, prefix) {
					buf[0] = v
					return
				}
			}
			t.Fatalf("no optimizer buffer %s…", prefix)
		}
	}
	inf := float32(math.Inf(1))
	for _, tc := range []struct {
		name      string
		posterior string
		optimizer string
		edit      func(*Trainer)
		model     bool // SaveModel refuses it too (a model has no optimizer state)
		want      string
	}{
		{"parameter beyond 1e15", "deterministic", "adam", param(-2e15), true, "value 0 is -2e+15, outside ±1e+15"},
		{"parameter NaN", "deterministic", "adam", param(float32(math.NaN())), true, "value 0 is NaN"},
		{"parameter +Inf", "ffg_w", "adam", param(inf), true, "value 0 is +Inf"},
		{"Adam moment +Inf", "deterministic", "adam", buffer("exp_avg_sq/", inf), false, `optimizer state "optim/exp_avg_sq/`},
		{"momentum beyond 1e15", "deterministic", "sgd", buffer("momentum_buffer/", 2e15), false, "value 0 is 2e+15, outside ±1e+15"},
		{"vifa mean overflowing float32", "vifa", "adam", func(tr *Trainer) {
			s, err := tr.fa.vifa.SharedState()
			if err != nil {
				t.Fatal(err)
			}
			s.Floats["c"][0] = 1e300
		}, true, `tensor "fa.mean": value 0 is +Inf`},
		{"parameter at the bound", "deterministic", "sgd", param(-1e15), false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := toyConfig(t, tc.posterior, "")
			if tc.posterior == "vifa" {
				c = faConfig(t, tc.posterior)
			}
			c.Epochs, c.Optimizer = 1, tc.optimizer
			tr := trainRun(t, c)
			tc.edit(tr)
			dir := t.TempDir()
			for _, save := range []struct {
				name string
				fn   func(string) error
				bad  bool
			}{
				{"checkpoint", tr.SaveCheckpoint, tc.want != ""},
				{"model", tr.SaveModel, tc.model},
			} {
				path := filepath.Join(dir, save.name+".ebnn")
				err := save.fn(path)
				if !save.bad {
					if err != nil {
						t.Errorf("Save%s: %v", save.name, err)
					}
					continue
				}
				if !errors.Is(err, ErrParamRange) {
					t.Errorf("Save%s = %v, want an error wrapping ErrParamRange", save.name, err)
				} else if w := "checkpoint " + path + " not written: train: epoch 1 step "; !strings.HasPrefix(err.Error(), w) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("Save%s = %q, want %q… saying %q", save.name, err, w, tc.want)
				}
				if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("Save%s wrote %s (stat: %v)", save.name, path, err)
				}
			}
		})
	}
}
