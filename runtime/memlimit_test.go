package runtime

import (
	"testing"
	"testing/fstest"
)

// TestCgroupMemoryLimit: the tightest memory limit along the process's control-group path, v2
// and v1, and none where there is no limit or nothing readable.
func TestCgroupMemoryLimit(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	for _, tc := range []struct {
		name  string
		fs    fstest.MapFS
		want  int64
		found bool
	}{
		{"no cgroup file", fstest.MapFS{}, 0, false},
		{"v2 container root", fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("536870912\n")}, 512 << 20, true},
		{"v2 max", fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("max\n")}, 0, false},
		{"v2 nested, parent tighter", fstest.MapFS{"proc/self/cgroup": file("0::/kube/pod1/c1\n"),
			"sys/fs/cgroup/kube/pod1/c1/memory.max": file("max\n"),
			"sys/fs/cgroup/kube/pod1/memory.max":    file("268435456\n"),
			"sys/fs/cgroup/kube/memory.max":         file("1073741824\n")}, 256 << 20, true},
		{"v1 memory controller", fstest.MapFS{"proc/self/cgroup": file("12:cpu,cpuacct:/x\n7:memory:/docker/abc\n"),
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": file("104857600\n")}, 100 << 20, true},
		{"v1 unlimited", fstest.MapFS{"proc/self/cgroup": file("7:memory:/\n"),
			"sys/fs/cgroup/memory/memory.limit_in_bytes": file("9223372036854771712\n")}, 0, false},
		{"garbage", fstest.MapFS{"proc/self/cgroup": file("0::/\n"), "sys/fs/cgroup/memory.max": file("-5\n")}, 0, false},
		{"path escaping the root", fstest.MapFS{"proc/self/cgroup": file("0::/../../etc\n")}, 0, false},
	} {
		got, found := cgroupMemoryLimit(tc.fs)
		if got != tc.want || found != tc.found {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
	if m := DefaultMaxMemory(); m <= 0 {
		t.Errorf("DefaultMaxMemory() = %d", m)
	}
}
