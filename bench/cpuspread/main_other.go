//go:build !linux

// Command cpuspread needs Linux (per-thread CPU time and resource usage); see main.go.
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "cpuspread: Linux only (per-thread CPU time and resource usage)")
	os.Exit(2)
}
