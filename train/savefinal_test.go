package train

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFinalSaveBothOrNeither: when the model cannot be written at the end of a run (a full
// disk), the checkpoint beside it is not replaced either — a rerun's outputs stay the previous
// run's pair, never a new checkpoint beside an old model.
func TestFinalSaveBothOrNeither(t *testing.T) {
	c := DefaultConfig()
	c.Arch, c.Data, c.Posterior, c.Epochs, c.Milestones = "mlp:2-8-2", "moons", "ffg_w", 1, nil
	c.TrainLimit, c.TestLimit = 200, 50
	c.Out = filepath.Join(t.TempDir(), "m.ebnn")
	first := trainRun(t, c)
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	ckpt, model := read(c.Out), read(first.ModelPath())
	c.Seed = 2 // another run: other bytes
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	full := errors.New("no space left on device")
	tr.stageFault = func(p string) error {
		if p == tr.ModelPath() {
			return full
		}
		return nil
	}
	if err := tr.Run(context.Background(), Hooks{}); !errors.Is(err, full) {
		t.Fatalf("Run = %v, want the model's write error", err)
	}
	if !bytes.Equal(read(c.Out), ckpt) || !bytes.Equal(read(tr.ModelPath()), model) {
		t.Error("a failed final save replaced the checkpoint or the model")
	}
	ents, _ := os.ReadDir(filepath.Dir(c.Out))
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("staging left behind: %s", e.Name())
		}
	}
	// Without the fault the second run replaces both.
	tr.stageFault = nil
	tr2 := trainRun(t, c)
	if bytes.Equal(read(c.Out), ckpt) || bytes.Equal(read(tr2.ModelPath()), model) {
		t.Error("the second run did not replace its outputs")
	}
}
