package train

import (
	"bytes"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"

	"github.com/edgebnn/edgebnn/runtime"
)

// memoryLimit is the memory the trainer's up-front checks (weights, activations, evaluation,
// fsvi's buffers, hmc's working space and draws) hold a run to: the machine's or its cgroup's
// (runtime.DefaultMaxMemory), and under an address-space limit (ulimit -v, RLIMIT_AS) no more
// than 7/8 of the address space the process has left (the address space grows by more than the
// heap: its arenas' metadata; see SetGoMemoryLimit). Without the latter, a run under ulimit -v passed
// every check against the machine's memory and then died in the Go runtime ("fatal error: out
// of memory", a goroutine dump) instead of an error naming the setting to lower.
func memoryLimit() int64 {
	m := runtime.DefaultMaxMemory()
	if left, ok := addressSpaceLeft(); ok {
		m = min(m, left-left/8)
	}
	return m
}

// SetGoMemoryLimit sets the Go runtime's soft memory limit (debug.SetMemoryLimit) to the memory
// the trainer's checks hold a run to, and returns it (0: left as it was, GOMEMLIMIT being set).
// The checks bound the live heap; by GOGC the runtime lets the heap grow to about twice that
// before it collects, so a run that passed them could still exhaust ulimit -v (ffg_w on
// mlp:1-3000-3000-1: 2.1 GB live, 3.2 GB of heap; under ulimit -v 5000000 "fatal error: out of
// memory" after the final checkpoint). With the limit the collector runs more often near it
// instead; far below it, as in a run the checks leave room for, nothing changes. Under ulimit -v
// the limit is what the runtime has mapped plus 7/8 of the address space left: the address
// space grows by more than the runtime's memory (its arenas' metadata: 5.06 GB of VmSize for
// 3.19 GB mapped, from 1.74 GB at the start), and the limit is soft.
func SetGoMemoryLimit() int64 {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0
	}
	m := memoryLimit()
	if _, ok := addressSpaceLeft(); ok {
		s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
		metrics.Read(s)
		if s[0].Value.Kind() == metrics.KindUint64 {
			m += int64(min(s[0].Value.Uint64(), 1<<61))
		}
	}
	debug.SetMemoryLimit(m)
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
