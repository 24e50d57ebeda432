package tests

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/boards"
)

// TestBuildForBoards builds the edgebnn binary for the host, uses its
// "build" subcommand to cross-compile for an arm64 and an armv6 board, and
// checks the results: ELF class and machine, static linking, recorded build
// settings, and that they print their version under QEMU.
func TestBuildForBoards(t *testing.T) {
	goBin := hostGo(t)
	profiles, err := boards.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	host := filepath.Join(dir, "edgebnn")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	// The test runs in tests/, inside the module: build ../cmd/edgebnn.
	build := exec.CommandContext(ctx, goBin, "build", "-o", host, "../cmd/edgebnn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=", "GOARCH=", "GOARM=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the host edgebnn: %v\n%s", err, out)
	}

	tests := []struct {
		board    string
		class    elf.Class
		machine  elf.Machine
		goarch   string
		goarm    string
		wantLine string
		noServe  bool // edgebnn build --no-serve: the lean board binary
	}{
		{"rpi4", elf.ELFCLASS64, elf.EM_AARCH64, "arm64", "", "platform: linux/arm64\n", false},
		{"rpi0", elf.ELFCLASS32, elf.EM_ARM, "arm", "6", "platform: linux/arm (GOARM=6)\n", false},
		{"rpi4", elf.ELFCLASS64, elf.EM_AARCH64, "arm64", "", "platform: linux/arm64\n", true},
	}
	for _, tt := range tests {
		// plan sizes a model by converting stand-in values: it links the converter.
		name, args, tags := tt.board, []string{}, "device,nethttpomithttp2"
		has, hasNot := []string{"predict", "bench", "inspect", "serve"}, []string{"train", "convert", "plan", "build"}
		if tt.noServe {
			name, args, tags = tt.board+"-lean", []string{"--no-serve"}, "device,noserve"
			has, hasNot = []string{"predict", "bench", "inspect"}, []string{"train", "convert", "plan", "build", "serve"}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, ok := boards.Lookup(profiles, tt.board)
			if !ok {
				t.Fatalf("no board profile %q", tt.board)
			}
			out := filepath.Join(dir, "edgebnn-"+name)
			cmd := exec.CommandContext(ctx, host, append([]string{"build", "--board", tt.board, "-o", out}, args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("edgebnn build --board %s: %v\nstdout:\n%s\nstderr:\n%s", tt.board, err, stdout.String(), stderr.String())
			}
			if !strings.HasPrefix(stdout.String(), "built "+out+" for "+tt.board) {
				t.Errorf("build output = %q", stdout.String())
			}

			f, err := elf.Open(out)
			if err != nil {
				t.Fatalf("%s is not an ELF file: %v", out, err)
			}
			defer f.Close()
			if f.Class != tt.class || f.Machine != tt.machine || f.OSABI != elf.ELFOSABI_NONE && f.OSABI != elf.ELFOSABI_LINUX {
				t.Errorf("ELF class %v machine %v osabi %v, want %v %v linux", f.Class, f.Machine, f.OSABI, tt.class, tt.machine)
			}
			for _, prog := range f.Progs {
				if prog.Type == elf.PT_INTERP {
					t.Errorf("binary has an ELF interpreter: not statically linked")
				}
			}

			bi, err := buildinfo.ReadFile(out)
			if err != nil {
				t.Fatalf("reading build info of %s: %v", out, err)
			}
			settings := map[string]string{}
			for _, s := range bi.Settings {
				settings[s.Key] = s.Value
			}
			// The board binary is the device build (no train, convert, eval, plan), its serve
			// without the bundled HTTP/2.
			want := map[string]string{"GOOS": "linux", "GOARCH": tt.goarch, "GOARM": tt.goarm, "CGO_ENABLED": "0", "-trimpath": "true", "-tags": tags}
			for k, v := range want {
				if settings[k] != v {
					t.Errorf("build setting %s = %q, want %q", k, settings[k], v)
				}
			}

			qemu := p.QEMUCommand()
			if _, err := exec.LookPath(qemu[0]); err != nil {
				t.Skipf("%s not installed (apt-get install qemu-user-static): %v", qemu[0], err)
			}
			run := exec.CommandContext(ctx, qemu[0], append(qemu[1:], out, "version")...)
			got, err := run.CombinedOutput()
			if err != nil {
				t.Fatalf("%s %s version: %v\n%s", strings.Join(qemu, " "), out, err, got)
			}
			if !strings.HasPrefix(string(got), "edgebnn ") || !strings.Contains(string(got), tt.wantLine) {
				t.Errorf("version output under %s:\n%s\nwant it to start with \"edgebnn \" and contain %q", strings.Join(qemu, " "), got, tt.wantLine)
			}
			help, err := exec.CommandContext(ctx, qemu[0], append(qemu[1:], out, "help")...).CombinedOutput()
			if err != nil {
				t.Fatalf("help under %s: %v\n%s", strings.Join(qemu, " "), err, help)
			}
			for _, cmd := range has {
				if !strings.Contains(string(help), "\n  "+cmd+" ") {
					t.Errorf("the board binary lacks %s:\n%s", cmd, help)
				}
			}
			for _, cmd := range hasNot {
				if strings.Contains(string(help), "\n  "+cmd+" ") {
					t.Errorf("the board binary has %s:\n%s", cmd, help)
				}
			}
		})
	}
}
