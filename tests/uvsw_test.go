package tests

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestUvswBadOptions: bench/uvsw.sh refuses rows it cannot train before it builds, trains or
// writes anything, with a message naming the option.
func TestUvswBadOptions(t *testing.T) {
	dependOnTree(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--methods", "det,bogus"}, `--methods: unknown method "bogus"`},
		{[]string{"--methods", ","}, "--methods names no method"},
		{[]string{"--model", "resnet", "--methods", "ffgu,faem"}, "--methods faem: the FA posteriors have configs for --model mlp only"},
		{[]string{"--model", "cnn"}, `--model is mlp or resnet, not "cnn"`},
		{[]string{"--seeds", "x"}, "--seeds takes a whole number"},
	} {
		dir := t.TempDir() + "/out"
		cmd := exec.Command(bash, append([]string{"../bench/uvsw.sh", "--out", dir}, tc.args...)...)
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("uvsw.sh %q: err %v, output %q, want an error containing %q", tc.args, err, out, tc.want)
		}
		if _, err := os.Stat(dir); err == nil {
			t.Errorf("uvsw.sh %q created --out before refusing", tc.args)
		}
	}
}
