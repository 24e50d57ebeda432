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
// success, 1 when the command fails, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"text/tabwriter"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

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
	if !ok {
		fmt.Fprintf(stderr, "edgebnn: unknown command %q; run 'edgebnn help' for the list of commands.\n", name)
		return exitUsage
	}
	return report(c.name, c.run(ctx, rest, stdout, stderr), stderr)
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
Exit status: 0 success, 1 error, 2 usage error.
`)
}
