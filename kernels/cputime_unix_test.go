//go:build unix

package kernels

import "syscall"

// processCPUSeconds returns the user+system CPU time of the process, so that benchmarks on a
// shared, oversubscribed machine can report throughput per CPU-second next to wall-clock
// throughput. It returns 0 if the time is unavailable.
func processCPUSeconds() float64 {
	var r syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r); err != nil {
		return 0
	}
	return float64(r.Utime.Nano()+r.Stime.Nano()) / 1e9
}
