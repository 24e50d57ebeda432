//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondSignalLeavesNoStaging: a second Ctrl-C stops a command at once — inside the grace
// the first one gives — and, as the first one would, leaves no partial output: the dispatcher
// abandons the command and removes its staging directory (convert --validate's staged model),
// and the exit status is 130. (Taking the signal's default action had killed the process with
// the staging directory left.) EDGEBNN_BIN names a built binary (else it is built here).
func TestSecondSignalLeavesNoStaging(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := os.Getenv("EDGEBNN_BIN")
	if bin == "" {
		bin = filepath.Join(t.TempDir(), "edgebnn")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
	}
	d, err := filepath.Abs(filepath.Join(fixtureRoot, "mlp_ffgu"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cmd := exec.Command(bin, "convert", "--out", filepath.Join(dir, "m.ebnn"), "--validate", filepath.Join(d, "reference.safetensors"),
		"--samples", "100000", "--checkpoint", filepath.Join(d, "state_dict.pt"), "--config", filepath.Join(d, "inference_config.json"),
		"--arch", filepath.Join(d, "model.txt"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		t.Fatalf("exited before the signal: %v\n%s", err, stderr.String())
	case <-time.After(1500 * time.Millisecond):
	}
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
	select {
	case <-exited:
	case <-time.After(5 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		t.Fatal("still running 5 s after the signals")
	}
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
