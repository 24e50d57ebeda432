//go:build linux

package train

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// TestMemoryChecksUnderUlimit: under an address-space limit (ulimit -v) the up-front memory
// checks hold a run to what the limit leaves, not to the machine's memory: toy1d:1048576 with
// posterior hmc and mlp:1-100-1 (3.1 GiB of full-batch working space) passed the check against
// the machine's memory and died in the Go runtime ("fatal error: out of memory"). The run is a
// child process (this test binary again) whose RLIMIT_AS it lowers to leave itself 1 GiB.
func TestMemoryChecksUnderUlimit(t *testing.T) {
	if os.Getenv("EDGEBNN_ULIMIT_CHILD") == "1" {
		// The child lowers its own soft RLIMIT_AS, as ulimit -v would, to its size plus 1 GiB.
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			t.Fatal(err)
		}
		used, ok := vmSize(status)
		if !ok {
			t.Fatal("no VmSize in /proc/self/status")
		}
		var r syscall.Rlimit
		if err := syscall.Getrlimit(syscall.RLIMIT_AS, &r); err != nil {
			t.Fatal(err)
		}
		r.Cur = min(r.Cur, used+1<<30)
		if err := syscall.Setrlimit(syscall.RLIMIT_AS, &r); err != nil {
			t.Fatal(err)
		}
		if left, ok := addressSpaceLeft(); !ok || left > 1<<30 {
			t.Fatalf("the address space left: %d, %v; want at most 1 GiB", left, ok)
		}
		c := toyConfig(t, "hmc", "")
		c.Data, c.Arch, c.TestFraction = "toy1d:1048576", "mlp:1-100-1", 0
		c.HMCChains, c.HMCWarmup, c.HMCDraws, c.HMCSamples = 1, 1, 1, 1
		tr, err := New(c)
		if err == nil {
			err = tr.Run(context.Background(), Hooks{})
		}
		if err == nil || !strings.Contains(err.Error(), "GiB") || !strings.Contains(err.Error(), "ulimit -v") {
			t.Fatalf("New/Run = %v, want the working space refused against the address space left", err)
		}
		t.Logf("refused: %v", err)
		return
	}
	if testing.Short() {
		t.Skip("runs a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMemoryChecksUnderUlimit$", "-test.v")
	cmd.Env = append(os.Environ(), "EDGEBNN_ULIMIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child under an address-space limit: %v\n%.3000s", err, out)
	}
	if !strings.Contains(string(out), "refused:") {
		t.Fatalf("the child did not run the check:\n%.3000s", out)
	}
}
