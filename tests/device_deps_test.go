package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// deviceModules are the modules the device build may use besides the standard library: this
// module and the four the product card chose (testify only in tests).
var deviceModules = []string{
	"github.com/edgebnn/edgebnn",
	"github.com/x448/float16",
	"golang.org/x/sys",
	"github.com/klauspost/compress",
}

// TestDeviceBuildDeps: the board binary (-tags device) links no module beyond the standard
// library and the card's four — no pickle reader, no plotting — and its stripped arm64 size
// stays within a bound (logged; net/http for edgebnn serve is most of it).
func TestDeviceBuildDeps(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("needs the go toolchain, which only the amd64 host has (not the emulated targets)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go toolchain not on PATH: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	list := exec.CommandContext(ctx, goBin, "list", "-deps", "-tags", "device",
		"-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", "../cmd/edgebnn")
	list.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, _ := strings.Cut(line, " ")
		if pkg == "" {
			continue
		}
		if !slices.Contains(deviceModules, mod) {
			t.Errorf("the device build imports %s (module %q), which is not one of %v", pkg, mod, deviceModules)
		}
	}
	bin := filepath.Join(t.TempDir(), "edgebnn-device")
	build := exec.CommandContext(ctx, goBin, "build", "-tags", "device", "-trimpath", "-ldflags=-s -w", "-o", bin, "../cmd/edgebnn")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	st, err := os.Stat(bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device build, linux/arm64, stripped: %d bytes (%.2f MiB)", st.Size(), float64(st.Size())/(1<<20))
	const limit = 8 << 20
	if st.Size() > limit {
		t.Errorf("the device build is %d bytes, more than %d: what was linked in?", st.Size(), limit)
	}
}
