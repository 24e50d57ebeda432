package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// deviceModules are the modules the device build may use besides the standard library: the four
// the product card chose (testify only in tests). Of this module, only devicePackages.
var deviceModules = []string{
	"github.com/x448/float16",
	"golang.org/x/sys",
	"github.com/klauspost/compress",
}

// devicePackages are this module's packages a board binary may link: the runtime and what the
// runtime commands need to read their inputs — no converter (convert, its PyTorch readers
// convert/torchpt and convert/statedict, the architecture parsers), no trainer (train/...), no
// prune, quant or plotting.
var devicePackages = []string{
	"github.com/edgebnn/edgebnn/cmd/edgebnn",
	"github.com/edgebnn/edgebnn/runtime",
	"github.com/edgebnn/edgebnn/kernels",
	"github.com/edgebnn/edgebnn/format",
	"github.com/edgebnn/edgebnn/boards",
	"github.com/edgebnn/edgebnn/serve",               // not in the lean build
	"github.com/edgebnn/edgebnn/convert/safetensors", // predict's safetensors inputs: the file format's codec only
	"github.com/edgebnn/edgebnn/internal/schema",     // inspect
	"github.com/edgebnn/edgebnn/internal/csvrecords", // predict's CSV inputs
	"github.com/edgebnn/edgebnn/internal/clip",
	"github.com/edgebnn/edgebnn/internal/f64", // float64 helpers (the Bernstein flow's log binomials)
	"github.com/edgebnn/edgebnn/internal/outfile",
	"github.com/edgebnn/edgebnn/internal/readlimit",
	"github.com/edgebnn/edgebnn/internal/strictjson", // model files' JSON: no repeated member names
}

// deviceBuild is one variant of the board binary and the bound of its stripped linux/arm64 size.
type deviceBuild struct {
	name  string
	tags  string
	serve bool
	limit int64
}

// deviceBuilds are the board binaries edgebnn build makes: the default one with serve (net/http
// without its bundled HTTP/2, which plain-HTTP serving never uses) and the lean one without
// (--no-serve). Issue 13 bounds the lean one by 4 MB; net/http is about 3 MB more.
var deviceBuilds = []deviceBuild{
	{name: "serve", tags: "device,nethttpomithttp2", serve: true, limit: 7_500_000},
	{name: "lean", tags: "device,noserve", limit: 4_000_000},
}

// TestDeviceBuildDeps: the board binaries link only the standard library, the card's modules and
// devicePackages (serve only where it belongs), for arm64 and armv7; their stripped arm64 sizes
// stay within the bounds (skipped with -short: it builds both).
func TestDeviceBuildDeps(t *testing.T) {
	goBin := hostGo(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	for _, b := range deviceBuilds {
		for _, arch := range []string{"arm64", "arm"} {
			t.Run(b.name+"/"+arch, func(t *testing.T) {
				list := exec.CommandContext(ctx, goBin, "list", "-deps", "-tags", b.tags,
					"-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", "../cmd/edgebnn")
				list.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch, "GOARM=7")
				out, err := list.CombinedOutput()
				if err != nil {
					t.Fatalf("go list: %v\n%s", err, out)
				}
				own, serve := 0, false
				for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
					pkg, mod, _ := strings.Cut(line, " ")
					switch {
					case pkg == "":
					case mod == "github.com/edgebnn/edgebnn":
						own++
						serve = serve || pkg == "github.com/edgebnn/edgebnn/serve"
						if !slices.Contains(devicePackages, pkg) {
							t.Errorf("the %s build imports %s, which is not a device package", b.name, pkg)
						}
					case !slices.Contains(deviceModules, mod):
						t.Errorf("the %s build imports %s (module %q), which is not one of %v", b.name, pkg, mod, deviceModules)
					}
				}
				if own < 5 {
					t.Errorf("go list found %d packages of this module; is the listing broken?\n%s", own, out)
				}
				if serve != b.serve {
					t.Errorf("the %s build links serve: %v, want %v", b.name, serve, b.serve)
				}
			})
		}
	}
	if testing.Short() {
		t.Log("-short: the size checks (two cross-builds) skipped")
		return
	}
	for _, b := range deviceBuilds {
		t.Run(b.name+"/size", func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "edgebnn-"+b.name)
			build := exec.CommandContext(ctx, goBin, "build", "-tags", b.tags, "-trimpath", "-ldflags=-s -w", "-o", bin, "../cmd/edgebnn")
			build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
			st, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s device build (-tags %s), linux/arm64, stripped: %d bytes (%.2f MB)", b.name, b.tags, st.Size(), float64(st.Size())/1e6)
			if st.Size() > b.limit {
				t.Errorf("the %s device build is %d bytes, more than %d: what was linked in?", b.name, st.Size(), b.limit)
			}
		})
	}
}
