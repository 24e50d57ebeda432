//go:build unix

package convert

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/convert/statedict"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/convert/torchpt"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

// TestSpecialInputFiles: a checkpoint, architecture, inference config or validation set that is
// a FIFO, a link to /dev/zero or a directory is refused at once (no blocking open, no endless
// read), with an error naming the file.
func TestSpecialInputFiles(t *testing.T) {
	dir, fifo, zero := testutil.Specials(t, "fifo.pt", "zero.json")
	sub := testutil.Mkdir(t, filepath.Join(dir, "sub.safetensors"))
	out := filepath.Join(dir, "out.ebnn")
	readers := []struct {
		name string
		read func(path string) error
	}{
		{"Convert checkpoint", func(p string) error {
			_, err := Convert(Options{Checkpoint: p, Arch: "resnet18", Out: out})
			return err
		}},
		{"ParseArch", func(p string) error { _, _, err := ParseArch(p, 10, 3); return err }},
		{"loadData", func(p string) error { _, _, err := loadData(p, 4); return err }},
		{"statedict.Load", func(p string) error { _, err := statedict.Load(p); return err }},
		{"torchpt.ReadFile", func(p string) error { _, err := torchpt.ReadFile(p); return err }},
		{"safetensors.ReadFile", func(p string) error { _, err := safetensors.ReadFile(p); return err }},
		{"bnnconfig.ParseFile", func(p string) error { _, err := bnnconfig.ParseFile(p); return err }},
		{"torcharch.ParseJSONFile", func(p string) error { _, err := torcharch.ParseJSONFile(p); return err }},
		{"torcharch.ParseReprFile", func(p string) error { _, err := torcharch.ParseReprFile(p); return err }},
		{"resnet.ParseJSONFile", func(p string) error { _, err := resnet.ParseJSONFile(p); return err }},
	}
	for _, r := range readers {
		for _, path := range []string{fifo, zero, sub} {
			t.Run(r.name+"/"+filepath.Base(path), func(t *testing.T) {
				err := testutil.Within(t, 5*time.Second, r.name, func() error { return r.read(path) })
				if err == nil || !errors.Is(err, readlimit.ErrNotRegular) || !strings.Contains(err.Error(), path) {
					t.Fatalf("error %v, want one naming %s and wrapping readlimit.ErrNotRegular", err, path)
				}
			})
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("output written: %v", err)
	}
}
