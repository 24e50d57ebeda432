package main

import "golang.org/x/sys/unix"

// threadCPU returns the CPU seconds the calling OS thread has used (user and system), and true;
// the caller locks its goroutine to the thread. On a loaded machine it counts only the time the
// thread ran, not the time it waited for a core.
func threadCPU() (float64, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + 1e-6*float64(ru.Utime.Usec+ru.Stime.Usec), true
}
