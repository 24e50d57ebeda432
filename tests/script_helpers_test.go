package tests

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostGo returns the go command's path, skipping the test on any GOARCH but amd64: only the
// amd64 host has the go toolchain (the emulated targets run test binaries alone).
func hostGo(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("needs the go toolchain, which only the amd64 host has (not the emulated targets)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go toolchain not on PATH: %v", err)
	}
	return goBin
}

// skipQuick skips a test of the bench scripts' quick runs in the purego pass (a script builds
// its own binary without the tag, so the host pass runs it) and, with -short, saying what the
// run costs.
func skipQuick(t *testing.T, cost string) {
	t.Helper()
	if puregoBuild {
		t.Skip("the script builds its own binary without the purego tag: the host pass runs it")
	}
	if testing.Short() {
		t.Skip(cost)
	}
	dependOnTree(t)
	// Each script is mostly one process on one core at a time (building, loading data, training
	// a small model): these tests run side by side, go test -parallel (GOMAXPROCS) at a time.
	t.Parallel()
}

// dependOnTree stats every file of the repository but .git, docs and runs. go test caches a
// passing result keyed on the test binary and on the files the test itself opens or stats; a
// bench script reads its configs and builds cmd/edgebnn and the bench programs in child
// processes, which the cache does not see, so without this a changed script, config or command
// would go on reporting the old pass.
func dependOnTree(t *testing.T) {
	t.Helper()
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != ".." && (d.Name() == ".git" || d.Name() == "docs" || d.Name() == "runs") {
				return filepath.SkipDir
			}
			return nil
		}
		_, err = os.Stat(path)
		return err
	})
	if err != nil {
		t.Fatalf("listing the repository for the test cache: %v", err)
	}
}

// runQuickTable runs the bench script ../bench/NAME with bash and args plus --quick --out (a
// temporary directory), failing the test if it fails, and returns its standard output and the
// cells (trimmed) of every Markdown table line in it. Call skipQuick first.
func runQuickTable(t *testing.T, name string, args ...string) (string, [][]string) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, bash, append(append([]string{"../bench/" + name}, args...), "--quick", "--out", t.TempDir())...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s --quick: %v\n%s", name, err, stderr.String())
	}
	logCost(t, strings.TrimSpace("bench/"+name+" "+strings.Join(args, " "))+" --quick", start, cmd.ProcessState)
	var rows [][]string
	for _, line := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows = append(rows, cells)
	}
	return string(out), rows
}

// logCost logs what a quick mode cost: wall time since start and the CPU time (user + system)
// of the process and of every descendant it waited for (wait4's rusage), which is what "under
// a minute of CPU" in docs/RESULTS.md is measured by (go test -v prints it). It is a log line,
// not an assertion: a timed test would fail on a loaded machine (docs/RESULTS.md, "Quick modes").
func logCost(t *testing.T, what string, start time.Time, ps *os.ProcessState) {
	t.Helper()
	wall := time.Since(start).Seconds()
	if ps == nil {
		t.Logf("%s: %.1f s wall", what, wall)
		return
	}
	t.Logf("%s: %.1f s wall, %.1f s CPU", what, wall, (ps.UserTime() + ps.SystemTime()).Seconds())
}
