package main

import (
	"context"
	"fmt"
	"io"
)

// Subcommands that later issues implement. To implement one, delete its
// variable here and define it (same name) in cmd_<name>.go; the line in
// commandTable stays as it is.

// pendingCommand returns a command that prints its planned usage for -h
// and otherwise fails with "not available yet" (exit status 1), whatever
// other arguments it is given.
func pendingCommand(name, summary, usage, arrivesWith string) command {
	usage += "\n\nNot available yet: it arrives with " + arrivesWith + "."
	return command{
		name:    name,
		summary: summary,
		usage:   usage,
		pending: true,
		run: func(_ context.Context, args []string, stdout, _ io.Writer) error {
		scan:
			for _, a := range args {
				switch a {
				case "-h", "-help", "--help":
					return parseFlags(newFlagSet(name), usage, []string{a}, stdout)
				case "--":
					break scan
				}
			}
			return fmt.Errorf("%w (it arrives with %s)", errNotAvailable, arrivesWith)
		},
	}
}
