// Command edgebnn is the single edgebnn binary: it converts and inspects
// Bayesian neural network models, runs predictions with uncertainty on small
// ARM boards, trains on the host, and cross-builds itself for a board.
//
// Usage:
//
//	edgebnn <command> [flags] [arguments]
//
// Run "edgebnn help" for the list of commands and "edgebnn help <command>"
// (or "edgebnn <command> -h") for one command's flags. Exit status: 0 on
// success, 1 when the command fails, 2 on a usage error, 130 when SIGINT or
// SIGTERM stopped it (within a second, leaving no partial output).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/edgebnn/edgebnn/internal/outfile"
)

func main() {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	ctx, cancel := context.WithCancelCause(context.Background())
	hard := make(chan struct{})
	go func() {
		// The first signal asks the command to stop (train writes its checkpoint, serve
		// drains); a second one stops it at once (runCommand abandons it, its outputs in
		// flight removed).
		s := <-sigs
		cancel(fmt.Errorf("%v signal received", s))
		<-sigs
		close(hard)
	}()
	code := runContext(withHardStop(ctx, hard), os.Args[1:], os.Stdout, os.Stderr)
	signal.Stop(sigs)
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	// exitInterrupted is the status after SIGINT or SIGTERM (128 + SIGINT, as shells report it).
	exitInterrupted = 130
)

// interruptGrace is how long a command may take, once its context is
// cancelled, to stop by itself (and, for train, write its checkpoint) before
// the dispatcher gives up on it, removes its outputs in flight and returns.
const interruptGrace = 400 * time.Millisecond

// hardStopKey is the context key of the channel a second interrupt closes.
type hardStopKey struct{}

// withHardStop returns ctx carrying hard, which main closes on a second interrupt: runCommand
// then stops the command at once, without waiting for its grace.
func withHardStop(ctx context.Context, hard <-chan struct{}) context.Context {
	return context.WithValue(ctx, hardStopKey{}, hard)
}

// hardStop returns the channel of withHardStop (nil, which never fires, without one).
func hardStop(ctx context.Context) <-chan struct{} {
	h, _ := ctx.Value(hardStopKey{}).(<-chan struct{})
	return h
}

// run dispatches the command line args (without the program name) and
// returns the process exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context that cancels long-running commands.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		printOverview(stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		return runHelp(ctx, rest, stdout, stderr)
	case "-version", "--version":
		name = "version"
	}
	c, ok := lookupCommand(name)
	if where, absent := absentCommands[name]; !ok && absent {
		fmt.Fprintf(stderr, "edgebnn: %s is not in this build; it is in %s.\n", name, where)
		return exitUsage
	}
	if !ok {
		fmt.Fprintf(stderr, "edgebnn: unknown command %q; run 'edgebnn help' for the list of commands.\n", name)
		return exitUsage
	}
	return runCommand(ctx, c, rest, stdout, stderr)
}

// runCommand runs c in its own goroutine so that a cancelled ctx (SIGINT,
// SIGTERM) stops it within interruptGrace even when it is busy in code that
// does not look at ctx: then the outputs it is still writing are removed
// (outfile.Tracker.Abandon), its further output to stdout and stderr is
// dropped, and the status is exitInterrupted. A panic becomes an error.
func runCommand(ctx context.Context, c command, args []string, stdout, stderr io.Writer) int {
	tr := &outfile.Tracker{}
	grace := new(atomic.Int64)
	grace.Store(int64(c.grace))
	cctx := context.WithValue(outfile.WithTracker(ctx, tr), graceKey{}, grace)
	out, errOut := &gateWriter{w: stdout}, &gateWriter{w: stderr}
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("internal error: %v", r)
			}
		}()
		done <- c.run(cctx, args, out, errOut)
	}()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		wait := interruptGrace
		if g := time.Duration(grace.Load()); g > 0 {
			wait = g
			fmt.Fprintf(errOut, "edgebnn %s: interrupted (%v): stopping cleanly, at most %v; interrupt again to stop at once\n",
				c.name, context.Cause(ctx), wait)
		}
		timer := time.NewTimer(wait)
		defer timer.Stop()
		how := ""
		select {
		case err = <-done:
		case <-timer.C:
			how = "stopped"
		case <-hardStop(ctx):
			how = "interrupted again: stopped at once"
		}
		if how != "" {
			out.close()
			errOut.close()
			aerr := tr.Abandon()
			fmt.Fprintf(stderr, "edgebnn %s: interrupted (%v); %s, no partial output left\n", c.name, context.Cause(ctx), how)
			if aerr != nil {
				fmt.Fprintf(stderr, "edgebnn %s: %v\n", c.name, aerr)
			}
			return exitInterrupted
		}
	}
	if ctx.Err() != nil {
		_ = tr.Abandon()
		if err := notCanceled(err); err == nil {
			fmt.Fprintf(stderr, "edgebnn %s: interrupted (%v)\n", c.name, context.Cause(ctx))
		} else {
			fmt.Fprintf(stderr, "edgebnn %s: interrupted (%v): %v\n", c.name, context.Cause(ctx), err)
		}
		return exitInterrupted
	}
	return report(c.name, err, stderr)
}

// notCanceled returns what err says besides the cancellation: nil for nil or a cancellation,
// the other errors of an errors.Join holding one (a checkpoint that failed to write on the
// interrupt), else err.
func notCanceled(err error) error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var rest []error
		for _, e := range j.Unwrap() {
			if e = notCanceled(e); e != nil {
				rest = append(rest, e)
			}
		}
		return errors.Join(rest...)
	}
	if inner := errors.Unwrap(err); inner != nil {
		// A wrapped one ("mixture member 0: %w"): err as it is if it holds anything more.
		if notCanceled(inner) == nil {
			return nil
		}
		return err
	}
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// gateWriter passes writes through until close; afterwards it drops them, so
// an abandoned command cannot write after the dispatcher has returned.
type gateWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// errGateClosed is what writes return after close.
var errGateClosed = errors.New("output closed: command interrupted")

// Write writes p unless the gate is closed.
func (g *gateWriter) Write(p []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return 0, errGateClosed
	}
	return g.w.Write(p)
}

// close drops every later write.
func (g *gateWriter) close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// runHelp implements "edgebnn help [command]".
func runHelp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 0:
		printOverview(stdout)
		return exitOK
	case len(args) > 1:
		fmt.Fprintf(stderr, "edgebnn help: expected at most one command name, got %d; usage: edgebnn help [command]\n", len(args))
		return exitUsage
	}
	c, ok := lookupCommand(args[0])
	if where, absent := absentCommands[args[0]]; !ok && absent {
		fmt.Fprintf(stderr, "edgebnn help: %s is not in this build; it is in %s.\n", args[0], where)
		return exitUsage
	}
	if !ok {
		fmt.Fprintf(stderr, "edgebnn help: unknown command %q; run 'edgebnn help' for the list of commands.\n", args[0])
		return exitUsage
	}
	return report(c.name, c.run(ctx, []string{"-h"}, stdout, stderr), stderr)
}

// report prints err (if any) as one line on stderr and maps it to an exit status.
func report(name string, err error, stderr io.Writer) int {
	var ue *usageError
	switch {
	case err == nil, errors.Is(err, errHelpShown):
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "edgebnn %s: %v\nRun 'edgebnn help %s' for usage.\n", name, err, name)
		return exitUsage
	default:
		fmt.Fprintf(stderr, "edgebnn %s: %v\n", name, err)
		return exitError
	}
}

// printOverview writes the top-level help: what edgebnn is and its commands.
func printOverview(w io.Writer) {
	fmt.Fprint(w, `edgebnn runs Bayesian neural networks (inducing-weight and factor-analysis
posteriors) on small ARM boards: every prediction comes with how far to trust it.

Usage: edgebnn <command> [flags] [arguments]

Commands:
`)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, c := range commandTable() {
		fmt.Fprintf(tw, "  %s\t%s\n", c.name, c.summary)
	}
	tw.Flush()
	fmt.Fprint(w, `
Run 'edgebnn help <command>' or 'edgebnn <command> -h' for a command's flags.
Exit status: 0 success, 1 error, 2 usage error, 130 interrupted (SIGINT, SIGTERM).
`)
}
