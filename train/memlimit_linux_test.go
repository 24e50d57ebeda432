//go:build linux

package train

import (
	"context"
	"os"
	"os/exec"
	"strconv"
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
		limitAddressSpace(t, 1<<30)
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

// TestRunWithinUlimit: under an address-space limit (ulimit -v) a run is either refused by the
// memory checks, naming the limit, or completes, final checkpoint and model included — it does
// not die in the Go runtime. ffg_w on mlp:1-1000-1000-1 (4 M posterior values, about 260 MB live
// at its peak) under its size plus LIMIT MiB: with one factor of 8 float32 values per value the
// check estimated 128 MB and let the run start, and it died ("fatal error: out of memory");
// the estimate is now 355 MB, refused under 300 MiB, and the run completes under 480 MiB with
// the Go memory limit (SetGoMemoryLimit) holding the heap below twice the live heap.
func TestRunWithinUlimit(t *testing.T) {
	if mib := os.Getenv("EDGEBNN_ULIMIT_RUN_CHILD"); mib != "" {
		n, err := strconv.Atoi(mib)
		if err != nil {
			t.Fatal(err)
		}
		limitAddressSpace(t, uint64(n)<<20)
		t.Logf("Go memory limit %d", SetGoMemoryLimit())
		c := toyConfig(t, "ffg_w", "")
		c.Data, c.Arch, c.Epochs, c.BatchSize = "toy1d:1000", "mlp:1-1000-1000-1", 1, 100
		tr, err := New(c)
		if err == nil {
			err = tr.Run(context.Background(), Hooks{})
		}
		switch {
		case err != nil && strings.Contains(err.Error(), "ulimit -v"):
			t.Logf("refused: %v", err)
		case err != nil:
			t.Fatal(err)
		default:
			if _, err := os.Stat(c.Out); err != nil {
				t.Fatal(err)
			}
			t.Log("trained")
		}
		return
	}
	if testing.Short() {
		t.Skip("runs child processes")
	}
	for _, tc := range []struct{ mib, want string }{{"300", "refused:"}, {"480", "trained"}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestRunWithinUlimit$", "-test.v")
		cmd.Env = append(os.Environ(), "EDGEBNN_ULIMIT_RUN_CHILD="+tc.mib)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), tc.want) {
			t.Fatalf("child under its size + %s MiB of address space: %v, want %q\n%.3000s", tc.mib, err, tc.want, out)
		}
	}
}

// limitAddressSpace lowers the process's soft RLIMIT_AS, as ulimit -v would, to its size (VmSize)
// plus extra bytes: for the child processes of the tests above, never for the test binary itself.
func limitAddressSpace(t *testing.T, extra uint64) {
	t.Helper()
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
	r.Cur = min(r.Cur, used+extra)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &r); err != nil {
		t.Fatal(err)
	}
}
