package runtime

import (
	"strconv"
	"strings"
)

// cgroupMemoryLimit returns the memory limit of the control groups the process is in (cgroup v2's
// memory.max, v1's memory.limit_in_bytes), the tightest along the group's path up to the root,
// reading files with read (os.ReadFile; absolute paths: /proc/self/cgroup, /sys/fs/cgroup/…);
// false where there is none — no control groups, no limit ("max", or v1's near-2^63
// "unlimited"), or nothing readable. A container's limit is what an allocation beyond it meets
// (the OOM killer), not the host's MemTotal. (Plain strings, not io/fs and path: the device
// binary's size is bounded.)
func cgroupMemoryLimit(read func(name string) ([]byte, error)) (int64, bool) {
	b, err := read("/proc/self/cgroup")
	if err != nil || len(b) > 1<<16 {
		return 0, false
	}
	limit, found := int64(0), false
	take := func(file string) {
		v, err := read(file)
		if err != nil || len(v) > 64 {
			return
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(v)), 10, 64)
		if err != nil || n <= 0 || n >= 1<<62 { // "max", garbage, v1's unlimited
			return
		}
		if !found || n < limit {
			limit, found = n, true
		}
	}
	for _, line := range strings.Split(string(b), "\n") {
		// hierarchy-ID:controllers:path; v2's single hierarchy is "0::/path".
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || !strings.HasPrefix(f[2], "/") || hasDotPart(f[2]) {
			continue // not a line, or a path with a . or .. part
		}
		var base, file string
		switch {
		case f[0] == "0" && f[1] == "":
			base, file = "/sys/fs/cgroup", "/memory.max"
		case hasController(f[1], "memory"):
			base, file = "/sys/fs/cgroup/memory", "/memory.limit_in_bytes"
		default:
			continue
		}
		// The group and each of its ancestors: /a/b, /a, the root.
		for p := strings.TrimRight(f[2], "/"); ; {
			take(base + p + file)
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return limit, found
}

// hasDotPart reports whether the slash-separated path p has a part "." or "..".
func hasDotPart(p string) bool {
	for part := range strings.SplitSeq(p, "/") {
		if part == "." || part == ".." {
			return true
		}
	}
	return false
}

// hasController reports whether the comma-separated controller list holds name.
func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
