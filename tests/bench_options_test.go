package tests

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestBenchBadOptions: the experiment scripts refuse what they cannot run before they build,
// train or write anything, with a message naming the option.
func TestBenchBadOptions(t *testing.T) {
	dependOnTree(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	for _, tc := range []struct {
		script string
		args   []string
		want   string
	}{
		{"uvsw.sh", []string{"--methods", "det,bogus"}, `--methods: unknown method "bogus"`},
		{"uvsw.sh", []string{"--methods", ","}, "--methods names no method"},
		{"uvsw.sh", []string{"--model", "resnet", "--methods", "ffgu,faem"}, "--methods faem: the FA posteriors have configs for --model mlp only"},
		{"uvsw.sh", []string{"--model", "cnn"}, `--model is mlp or resnet, not "cnn"`},
		{"uvsw.sh", []string{"--seeds", "x"}, "--seeds takes a whole number"},
		{"cnntabs.sh", []string{"--nets", "cnn,mlp"}, `--nets: unknown net "mlp"`},
		{"cnntabs.sh", []string{"--nets", ""}, "--nets names no net"},
		{"cnntabs.sh", []string{"--seeds", "0"}, "--seeds must be at least 1"},
		{"cnntabs.sh", []string{"--epochs", "3"}, "usage: bench/cnntabs.sh"},
	} {
		dir := t.TempDir() + "/out"
		cmd := exec.Command(bash, append([]string{"../bench/" + tc.script, "--out", dir}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s %q: err %v, output %q, want an error containing %q", tc.script, tc.args, err, out, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("%s %q created --out before refusing", tc.script, tc.args)
		}
	}
}
