//go:build !device

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestBuildUsage: build's usage errors name the flag or board at fault.
func TestBuildUsage(t *testing.T) {
	runCases(t, []cliCase{
		{name: "help build", args: []string{"help", "build"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn build", "--board NAME", "-o FILE"}, quietErr: true},
		{name: "build -h", args: []string{"build", "-h"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn build"}, quietErr: true},
		{name: "build --help", args: []string{"build", "--help"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn build"}, quietErr: true},
		{name: "build no flags", args: []string{"build"}, wantCode: 2, wantStderr: []string{"edgebnn build: missing --board NAME"}},
		{name: "build no output", args: []string{"build", "--board", "rpi4"}, wantCode: 2, wantStderr: []string{"edgebnn build: missing -o FILE"}},
		{name: "build unknown board", args: []string{"build", "--board", "cray1", "-o", "x"}, wantCode: 2, wantStderr: []string{`edgebnn build: unknown board "cray1" (known: amd64, `}},
		{name: "build bad flag", args: []string{"build", "--bogus"}, wantCode: 2, wantStderr: []string{"edgebnn build: flag provided but not defined: -bogus"}},
		{name: "build extra arg", args: []string{"build", "--board", "rpi4", "-o", "x", "extra"}, wantCode: 2, wantStderr: []string{`unexpected argument "extra"`}},
	})
}

// TestCheckBuildOutput: build -o refuses the module's go.mod, go.sum and Go sources, board
// profiles it reads, and non-regular files; a new binary path or one outside the module is fine.
func TestCheckBuildOutput(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"go.mod", "go.sum", "main.go", "profile.json", "demo.bin"} {
		mustWrite(t, filepath.Join(root, f), []byte("x"))
	}
	mustWrite(t, filepath.Join(root, "edgebnn-old"), []byte("\x7fELF\x02\x01\x01"))
	fifo := testutil.Mkfifo(t, filepath.Join(root, "fifo"))
	other := t.TempDir()
	link := filepath.Join(other, "link")
	if err := os.Symlink(root, link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		out  string
		ok   bool
	}{
		{"new binary in the module", filepath.Join(root, "edgebnn-rpi4"), true},
		{"Go file outside the module", filepath.Join(other, "x.go"), true},
		{"go.mod", filepath.Join(root, "go.mod"), false},
		{"go.sum", filepath.Join(root, "go.sum"), false},
		{"Go source", filepath.Join(root, "main.go"), false},
		{"new Go source in the module", filepath.Join(root, "new.go"), false},
		{"board profile", filepath.Join(root, "profile.json"), false},
		{"new profile in the module", filepath.Join(root, "new.json"), false},
		{"new assembly in the module", filepath.Join(root, "k_arm64.s"), false},
		{"new Fortran in the module", filepath.Join(root, "x.f90"), false},
		{"new C++ in the module", filepath.Join(root, "x.cc"), false},
		{"profile through a link to the module", filepath.Join(link, "new.json"), false},
		{"binary through a link to the module", filepath.Join(link, "edgebnn-old"), true},
		{"embedded data file", filepath.Join(root, "demo.bin"), false},
		{"an earlier build's binary", filepath.Join(root, "edgebnn-old"), true},
		{"fifo", fifo, false},
		{"missing directory", filepath.Join(root, "missing", "bin"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBuildOutput(tc.out, root, []string{filepath.Join(root, "profile.json")})
			if (err == nil) != tc.ok {
				t.Fatalf("checkBuildOutput(%s) = %v, want ok=%v", tc.out, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "-o "+tc.out) {
				t.Errorf("error %q does not name -o %s", err, tc.out)
			}
		})
	}
	// A relative -o is inside the module too (filepath.Rel of a relative and an absolute path
	// had failed, and the check let every relative path through).
	t.Run("relative", func(t *testing.T) {
		t.Chdir(root)
		if err := checkBuildOutput("demo.bin", root, nil); err == nil {
			t.Fatal("checkBuildOutput(demo.bin) = nil inside the module")
		}
	})
	// Through the command: a FIFO is refused before anything is built.
	code, _, stderr := runCLITimeout(t, 20*time.Second, "build", "--board", "rpi4", "-o", fifo)
	if code != 1 || !strings.Contains(stderr, "named pipe") {
		t.Errorf("build -o FIFO: exit %d, stderr %q", code, stderr)
	}
}

func TestModulePathOf(t *testing.T) {
	tests := []struct {
		in, want string
		wantErr  bool
	}{
		{"module github.com/edgebnn/edgebnn\n\ngo 1.26\n", "github.com/edgebnn/edgebnn", false},
		{"// comment\nmodule \"example.com/x\" // trailing\n", "example.com/x", false},
		{"modulex foo\nmodule\tbar\n", "bar", false},
		{"go 1.26\n", "", true},
		{"module\n", "", true},
	}
	for _, tt := range tests {
		got, err := modulePathOf(strings.NewReader(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("modulePathOf(%q) = %q, %v; want %q, err=%v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestModuleRoot(t *testing.T) {
	dir := t.TempDir()
	ours := filepath.Join(dir, "ours", "go.mod")
	other := filepath.Join(dir, "other", "go.mod")
	for path, content := range map[string]string{ours: "module " + modulePath + "\n", other: "module example.com/other\n"} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, path, []byte(content))
	}
	tests := []struct {
		gomod    string
		wantRoot string
		wantErr  string
	}{
		{"", "", "not inside the edgebnn source tree"},
		{os.DevNull, "", "not inside the edgebnn source tree"},
		{other, "", `declares module "example.com/other"`},
		{filepath.Join(dir, "missing", "go.mod"), "", "reading the module file"},
		{ours, filepath.Dir(ours), ""},
	}
	for _, tt := range tests {
		root, err := moduleRoot(tt.gomod)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("moduleRoot(%q) error = %v, want it to contain %q", tt.gomod, err, tt.wantErr)
			}
			continue
		}
		if err != nil || root != tt.wantRoot {
			t.Errorf("moduleRoot(%q) = %q, %v; want %q", tt.gomod, root, err, tt.wantRoot)
		}
	}
}

// TestFindModuleRootOutsideTree runs the real 'go env GOMOD' from a
// directory outside any module; it needs the Go toolchain on the host.
func TestFindModuleRootOutsideTree(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil || runtime.GOARCH != "amd64" {
		t.Skip("needs the go toolchain on an amd64 host")
	}
	dir := t.TempDir()
	if _, err := findModuleRoot(t.Context(), goBin, dir); err == nil || !strings.Contains(err.Error(), "not inside the edgebnn source tree") {
		t.Errorf("findModuleRoot outside the tree: err = %v", err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	root, err := findModuleRoot(t.Context(), goBin, wd)
	if err != nil {
		t.Fatalf("findModuleRoot in the tree: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "edgebnn", "main.go")); err != nil {
		t.Errorf("root %q does not contain cmd/edgebnn: %v", root, err)
	}
}
