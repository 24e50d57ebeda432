package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Peak-memory tests run the code under test in a fresh process (this test binary re-executed,
// running one test with an environment variable set: the child) and read the child's peak
// resident memory, VmHWM of Linux's /proc/self/status.

const childPrefix = "CHILD RESULT: "

// ChildExit, in a child, prints result on a line of its own and then /proc/self/status, and
// exits with status 0 (a failure the parent should see belongs in result).
func ChildExit(result string) {
	status, _ := os.ReadFile("/proc/self/status")
	fmt.Printf("\n%s%s\n%s", childPrefix, result, status)
	os.Exit(0)
}

// Child is what a child process reported.
type Child struct {
	Result  string        // the line it passed to ChildExit ("" if it did not)
	PeakRSS int64         // its VmHWM in bytes, -1 if it reported none
	Wall    time.Duration // from start to exit
}

// SkipWithoutPeakRSS skips a peak-memory test in -short runs (the emulated targets run -short:
// under qemu-user the binary cannot re-execute itself, and QEMU's own memory would be measured)
// and where there is no /proc/self/status.
func SkipWithoutPeakRSS(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: re-executes the test binary")
	}
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status")
	}
}

// RunChild re-executes this test binary running only the test named test, with env
// ("KEY=value") added to the environment, and returns what the child reported; the test fails
// at once if the child does not exit with status 0.
func RunChild(t testing.TB, test string, env ...string) Child {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	cmd := exec.Command(exe, "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	c := Child{PeakRSS: -1, Wall: time.Since(start)}
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if s, ok := strings.CutPrefix(line, childPrefix); ok {
			c.Result = s
		}
		if s, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "kB")), 10, 64)
			if err == nil {
				c.PeakRSS = kb << 10
			}
		}
	}
	return c
}
