package train

import (
	"bytes"
	"strconv"

	"github.com/edgebnn/edgebnn/runtime"
)

// memoryLimit is the memory the trainer's up-front checks (weights, activations, evaluation,
// fsvi's buffers, hmc's working space and draws) hold a run to: the machine's or its cgroup's
// (runtime.DefaultMaxMemory), and under an address-space limit (ulimit -v, RLIMIT_AS) no more
// than the address space the process has left. Without the latter, a run under ulimit -v passed
// every check against the machine's memory and then died in the Go runtime ("fatal error: out
// of memory", a goroutine dump) instead of an error naming the setting to lower.
func memoryLimit() int64 {
	m := runtime.DefaultMaxMemory()
	if left, ok := addressSpaceLeft(); ok {
		m = min(m, left)
	}
	return m
}

// addressSpaceLeftFrom is addressSpaceLeft with its inputs: the soft RLIMIT_AS (infinite: no
// limit) and /proc/self/status's text, whose VmSize line is the address space in use. It reports
// false when there is no limit or the size is unknown.
func addressSpaceLeftFrom(limit uint64, infinite bool, status []byte) (int64, bool) {
	if infinite {
		return 0, false
	}
	used, ok := vmSize(status)
	if !ok {
		return 0, false
	}
	if used >= limit {
		return 0, true
	}
	return int64(min(limit-used, 1<<62)), true
}

// vmSize returns the address space in use, in bytes, from /proc/self/status's VmSize line.
func vmSize(status []byte) (uint64, bool) {
	for _, line := range bytes.Split(status, []byte("\n")) {
		rest, ok := bytes.CutPrefix(line, []byte("VmSize:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, false
		}
		kb, err := strconv.ParseUint(string(f[0]), 10, 64)
		if err != nil || kb > 1<<50 {
			return 0, false
		}
		return kb << 10, true
	}
	return 0, false
}
