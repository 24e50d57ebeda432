//go:build !device

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/train"
)

// tinyTrainCheckpoint trains the tiny CSV regression of trainInputs for 2 epochs and returns the
// directory and the final checkpoint.
func tinyTrainCheckpoint(t *testing.T, extra ...string) (dir, out string) {
	t.Helper()
	dir = t.TempDir()
	trainInputs(t, dir)
	out = filepath.Join(dir, "m.ebnn")
	args := append([]string{"train", "--config", filepath.Join(dir, "cfg.json"), "--data", "csv:" + filepath.Join(dir, "data.csv"),
		"--epochs", "2", "--quiet", "--no-plots", "--out", out}, extra...)
	runOK(t, args...)
	return dir, out
}

// TestResumeBadCheckpointConfig: a checkpoint whose own recorded setting is out of its domain
// (edited, corrupted, or valid under an older release's rules) is a bad input, not a bad command
// line: exit 1 with an error naming the checkpoint, not a usage error (session 35's review).
func TestResumeBadCheckpointConfig(t *testing.T) {
	dir, out := tinyTrainCheckpoint(t)
	bad := filepath.Join(dir, "bad.ebnn")
	modeltest.Rewrite(t, out, bad, train.TrainBlob, nil, func(b []byte) []byte {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		m["config"].(map[string]any)["lr_schedule"] = "linear" // not step or cosine
		nb, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return nb
	})
	code, stdout, stderr := runCLI("train", "--resume", bad, "--epochs", "3", "--out", filepath.Join(dir, "r.ebnn"), "--quiet", "--no-plots")
	if code != exitError || !strings.Contains(stderr, bad) {
		t.Errorf("train --resume of a checkpoint whose recorded lr_schedule is invalid (no bad flag given): exit %d, want %d and an error naming %s\nstdout: %s\nstderr: %s",
			code, exitError, bad, stdout, stderr)
	}
}

// TestResumeRefusesCSVTarget: csv_target chooses the training data as much as data does (the
// same CSV with another target column is another problem, of the same sizes): --resume refuses it.
func TestResumeRefusesCSVTarget(t *testing.T) {
	dir, out := tinyTrainCheckpoint(t)
	code, stdout, stderr := runCLI("train", "--resume", out, "--csv-target", "x", "--epochs", "3",
		"--out", filepath.Join(dir, "r.ebnn"), "--quiet", "--no-plots")
	if code != exitUsage {
		t.Errorf("train --resume --csv-target x (the data's other column): exit %d, want %d (the checkpoint's training data)\nstdout: %s\nstderr: %s",
			code, exitUsage, stdout, stderr)
	}
}

// TestNotCanceledThroughWrap: a failed interrupt checkpoint joined to the cancellation and then
// wrapped (trainMixture's "mixture member %d: %w") is still reported, not hidden behind
// "interrupted".
func TestNotCanceledThroughWrap(t *testing.T) {
	disk := errors.New("checkpoint m.member0.last.ebnn: disk full")
	err := fmt.Errorf("mixture member %d: %w", 0, errors.Join(context.Canceled, disk))
	if got := notCanceled(err); got == nil || !strings.Contains(got.Error(), "disk full") {
		t.Errorf("notCanceled(%q) = %v, want the write error kept", err, got)
	}
}

// cancelInGGNCtx is a context that becomes cancelled (for good) the first time its Err is asked
// from inside train.GGNDiagonal: a Ctrl-C that lands while the post-hoc Laplace fit runs, after
// the MAP epochs and their per-epoch checkpoint.
type cancelInGGNCtx struct {
	context.Context
	mu       sync.Mutex
	canceled bool
}

func (c *cancelInGGNCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.canceled {
		pc := make([]uintptr, 32)
		frames := runtime.CallersFrames(pc[:runtime.Callers(2, pc)])
		for {
			f, more := frames.Next()
			if strings.HasSuffix(f.Function, "train.GGNDiagonal") {
				c.canceled = true
				break
			}
			if !more {
				break
			}
		}
	}
	if c.canceled {
		return context.Canceled
	}
	return nil
}

// TestLaplaceFitInterruptNamesMAPCheckpoint: posterior laplace with epochs > 0 writes the MAP
// network's per-epoch checkpoint (<stem>.last.ebnn) after its last epoch, then fits; interrupted
// during the fit, train names that checkpoint — the one Resume's own error tells users to resume
// — instead of saying that no checkpoint was written.
func TestLaplaceFitInterruptNamesMAPCheckpoint(t *testing.T) {
	c := train.DefaultConfig()
	c.Arch, c.Data, c.Task, c.NoisePrecision = "mlp:1-8-1:tanh", "toy1d", "regression", 100
	c.Posterior, c.Epochs, c.BatchSize, c.LR = "laplace", 2, 25, 1e-2
	c.Out = filepath.Join(t.TempDir(), "lap.ebnn")
	tr, err := train.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := &cancelInGGNCtx{Context: context.Background()}
	var stdout, stderr bytes.Buffer
	err = trainLoop(ctx, tr, true, false, &stdout, &stderr)
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("trainLoop = %v, want the interrupt (in the Laplace fit)", err)
	}
	last := tr.EpochCheckpointPath()
	if _, serr := os.Stat(last); serr != nil {
		t.Fatalf("the MAP checkpoint %s is not there: %v", last, serr)
	}
	if _, rerr := train.Resume(last, nil); rerr != nil {
		t.Fatalf("the MAP checkpoint does not resume: %v", rerr)
	}
	if strings.Contains(stdout.String(), "no checkpoint written") || !strings.Contains(stdout.String(), last) {
		t.Errorf("interrupted in the Laplace fit with the resumable MAP checkpoint %s on disk, stdout says:\n%s", last, stdout.String())
	}
}
