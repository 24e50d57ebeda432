package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The tests that run edgebnn as a program (signals, serve, hostile inputs) build it once per
// test process with the build tags of the test binary itself, so that `go test -tags
// device,noserve` runs the board binary. Setup steps that need a command the build leaves out
// (convert, calibrate in a device build) go through runHostOK; training for a setup runs in
// process through the trainer package (trainConfig).

// binaries holds the binaries this test process built, by build tags, in one temporary
// directory that TestMain removes.
var binaries struct {
	sync.Mutex
	dir   string
	built map[string]string
}

func TestMain(m *testing.M) {
	code := m.Run()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
	os.Exit(code)
}

// testTags returns the build tags of this test binary (go test -tags …), from its build info.
func testTags() []string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "-tags" && s.Value != "" {
				return strings.Split(s.Value, ",")
			}
		}
	}
	return nil
}

// testBuild builds this package with tags, once per test process, and returns its path.
func testBuild(t *testing.T, tags []string) string {
	t.Helper()
	key := strings.Join(tags, ",")
	binaries.Lock()
	defer binaries.Unlock()
	if bin, ok := binaries.built[key]; ok {
		return bin
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "edgebnn-test-bin-")
		if err != nil {
			t.Fatal(err)
		}
		binaries.dir, binaries.built = dir, map[string]string{}
	}
	bin := filepath.Join(binaries.dir, "edgebnn-"+strings.NewReplacer(",", "-").Replace(key))
	if out, err := exec.Command("go", "build", "-tags", key, "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags %q: %v\n%s", key, err, out)
	}
	binaries.built[key] = bin
	return bin
}

// testBinary returns the edgebnn binary under test: EDGEBNN_BIN, else this package built with
// the test binary's tags.
func testBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("EDGEBNN_BIN"); bin != "" {
		return bin
	}
	return testBuild(t, testTags())
}

// runHostOK runs a command for a test's setup, requires exit status 0 and returns its stdout: in
// process where this build has the command, else in this package built without the device and
// noserve tags, so that the device build's tests make their models as a user of both builds
// would.
func runHostOK(t *testing.T, args ...string) string {
	t.Helper()
	if inBuild(args[0]) {
		return runOK(t, args...)
	}
	host := slices.DeleteFunc(testTags(), func(tag string) bool { return tag == "device" || tag == "noserve" })
	cmd := exec.Command(testBuild(t, host), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("edgebnn %s (host build): %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, &stdout, &stderr)
	}
	return stdout.String()
}

// inBuild reports whether this build has the command name (a device build leaves the host
// commands out, a noserve build serve).
func inBuild(name string) bool {
	_, absent := absentCommands[name]
	return !absent
}

// skipAbsent skips a test of commands that this build leaves out (a device or noserve build).
func skipAbsent(t *testing.T, commands ...string) {
	t.Helper()
	for _, name := range commands {
		if where, absent := absentCommands[name]; absent {
			t.Skipf("%s is not in this build; it is in %s", name, where)
		}
	}
}
