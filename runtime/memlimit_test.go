package runtime

import (
	"io/fs"
	"testing"
)

// TestCgroupMemoryLimit: the tightest memory limit along the process's control-group path, v2
// and v1, and none where there is no limit or nothing readable.
func TestCgroupMemoryLimit(t *testing.T) {
	type files map[string]string
	for _, tc := range []struct {
		name  string
		fs    files
		want  int64
		found bool
	}{
		{"no cgroup file", files{}, 0, false},
		{"v2 container root", files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "536870912\n"}, 512 << 20, true},
		{"v2 max", files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "max\n"}, 0, false},
		{"v2 nested, parent tighter", files{"/proc/self/cgroup": "0::/kube/pod1/c1\n",
			"/sys/fs/cgroup/kube/pod1/c1/memory.max": "max\n",
			"/sys/fs/cgroup/kube/pod1/memory.max":    "268435456\n",
			"/sys/fs/cgroup/kube/memory.max":         "1073741824\n"}, 256 << 20, true},
		{"v1 memory controller", files{"/proc/self/cgroup": "12:cpu,cpuacct:/x\n7:memory:/docker/abc\n",
			"/sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": "104857600\n"}, 100 << 20, true},
		{"v1 unlimited", files{"/proc/self/cgroup": "7:memory:/\n",
			"/sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n"}, 0, false},
		{"v2 dot-named group", files{"/proc/self/cgroup": "0::/a/.b\n", "/sys/fs/cgroup/a/.b/memory.max": "1048576\n"}, 1 << 20, true},
		{"garbage", files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/memory.max": "-5\n"}, 0, false},
		{"path escaping the root", files{"/proc/self/cgroup": "0::/../../etc\n", "/etc/memory.max": "1\n", "/sys/fs/cgroup/memory.max": "max\n"}, 0, false},
	} {
		read := func(name string) ([]byte, error) {
			if s, ok := tc.fs[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		}
		got, found := cgroupMemoryLimit(read)
		if got != tc.want || found != tc.found {
			t.Errorf("%s: %d, %v; want %d, %v", tc.name, got, found, tc.want, tc.found)
		}
	}
	if m := DefaultMaxMemory(); m <= 0 {
		t.Errorf("DefaultMaxMemory() = %d", m)
	}
}
