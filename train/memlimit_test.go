package train

import "testing"

// TestAddressSpaceLeftFrom: the address space an RLIMIT_AS leaves is the limit less VmSize (kB
// in /proc/self/status); no limit, or a status without a readable VmSize, is no bound.
func TestAddressSpaceLeftFrom(t *testing.T) {
	const status = "Name:\tedgebnn\nVmPeak:\t 1778860 kB\nVmSize:\t 1778860 kB\nVmRSS:\t 16144 kB\n"
	for _, tc := range []struct {
		name     string
		limit    uint64
		infinite bool
		status   string
		left     int64
		ok       bool
	}{
		{"ulimit -v 4000000", 4000000 << 10, false, status, (4000000 - 1778860) << 10, true},
		{"used up", 1000000 << 10, false, status, 0, true},
		{"no limit", 1 << 40, true, status, 0, false},
		{"no VmSize", 4 << 30, false, "Name:\tx\n", 0, false},
		{"not kB", 4 << 30, false, "VmSize:\t 17 MB\n", 0, false},
		{"garbage", 4 << 30, false, "VmSize:\t -5 kB\n", 0, false},
		{"huge", 4 << 30, false, "VmSize:\t 99999999999999999999 kB\n", 0, false},
	} {
		left, ok := addressSpaceLeftFrom(tc.limit, tc.infinite, []byte(tc.status))
		if left != tc.left || ok != tc.ok {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, left, ok, tc.left, tc.ok)
		}
	}
	if m := memoryLimit(); m <= 0 {
		t.Errorf("memoryLimit() = %d", m)
	}
}
