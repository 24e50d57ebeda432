package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrainNumericLimits: absurd numeric config values, from flags or a config file, are
// refused before any data is loaded, naming the key.
func TestTrainNumericLimits(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "c.json")
	mustWrite(t, cfg, []byte(`{"data": "toy1d", "task": "regression", "arch": "mlp:1-8-1", "batch_size": 1000000000000}`))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--train-samples", "1000000000000"}, "train_samples"},
		{[]string{"--epochs", "1000000000000"}, "epochs"},
		{[]string{"--batch-size", "1000000000000"}, "batch_size"},
		{[]string{"--lr", "NaN"}, "lr"},
		{[]string{"--test-samples", "99999999"}, "test_samples"},
		{[]string{"--config", cfg}, "batch_size"},
		{[]string{"--config", dir}, dir},
	} {
		t.Run(strings.Join(c.args, "="), func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"train", "--quiet", "--no-plots", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-8-1",
				"--out", filepath.Join(dir, "m.ebnn")}, c.args...)
			if code := run(args, &out, &errb); code == 0 {
				t.Fatalf("accepted: %s", out.String())
			}
			if !strings.Contains(errb.String(), c.want) {
				t.Errorf("error does not name %s: %s", c.want, errb.String())
			}
		})
	}
}
