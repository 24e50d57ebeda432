package train

import (
	"context"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
)

// trainRun builds a trainer for c and runs it to the end without hooks.
func trainRun(t *testing.T, c Config) *Trainer {
	t.Helper()
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// convertLoad converts a checkpoint with opts and loads the model file it writes; the model is
// closed when the test ends.
func convertLoad(t *testing.T, opts convert.Options) *runtime.Model {
	t.Helper()
	if _, err := convert.Convert(opts); err != nil {
		t.Fatalf("converting the checkpoint: %v", err)
	}
	m, err := runtime.Load(opts.Out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
