//go:build unix

package main

import (
	"syscall"
	"time"
)

// cpuTime returns the process's user + system CPU time so far (0 if unavailable).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
