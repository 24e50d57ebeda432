//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSignalStopsCommands starts the built binary on long runs of predict, convert (its
// --validate step), bench and train, sends SIGINT or SIGTERM, and checks that it exits within a
// second with status 130, leaving no partial output and no temporary file (train: the
// checkpoint it writes on interrupt is complete).
func TestSignalStopsCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := testBinary(t)
	d, fixture := mlpFFGUFixture(t)
	model := convertFixture(t, "mlp_ffgu")
	tests := []struct {
		name string
		sig  syscall.Signal
		// args returns the command line writing into dir.
		args func(dir string) []string
		// absent must not exist afterwards; present must (complete, non-empty).
		absent, present []string
		// beforeSignal, if set, runs just before the signal; the output must say wantStdout and
		// wantStderr.
		beforeSignal           func(dir string)
		wantStdout, wantStderr string
	}{
		{name: "predict SIGINT", sig: syscall.SIGINT, args: func(string) []string {
			return []string{"predict", "--model", model, "--input", filepath.Join(d, "reference.safetensors"), "--samples", "65536", "--strategy", "weight"}
		}},
		{name: "convert --validate SIGINT", sig: syscall.SIGINT, args: func(dir string) []string {
			return append([]string{"convert", "--out", filepath.Join(dir, "m.ebnn"), "--validate",
				filepath.Join(d, "reference.safetensors"), "--samples", "100000"}, fixture...)
		}, absent: []string{"m.ebnn"}},
		{name: "convert --validate SIGTERM", sig: syscall.SIGTERM, args: func(dir string) []string {
			return append([]string{"convert", "--out", filepath.Join(dir, "m.ebnn"), "--validate",
				filepath.Join(d, "reference.safetensors"), "--samples", "100000"}, fixture...)
		}, absent: []string{"m.ebnn"}},
		{name: "bench SIGINT", sig: syscall.SIGINT, args: func(string) []string {
			return []string{"bench", "--model", model, "--samples", "4096", "--min-time", "1h"}
		}},
		{name: "bench --count SIGTERM", sig: syscall.SIGTERM, args: func(string) []string {
			return []string{"bench", "--model", model, "--samples", "4096", "--count", "1000000000"}
		}},
		{name: "train SIGINT", sig: syscall.SIGINT, args: func(dir string) []string {
			trainInputs(t, dir)
			return []string{"train", "--config", filepath.Join(dir, "cfg.json"), "--data", "csv:" + filepath.Join(dir, "data.csv"),
				"--epochs", "1000000", "--quiet", "--out", filepath.Join(dir, "m.ebnn")}
		}, absent: []string{"m.ebnn", "m.model.ebnn"}, present: []string{"m.last.ebnn", "m.metrics.jsonl"},
			wantStdout: "interrupted: checkpoint written to "},
		// The checkpoint cannot be written (its path became a directory): the run says so and
		// names the error, instead of "checkpoint written" (session 35's review).
		{name: "train SIGINT, checkpoint not writable", sig: syscall.SIGINT, args: func(dir string) []string {
			trainInputs(t, dir)
			return []string{"train", "--config", filepath.Join(dir, "cfg.json"), "--data", "csv:" + filepath.Join(dir, "data.csv"),
				"--epochs", "1000000", "--checkpoint-every", "0", "--quiet", "--out", filepath.Join(dir, "m.ebnn")}
		}, beforeSignal: func(dir string) {
			if err := os.Mkdir(filepath.Join(dir, "m.last.ebnn"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, absent: []string{"m.ebnn", "m.model.ebnn"}, wantStdout: "interrupted: no checkpoint written", wantStderr: "m.last.ebnn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := tc.args(dir)
			skipAbsent(t, args[0])
			cmd, stdout, stderr, exited := startRunning(t, bin, args...)
			if tc.beforeSignal != nil {
				tc.beforeSignal(dir)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			sent := time.Now()
			werr := waitExit(t, cmd, exited, tc.sig.String())
			// The commands give up 400 ms after the signal (main.go); the requirement is 1 s. The
			// bound is 3 s because a loaded 2-core CI machine running the other packages' tests
			// beside this one delays the child's exit itself (1.35 s was seen); a command that
			// ignored the signal would still be caught (the 5 s kill above, or this bound).
			if el := time.Since(sent); el > 3*time.Second {
				t.Errorf("exited %v after %v, want within 1 s (3 s allowed under load)", el, tc.sig)
			}
			var ee *exec.ExitError
			if !errors.As(werr, &ee) || ee.ExitCode() != exitInterrupted {
				t.Errorf("exit %v, want status %d\nstderr: %s", werr, exitInterrupted, stderr.String())
			}
			if !strings.Contains(stderr.String(), "interrupted") || !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr does not say interrupted (and %q): %s", tc.wantStderr, stderr.String())
			}
			if !strings.Contains(stdout.String(), tc.wantStdout) {
				t.Errorf("stdout does not say %q: %.2000s", tc.wantStdout, stdout.String())
			}
			ents, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range ents {
				if strings.Contains(e.Name(), ".tmp") {
					t.Errorf("temporary %s left behind", e.Name())
				}
			}
			for _, f := range tc.absent {
				if _, err := os.Lstat(filepath.Join(dir, f)); err == nil {
					t.Errorf("%s was written by an interrupted run", f)
				}
			}
			for _, f := range tc.present {
				if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s: %v (size %v)", f, err, st)
				}
			}
		})
	}
}

// mlpFFGUFixture returns the absolute path of the mlp_ffgu fixture and convert's arguments for
// it (--checkpoint, --config, --arch).
func mlpFFGUFixture(t *testing.T) (string, []string) {
	t.Helper()
	d, err := filepath.Abs(filepath.Join(fixtureRoot, "mlp_ffgu"))
	if err != nil {
		t.Fatal(err)
	}
	return d, []string{"--checkpoint", filepath.Join(d, "state_dict.pt"), "--config", filepath.Join(d, "inference_config.json"),
		"--arch", filepath.Join(d, "model.txt")}
}

// startRunning starts bin with args, keeping its stdout and stderr, and lets it run 1.5 s; the
// test fails if it has exited by then. exited receives cmd.Wait's result.
func startRunning(t *testing.T, bin string, args ...string) (cmd *exec.Cmd, stdout, stderr *bytes.Buffer, exited chan error) {
	t.Helper()
	cmd = exec.Command(bin, args...)
	stdout, stderr = new(bytes.Buffer), new(bytes.Buffer)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited = make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("exited before the signal: %v\nstdout: %.500s\nstderr: %s", err, stdout.String(), stderr.String())
	case <-time.After(1500 * time.Millisecond):
	}
	return cmd, stdout, stderr, exited
}

// waitExit waits for the process started by startRunning to exit and returns cmd.Wait's result;
// if it is still running 5 s later (after what), it is killed and the test fails.
func waitExit(t *testing.T, cmd *exec.Cmd, exited chan error, what string) error {
	t.Helper()
	select {
	case err := <-exited:
		return err
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatalf("still running 5 s after %s", what)
		return nil
	}
}

// TestSecondSignalLeavesNoStaging: a second Ctrl-C stops a command at once — inside the grace
// the first one gives — and, as the first one would, leaves no partial output: the dispatcher
// abandons the command and removes its staging directory (convert --validate's staged model),
// and the exit status is 130. (Taking the signal's default action had killed the process with
// the staging directory left.) EDGEBNN_BIN names a built binary (else it is built here).
func TestSecondSignalLeavesNoStaging(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	skipAbsent(t, "convert")
	bin := testBinary(t)
	d, fixture := mlpFFGUFixture(t)
	dir := t.TempDir()
	cmd, _, stderr, exited := startRunning(t, bin, append([]string{"convert", "--out", filepath.Join(dir, "m.ebnn"), "--validate",
		filepath.Join(d, "reference.safetensors"), "--samples", "100000"}, fixture...)...)
	staged := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".m.ebnn.tmp-*"))
		return m
	}
	if len(staged()) == 0 {
		t.Skip("convert is not validating yet (no staged output): too slow a machine for this test")
	}
	// Ctrl-C, Ctrl-C: the second 100 ms after the first, well inside the 400 ms grace.
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	_ = cmd.Process.Signal(syscall.SIGINT)
	waitExit(t, cmd, exited, "the signals")
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Errorf("exit status %d (%v), want %d", code, cmd.ProcessState, exitInterrupted)
	}
	if left := staged(); len(left) > 0 {
		var names []string
		for _, p := range left {
			names = append(names, filepath.Base(p))
		}
		t.Errorf("a double Ctrl-C left the staging directory %s (state %v)\nstderr: %s",
			strings.Join(names, ", "), cmd.ProcessState, stderr.String())
	}
}
