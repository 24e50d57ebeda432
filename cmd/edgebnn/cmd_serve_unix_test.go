//go:build unix && !noserve

package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for a command writing while the test reads.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitFor polls buf until re matches, and returns the submatches.
func waitFor(t *testing.T, buf *lockedBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if m := re.FindStringSubmatch(buf.String()); m != nil {
			return m
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no %v in the log:\n%s", re, buf.String())
	return nil
}

// TestServeCommand runs `edgebnn serve` on a free port: it predicts, reloads on SIGHUP and
// drains on cancellation (SIGINT/SIGTERM in main), exiting with 130; the interruption message
// gives the time its --drain-timeout allows (plus drainMargin), not the longest drain allowed.
func TestServeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"serve", "--model", "mnist=demo/model.ebnn", "--addr", "127.0.0.1:0", "--samples", "8",
			"--drain-timeout", "2s"}, &stdout, &stderr)
	}()
	url := "http://" + waitFor(t, &stderr, regexp.MustCompile(`serving on http://(\S+)`))[1]
	body := `{"instances": [[` + strings.TrimSuffix(strings.Repeat("0.5,", 784), ",") + `]]}`
	resp, err := http.Post(url+"/v1/models/mnist:predict", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"samples":8`)) {
		t.Fatalf("predict: %d %s", resp.StatusCode, b)
	}
	if err := syscall.Kill(syscall.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &stderr, regexp.MustCompile(`model "mnist": reloaded`))
	cancel()
	select {
	case code := <-done:
		if code != exitInterrupted {
			t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInterrupted, stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop")
	}
	if !strings.Contains(stderr.String(), "drained; stopped") || !strings.Contains(stderr.String(), "stopping cleanly, at most 7s;") {
		t.Fatalf("stderr:\n%s", stderr.String())
	}
}

// TestServeHangupWhileLoading: a SIGHUP that arrives while serve loads its models (a deploy
// script that has just replaced a file) neither kills the server — the signal's default action
// had, before serve caught it — nor is lost: the models reload once it serves. Two hundred
// models give the signal a loading phase to land in. EDGEBNN_BIN names a built binary.
func TestServeHangupWhileLoading(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	bin := testBinary(t)
	model, err := filepath.Abs("demo/model.ebnn")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--drain-timeout", "1s"}
	const n = 200
	for i := range n {
		args = append(args, "--model", fmt.Sprintf("m%d=%s", i, model))
	}
	cmd := exec.Command(bin, args...)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill() }()
	waitFor(t, &stderr, regexp.MustCompile(`model "m0": loaded`))
	if strings.Contains(stderr.String(), "serving on") {
		t.Skip("all models loaded before the signal could be sent: too fast a machine for this test")
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitFor(t, &stderr, regexp.MustCompile(`serving on`))
	waitFor(t, &stderr, regexp.MustCompile(`model "m`+strconv.Itoa(n-1)+`": reloaded`))
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, exited, "SIGTERM")
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted {
		t.Fatalf("exit status %d (%v), want %d; stderr:\n%s", code, cmd.ProcessState, exitInterrupted, stderr.String())
	}
}

func TestServeCommandUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve"},
		{"serve", "--model", "a:b=demo/model.ebnn"},
		{"serve", "--model", "demo/model.ebnn", "--strategy", "bogus"},
		{"serve", "--model", "demo/model.ebnn", "--addr", "nohost"},
		{"serve", "--model", "demo/model.ebnn", "--queue-timeout", "0s"},
		{"serve", "--model", "demo/model.ebnn", "--batch", "1000"},
	} {
		if code, _, stderr := runCLI(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, stderr)
		}
	}
	if code, stdout, _ := runCLI("serve", "-h"); code != exitOK || !strings.Contains(stdout, "--max-instances") {
		t.Errorf("serve -h: %d %s", code, stdout)
	}
}
