//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"regexp"
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
// drains on cancellation (SIGINT/SIGTERM in main), exiting with 130.
func TestServeCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- runContext(ctx, []string{"serve", "--model", "mnist=demo/model.ebnn", "--addr", "127.0.0.1:0", "--samples", "8"}, &stdout, &stderr)
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
	if !strings.Contains(stderr.String(), "drained; stopped") {
		t.Fatalf("stderr:\n%s", stderr.String())
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
