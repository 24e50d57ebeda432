package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/outfile"
)

// TestRunCommand: the dispatcher maps a command's outcome to the exit status, turns a panic
// into an error, and gives up on a command that ignores cancellation within interruptGrace,
// removing the output it was writing.
func TestRunCommand(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ebnn")
	// stuck stages an output, writes part of it, then works on without looking at ctx.
	stuck := func(ctx context.Context, _ []string, stdout, _ io.Writer) error {
		st, err := outfile.Stage(ctx, out)
		if err != nil {
			return err
		}
		if err := os.WriteFile(st.Path(), []byte("partial"), 0o644); err != nil {
			return err
		}
		time.Sleep(3 * time.Second)
		io.WriteString(stdout, "late output\n")
		return st.Commit(context.Background())
	}
	tests := []struct {
		name     string
		run      func(context.Context, []string, io.Writer, io.Writer) error
		cancel   bool
		wantCode int
		wantErr  string
		maxTime  time.Duration
	}{
		{"ok", func(context.Context, []string, io.Writer, io.Writer) error { return nil }, false, exitOK, "", time.Second},
		{"error", func(context.Context, []string, io.Writer, io.Writer) error { return errors.New("boom") }, false, exitError, "boom", time.Second},
		{"usage", func(context.Context, []string, io.Writer, io.Writer) error { return usagef("bad") }, false, exitUsage, "bad", time.Second},
		{"panic", func(context.Context, []string, io.Writer, io.Writer) error { panic("kaput") }, false, exitError, "internal error: kaput", time.Second},
		{"stops on cancel", func(ctx context.Context, _ []string, _, _ io.Writer) error {
			<-ctx.Done()
			return ctx.Err()
		}, true, exitInterrupted, "interrupted", time.Second},
		{"ignores cancel", stuck, true, exitInterrupted, "interrupted", time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				time.AfterFunc(100*time.Millisecond, cancel)
			}
			var stdout, stderr bytes.Buffer
			start := time.Now()
			code := runCommand(ctx, command{name: "x", run: tc.run}, nil, &stdout, &stderr)
			if el := time.Since(start); el > tc.maxTime {
				t.Errorf("took %v, want at most %v", el, tc.maxTime)
			}
			if code != tc.wantCode || !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr.String(), tc.wantCode, tc.wantErr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
	// The abandoned command wakes up later: its output is dropped and it cannot commit.
	time.Sleep(3500 * time.Millisecond)
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("%s was written by an abandoned command", out)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestRunCommandGraceAndJoinedErrors: a command with a grace of its own (train, serve) says on
// the interrupt how long it may take and that a second interrupt stops it at once, and gets that
// long; an error joined to the cancellation (train's checkpoint that failed to write) is
// reported, not hidden behind "interrupted".
func TestRunCommandGraceAndJoinedErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	time.AfterFunc(50*time.Millisecond, cancel)
	slow := command{name: "slow", grace: 5 * time.Second, run: func(ctx context.Context, _ []string, _, _ io.Writer) error {
		<-ctx.Done()
		time.Sleep(700 * time.Millisecond) // beyond interruptGrace, within the command's own
		return errors.Join(ctx.Err(), errors.New("checkpoint x.last.ebnn: is a directory"))
	}}
	var stdout, stderr bytes.Buffer
	code := runCommand(ctx, slow, nil, &stdout, &stderr)
	if code != exitInterrupted {
		t.Errorf("exit %d, want %d", code, exitInterrupted)
	}
	for _, want := range []string{"stopping cleanly, at most 5s; interrupt again to stop at once", "interrupted (context canceled): checkpoint x.last.ebnn: is a directory"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q does not say %q", stderr.String(), want)
		}
	}
}

// TestNotCanceled: what an error says besides the cancellation.
func TestNotCanceled(t *testing.T) {
	disk := errors.New("disk full")
	for _, tc := range []struct {
		err  error
		want string
	}{
		{nil, ""},
		{context.Canceled, ""},
		{fmt.Errorf("train: %w", context.Canceled), ""},
		{errors.Join(context.Canceled, disk), "disk full"},
		{errors.Join(context.Canceled, errors.Join(context.Canceled, disk)), "disk full"},
		{disk, "disk full"},
	} {
		got := ""
		if e := notCanceled(tc.err); e != nil {
			got = e.Error()
		}
		if got != tc.want {
			t.Errorf("notCanceled(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestRunCommandHardStop: a second interrupt (the channel main closes) stops a command inside
// its own grace at once: its output in flight is removed and the status is 130.
func TestRunCommandHardStop(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "out.ebnn")
	staged := make(chan struct{})
	stuck := command{name: "stuck", grace: time.Minute, run: func(ctx context.Context, _ []string, _, _ io.Writer) error {
		st, err := outfile.Stage(ctx, out)
		if err != nil {
			return err
		}
		if err := os.WriteFile(st.Path(), []byte("partial"), 0o644); err != nil {
			return err
		}
		close(staged)
		time.Sleep(3 * time.Second) // ignores the cancellation
		return st.Commit(context.Background())
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hard := make(chan struct{})
	go func() {
		<-staged
		cancel()
		time.Sleep(50 * time.Millisecond)
		close(hard)
	}()
	var stdout, stderr bytes.Buffer
	start := time.Now()
	code := runCommand(withHardStop(ctx, hard), stuck, nil, &stdout, &stderr)
	if el := time.Since(start); el > 2*time.Second {
		t.Errorf("took %v: the second interrupt did not stop it at once", el)
	}
	if code != exitInterrupted || !strings.Contains(stderr.String(), "interrupted again: stopped at once") {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
	time.Sleep(3500 * time.Millisecond) // the abandoned command wakes up: it cannot commit
	if _, err := os.Lstat(out); err == nil {
		t.Errorf("%s was written by an abandoned command", out)
	}
}
