package main

import "golang.org/x/sys/unix"

// threadCPU returns the CPU seconds the calling OS thread has used (user and system), and true;
// the caller locks its goroutine to the thread. On a loaded machine it counts only the time the
// thread ran, not the time it waited for a core. It reads CLOCK_THREAD_CPUTIME_ID (the
// scheduler's nanosecond count) rather than getrusage, whose per-thread times can move in whole
// scheduler ticks (4 ms at 250 Hz: seen on this VM in session 18, a fifth of a ResNet-18 forward).
func threadCPU() (float64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, false
	}
	return float64(ts.Sec) + 1e-9*float64(ts.Nsec), true
}
