package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

var fixtureRoot = filepath.Join("..", "..", "testdata", "bayesianize")

// convertFixture converts a fixture with extra flags and returns the output path.
func convertFixture(t *testing.T, fx string, extra ...string) string {
	t.Helper()
	d := filepath.Join(fixtureRoot, fx)
	out := filepath.Join(t.TempDir(), fx+".ebnn")
	args := append([]string{"convert", "--checkpoint", filepath.Join(d, "state_dict.pt"),
		"--config", filepath.Join(d, "inference_config.json"), "--arch", filepath.Join(d, "model.txt"), "--out", out}, extra...)
	runHostOK(t, args...)
	return out
}

// trainConfig trains c in process (it writes its checkpoint to c.Out) or fails the test.
func trainConfig(t *testing.T, c train.Config) {
	t.Helper()
	tr, err := train.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), train.Hooks{}); err != nil {
		t.Fatal(err)
	}
}

// mustWrite writes data to path (mode 0644) or fails the test.
func mustWrite(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// runOK runs the CLI with args, requires exit status 0 and returns its stdout.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(args...)
	if code != 0 {
		t.Fatalf("edgebnn %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// runCLIJSON runs the CLI with args, requires exit status 0 and decodes its stdout, JSON, into v.
func runCLIJSON(t *testing.T, v any, args ...string) {
	t.Helper()
	stdout := runOK(t, args...)
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatalf("edgebnn %s: %v\nstdout: %s", strings.Join(args, " "), err, stdout)
	}
}

// checkContains reports each of wants that text (what names it) does not contain.
func checkContains(t *testing.T, what, text string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(text, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, text)
		}
	}
}

// cliCase is one command line and what it must produce.
type cliCase struct {
	name       string
	args       []string
	wantCode   int
	wantStdout []string // substrings
	wantStderr []string // substrings
	quietErr   bool     // stderr must be empty
}

// runCases runs each case as a subtest of t and checks its exit status, its output substrings
// and (quietErr) an empty stderr; each of extra then checks the case's output further.
func runCases(t *testing.T, tests []cliCase, extra ...func(t *testing.T, tc cliCase, stdout, stderr string)) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.args) > 0 {
				skipAbsent(t, tc.args[0])
			}
			code, stdout, stderr := runCLI(tc.args...)
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.wantCode, stdout, stderr)
			}
			checkContains(t, "stdout", stdout, tc.wantStdout...)
			checkContains(t, "stderr", stderr, tc.wantStderr...)
			if tc.quietErr && stderr != "" {
				t.Errorf("stderr = %q, want empty", stderr)
			}
			for _, check := range extra {
				check(t, tc, stdout, stderr)
			}
		})
	}
}

func TestRun(t *testing.T) {
	tests := []cliCase{
		{name: "no args", args: nil, wantCode: 2, wantStderr: []string{"Usage: edgebnn <command>", "Commands:"}},
		{name: "help", args: []string{"help"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn <command>", "boards", "version", "demo", "predict"}, quietErr: true},
		{name: "-h", args: []string{"-h"}, wantCode: 0, wantStdout: []string{"Commands:"}, quietErr: true},
		{name: "--help", args: []string{"--help"}, wantCode: 0, wantStdout: []string{"Commands:"}, quietErr: true},
		{name: "help unknown", args: []string{"help", "frobnicate"}, wantCode: 2, wantStderr: []string{`edgebnn help: unknown command "frobnicate"`}},
		{name: "help two args", args: []string{"help", "version", "boards"}, wantCode: 2, wantStderr: []string{"edgebnn help: expected at most one command"}},
		{name: "unknown command", args: []string{"frobnicate"}, wantCode: 2, wantStderr: []string{`edgebnn: unknown command "frobnicate"`}},
		{name: "version", args: []string{"version"}, wantCode: 0, wantStdout: []string{"edgebnn " + version + "\n", "go:       " + runtime.Version(), "platform: " + runtime.GOOS + "/" + runtime.GOARCH}, quietErr: true},
		{name: "--version", args: []string{"--version"}, wantCode: 0, wantStdout: []string{"edgebnn " + version}, quietErr: true},
		{name: "version extra arg", args: []string{"version", "now"}, wantCode: 2, wantStderr: []string{`edgebnn version: unexpected argument "now"`, "Run 'edgebnn help version' for usage."}},
		{name: "version bad flag", args: []string{"version", "--json"}, wantCode: 2, wantStderr: []string{"edgebnn version: flag provided but not defined: -json"}},
		{name: "boards", args: []string{"boards"}, wantCode: 0, wantStdout: []string{"NAME", "PLATFORM", "BUDGET", "rpi4", "linux/arm64", "cortex-a72", "4 GiB", "rpi0", "linux/arm/v6", "neon,fp16,dotprod"}, quietErr: true},
		{name: "boards -v", args: []string{"boards", "-v"}, wantCode: 0, wantStdout: []string{"BeagleBone Black"}, quietErr: true},
		{name: "boards -h hides test-targets", args: []string{"boards", "-h"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn boards", "--json"}, quietErr: true},
		{name: "boards test targets", args: []string{"boards", "--test-targets"}, wantCode: 0, wantStdout: []string{"arm64-a53 arm64 - qemu-aarch64-static cortex-a53\n", "armv6 arm 6 qemu-arm-static arm1176\n"}, quietErr: true},
		{name: "boards extra arg", args: []string{"boards", "rpi4"}, wantCode: 2, wantStderr: []string{`edgebnn boards: unexpected argument "rpi4"`}},
		{name: "boards missing dir", args: []string{"boards", "--dir", filepath.Join(os.TempDir(), "edgebnn-no-such-dir")}, wantCode: 1, wantStderr: []string{"edgebnn boards: loading user board profiles: boards: reading profile directory"}},
	}
	runCases(t, tests, func(t *testing.T, tt cliCase, stdout, stderr string) {
		if tt.wantCode == 1 {
			// Errors are one line on stderr, nothing on stdout.
			if strings.Count(stderr, "\n") != 1 || stdout != "" {
				t.Errorf("error output: stdout=%q stderr=%q, want one stderr line", stdout, stderr)
			}
		}
		if tt.args != nil && tt.args[0] == "boards" && strings.Contains(stdout, "test-targets") {
			t.Errorf("hidden flag --test-targets shown in output:\n%s", stdout)
		}
	})
}

func TestCommandTable(t *testing.T) {
	want := []string{"demo", "train", "convert", "inspect", "predict", "serve", "eval", "calibrate", "posterior", "plan", "bench", "boards", "build", "version"}
	seen := map[string]bool{}
	for _, c := range commandTable() {
		if seen[c.name] {
			t.Errorf("command %q listed twice", c.name)
		}
		seen[c.name] = true
		if c.summary == "" || strings.Contains(c.summary, "\n") {
			t.Errorf("command %q: summary %q must be one non-empty line", c.name, c.summary)
		}
		if !strings.HasPrefix(c.usage, "Usage: edgebnn "+c.name) {
			t.Errorf("command %q: usage must start with %q", c.name, "Usage: edgebnn "+c.name)
		}
		if c.run == nil {
			t.Errorf("command %q has no run function", c.name)
		}
		if !slices.Contains(want, c.name) {
			t.Errorf("command %q is not in this test's list: add it, and say whether a device build has it", c.name)
		}
		// help NAME and NAME -h print the same text.
		_, viaHelp, _ := runCLI("help", c.name)
		_, viaFlag, _ := runCLI(c.name, "-h")
		if viaHelp != viaFlag || viaHelp == "" {
			t.Errorf("command %q: 'help %s' and '%s -h' differ:\n%s\n---\n%s", c.name, c.name, c.name, viaHelp, viaFlag)
		}
	}
	// A device build leaves out exactly the host commands and a noserve build serve; they are
	// not listed, and running one names the build that has it.
	wantAbsent := map[string]bool{}
	for _, tag := range testTags() {
		switch tag {
		case "device":
			for _, name := range []string{"train", "convert", "eval", "calibrate", "plan", "build"} {
				wantAbsent[name] = true
			}
		case "noserve":
			wantAbsent["serve"] = true
		}
	}
	for _, name := range want {
		switch {
		case wantAbsent[name] && (seen[name] || inBuild(name)):
			t.Errorf("command %q is in this build (tags %v); want it left out", name, testTags())
		case wantAbsent[name]:
			code, _, stderr := runCLI(name)
			if code != exitUsage || !strings.Contains(stderr, name+" is not in this build; it is in ") {
				t.Errorf("edgebnn %s in a build without it: exit %d, %q", name, code, stderr)
			}
		case !seen[name]:
			t.Errorf("command %q missing from the table", name)
		}
	}
	for name := range absentCommands {
		if !wantAbsent[name] {
			t.Errorf("command %q is left out of a build with tags %v", name, testTags())
		}
	}
	// help lists the table, in its order, and nothing else.
	_, help, _ := runCLI("help")
	_, list, ok := strings.Cut(help, "Commands:\n")
	var listed []string
	for line := range strings.Lines(list) {
		if !ok || !strings.HasPrefix(line, "  ") {
			break
		}
		listed = append(listed, strings.Fields(line)[0])
	}
	var table []string
	for _, c := range commandTable() {
		table = append(table, c.name)
	}
	if !slices.Equal(listed, table) {
		t.Errorf("help lists %v; the table has %v", listed, table)
	}
}

func TestBoardsJSON(t *testing.T) {
	var got []map[string]any
	runCLIJSON(t, &got, "boards", "--json")
	if len(got) != 9 {
		t.Fatalf("got %d profiles, want 9", len(got))
	}
	for _, p := range got {
		if p["name"] == "rpi4" {
			if p["goarch"] != "arm64" || p["qemu_cpu"] != "cortex-a72" || p["ram_bytes"] != float64(4<<30) {
				t.Errorf("rpi4 = %v", p)
			}
			return
		}
	}
	t.Error("rpi4 missing from JSON output")
}

func TestBoardsUserDir(t *testing.T) {
	dir := t.TempDir()
	profile := `{"name":"rpi4","description":"8 GiB Pi 4","goos":"linux","goarch":"arm64",
		"qemu":"qemu-aarch64-static","qemu_cpu":"cortex-a72","ram_bytes":8589934592,
		"budget_bytes":6442450944,"simd":{"neon":true}}`
	mustWrite(t, filepath.Join(dir, "rpi4-8g.json"), []byte(profile))
	stdout := runOK(t, "boards", "--dir", dir)
	if !strings.Contains(stdout, "8 GiB    6 GiB") {
		t.Errorf("user profile did not replace rpi4:\n%s", stdout)
	}
	bad := filepath.Join(dir, "broken.json")
	mustWrite(t, bad, []byte(`{"name":"x","speed":1}`))
	code, _, stderr := runCLI("boards", "--dir", dir)
	want := `edgebnn boards: loading user board profiles: boards: ` + bad + `: field "speed": unknown field`
	if code != 1 || strings.TrimSpace(stderr) != want {
		t.Errorf("exit %d, stderr %q; want 1, %q", code, stderr, want)
	}
}

func TestVersionText(t *testing.T) {
	tests := []struct {
		name   string
		bi     *debug.BuildInfo
		goarch string
		want   string
	}{
		{"no build info", nil, "amd64", "edgebnn " + version + "\ngo:       go1.99\nplatform: linux/amd64\n"},
		{"vcs", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "0123456789abcdef0123"},
			{Key: "vcs.time", Value: "2025-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		}}, "arm64", "edgebnn " + version + "\ncommit:   0123456789ab (modified) 2025-01-02T03:04:05Z\ngo:       go1.99\nplatform: linux/arm64\n"},
		{"goarm and tags", &debug.BuildInfo{Settings: []debug.BuildSetting{
			{Key: "GOARM", Value: "6"}, {Key: "-tags", Value: "purego"},
		}}, "arm", "edgebnn " + version + "\ngo:       go1.99\nplatform: linux/arm (GOARM=6)\ntags:     purego\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := versionText(tt.bi, "go1.99", "linux", tt.goarch); got != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

func TestFormatBytes(t *testing.T) {
	tests := []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1 KiB"}, {512 << 20, "512 MiB"},
		{3 << 29, "1.5 GiB"}, {8 << 30, "8 GiB"}, {2 << 40, "2 TiB"},
	}
	for _, tt := range tests {
		if got := formatBytes(tt.n); got != tt.want {
			t.Errorf("formatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// The dispatcher returns the exit status instead of exiting, so the whole
// command line is testable.
func Example() {
	code := run([]string{"boards", "--test-targets"}, os.Stdout, os.Stderr)
	fmt.Println("exit status", code)
	// Output:
	// arm64-a53 arm64 - qemu-aarch64-static cortex-a53
	// arm64-a72 arm64 - qemu-aarch64-static cortex-a72
	// arm64-a76 arm64 - qemu-aarch64-static cortex-a76
	// armv7 arm 7 qemu-arm-static cortex-a8
	// armv6 arm 6 qemu-arm-static arm1176
	// exit status 0
}
