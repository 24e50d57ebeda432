//go:build linux

package train

import (
	"os"
	"syscall"
)

// addressSpaceLeft is the address space RLIMIT_AS leaves the process beyond what it uses (its
// VmSize), and whether there is such a limit.
func addressSpaceLeft() (int64, bool) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil {
		return 0, false
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	return addressSpaceLeftFrom(uint64(r.Cur), uint64(r.Cur) == rlimInfinity, status)
}

// rlimInfinity is RLIM_INFINITY: all ones, whatever the width of Rlimit's fields.
const rlimInfinity = ^uint64(0)
