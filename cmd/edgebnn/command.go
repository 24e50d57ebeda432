package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// command is one subcommand of edgebnn.
//
// To add a subcommand NAME, create cmd_NAME.go defining nameUsage and runName, and add the row
//
//	{name: "NAME", summary: "...", usage: nameUsage, run: runName}
//
// to commandTable below (to hostCommands for a host-only command). runName should parse its
// arguments with newFlagSet and parseFlags (parseFlagsOnly when it takes no positional
// arguments), so that -h prints the usage text and bad flags become usage errors (exit status 2).
type command struct {
	// name is the word typed after "edgebnn".
	name string
	// summary is a one-line description for the command list.
	summary string
	// usage is the full help text: a "Usage:" line, a description, and
	// (printed automatically after it) the flag list.
	usage string
	// run executes the command with the arguments that follow its name.
	run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
	// grace is how long the command may take to stop once its context is cancelled (0:
	// interruptGrace). serve sets it above its longest drain, then (setGrace) above the drain
	// its flags ask for.
	grace time.Duration
}

// graceKey is the context key of the running command's grace (an *atomic.Int64 of
// nanoseconds, which runCommand reads when the context is cancelled).
type graceKey struct{}

// setGrace sets how long the running command may take to stop once ctx is cancelled, for a
// command whose grace depends on its flags (serve: its --drain-timeout). Outside runCommand it
// does nothing.
func setGrace(ctx context.Context, d time.Duration) {
	if g, ok := ctx.Value(graceKey{}).(*atomic.Int64); ok {
		g.Store(int64(d))
	}
}

// commandTable lists the subcommands in the order "edgebnn help" shows them.
func commandTable() []command {
	h := hostCommands()
	var cmds []command
	for _, c := range []command{
		{name: "demo", summary: "predict with uncertainty using a built-in Bayesian network", usage: demoUsage, run: runDemo},
		h.train,
		h.convert,
		{name: "inspect", summary: "list a model file's sections, tensors and checksums", usage: inspectUsage, run: runInspect},
		{name: "predict", summary: "predict with uncertainty (entropy, mutual information)", usage: predictUsage, run: runPredict},
		serveCmd,
		h.eval,
		h.calibrate,
		{name: "posterior", summary: "print the posterior mean and covariance of a model's parameters", usage: posteriorUsage, run: runPosterior},
		h.plan,
		{name: "bench", summary: "benchmark a model's predictor on this machine", usage: benchUsage, run: runBench},
		{name: "boards", summary: "list the board profiles (platform, CPU, RAM, budget, SIMD)", usage: boardsUsage, run: runBoards},
		h.build,
		{name: "version", summary: "print the version, Go version and platform", usage: versionUsage, run: runVersion},
	} {
		if c.name != "" { // absent from a device build
			cmds = append(cmds, c)
		}
	}
	return cmds
}

// hostSet holds the commands only the host build has: training, conversion, evaluation,
// calibration and planning, which link the trainer, the plotting library and its fonts, the
// PyTorch readers and the converter (plan sizes a model by converting stand-in values), and
// build, which runs the Go toolchain on the source tree (os/exec: 0.2 MB of a board binary). A
// build with the device tag (edgebnn build does that for boards) leaves them out.
type hostSet struct{ train, convert, eval, calibrate, plan, build command }

// absentCommands maps the commands a build leaves out to the build that has them; the
// build-tagged files (commands_device.go, cmd_serve_off.go) fill it.
var absentCommands = map[string]string{}

// lookupCommand finds a subcommand by name.
func lookupCommand(name string) (command, bool) {
	for _, c := range commandTable() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// usageError reports a command line the command cannot make sense of; the
// dispatcher maps it to exit status 2.
type usageError struct {
	msg string
}

// Error returns the message.
func (e *usageError) Error() string { return e.msg }

// usagef returns a *usageError with a formatted message.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelpShown is returned by parseFlags after printing the usage text for
// -h/-help; the dispatcher maps it to exit status 0.
var errHelpShown = fmt.Errorf("help shown: %w", flag.ErrHelp)

// newFlagSet returns a flag set that reports errors instead of printing or
// exiting; use it with parseFlags.
func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags parses args. For -h/-help it prints usage and the visible
// flags to stdout and returns errHelpShown; any other parse failure
// becomes a *usageError.
func parseFlags(fs *flag.FlagSet, usage string, args []string, stdout io.Writer) error {
	err := fs.Parse(args)
	if err == nil {
		return nil
	}
	if errors.Is(err, flag.ErrHelp) {
		printUsage(stdout, fs, usage)
		return errHelpShown
	}
	return &usageError{msg: err.Error()}
}

// printUsage writes the usage text followed by the flags that have a
// non-empty usage string (flags with an empty one are hidden).
func printUsage(w io.Writer, fs *flag.FlagSet, usage string) {
	fmt.Fprint(w, strings.TrimRight(usage, "\n")+"\n")
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		if f.Usage == "" {
			return
		}
		dash := "-"
		if len(f.Name) > 1 {
			dash = "--"
		}
		name, help := flag.UnquoteUsage(f)
		fmt.Fprintf(&b, "  %s%s", dash, f.Name)
		if name != "" {
			fmt.Fprintf(&b, " %s", name)
		}
		fmt.Fprintf(&b, "\n    \t%s", strings.ReplaceAll(help, "\n", "\n    \t"))
		if bf, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && bf.IsBoolFlag() {
			if f.DefValue == "true" {
				b.WriteString(" (default true)")
			}
		} else if f.DefValue != "" && f.DefValue != "0" {
			if fmt.Sprintf("%T", f.Value) == "*flag.stringValue" {
				fmt.Fprintf(&b, " (default %q)", f.DefValue)
			} else {
				fmt.Fprintf(&b, " (default %s)", f.DefValue)
			}
		}
		b.WriteString("\n")
	})
	if b.Len() > 0 {
		fmt.Fprint(w, "\nFlags:\n"+b.String())
	}
}

// parseFlagsOnly is parseFlags for a command that takes no positional arguments: one left
// after the flags is a usage error.
func parseFlagsOnly(fs *flag.FlagSet, usage string, args []string, stdout io.Writer) error {
	if err := parseFlags(fs, usage, args, stdout); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// writeJSON writes v to w as JSON indented by two spaces, and a newline: a command's --json
// output.
func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding JSON: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("writing JSON: %w", err)
	}
	return nil
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}
