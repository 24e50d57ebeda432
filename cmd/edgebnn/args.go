package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// parseShape parses "C,H,W" or "F".
func parseShape(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) != 1 && len(parts) != 3 {
		return nil, fmt.Errorf("input shape %q must be F or C,H,W", s)
	}
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 1 || v > 1<<24 {
			return nil, fmt.Errorf("input shape %q: %q is not a positive integer", s, p)
		}
		out[i] = v
	}
	return out, nil
}

// parseInterspersed parses flags that may come before or after positional arguments and
// returns the positional arguments.
func parseInterspersed(fs *flag.FlagSet, usage string, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := parseFlags(fs, usage, args, stdout); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// renamedPathError shows err with the staging path replaced by the output's.
type renamedPathError struct {
	err      error
	from, to string
}

// Error returns the message with the staging path replaced.
func (e *renamedPathError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.from, e.to)
}

// Unwrap returns the underlying error.
func (e *renamedPathError) Unwrap() error { return e.err }

// fileArg returns s if it names an existing file (a flag such as --arch that
// takes either a built-in name or a path), else "".
func fileArg(s string) string {
	if s == "" {
		return ""
	}
	if _, err := os.Stat(s); err != nil {
		return ""
	}
	return s
}
