package tests

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// codeWord in a TestBenchBadOptions argument stands for a word that runs a command if bash
// evaluates it as arithmetic.
const codeWord = "@CODE@"

// TestBenchBadOptions: the experiment scripts refuse what they cannot run before they build,
// train or write anything into --out, with a message naming the option.
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
		env    []string // added to the environment
	}{
		{"uvsw.sh", []string{"--methods", "det,bogus"}, `--methods: unknown method "bogus"`, nil},
		{"uvsw.sh", []string{"--methods", ","}, "--methods names no method", nil},
		{"uvsw.sh", []string{"--model", "resnet", "--methods", "ffgu,faem"}, "--methods faem: the FA posteriors have configs for --model mlp only", nil},
		{"uvsw.sh", []string{"--model", "cnn"}, `--model is mlp or resnet, not "cnn"`, nil},
		{"uvsw.sh", []string{"--seeds", "x"}, "--seeds takes a whole number", nil},
		{"fsvi_table1.sh", []string{"--methods", "fsvi,bogus"}, "unknown method bogus", nil},
		{"fsvi_table1.sh", []string{"--fsvi-kl", "full"}, "--fsvi-kl full is not last_layer or linearized", nil},
		{"fsvi_table1.sh", []string{"--arch", "resnet"}, "--arch resnet is not mlp or cnn", nil},
		{"fsvi_table1.sh", []string{"--arch", "cnn", "--methods", "fsvi,laplace"}, "--methods laplace needs --arch mlp", nil},
		{"fsvi_table1.sh", []string{"--arch", "cnn", "--methods", "fsviref"}, "--methods fsviref needs --arch mlp", nil},
		{"cnntabs.sh", []string{"--nets", "cnn,mlp"}, `--nets: unknown net "mlp"`, nil},
		{"cnntabs.sh", []string{"--nets", ""}, "--nets takes a value, not an empty word", nil},
		{"cnntabs.sh", []string{"--nets", ","}, `--nets: unknown net ""`, nil},
		{"cnntabs.sh", []string{"--seeds", "0"}, "--seeds must be at least 1", nil},
		{"cnntabs.sh", []string{"--epochs", "3"}, "usage: bench/cnntabs.sh", nil},
		{"fig3.sh", []string{"--arch", "vgg16"}, "--arch vgg16 is not resnet18 or resnet50", nil},
		{"fig3.sh", []string{"--arm"}, "ARM_METHODS: ensu is not ffgu-weight, ffgu-local or ffgu-auto", []string{"ARM_METHODS=ffgu-auto ensu"}},
		{"fig3.sh", []string{"--arm"}, "ARM_WARMUP: x is not a count of 0 to 999", []string{"ARM_WARMUP=x"}},
		{"j2settings.sh", []string{"--scale", "3"}, "--scale must divide 50", nil},
		{"j2settings.sh", []string{"--seeds", "1"}, "--seeds must be at least 2", nil},
		{"j2settings.sh", []string{"--epochs", "0"}, "--epochs must be at least 1", nil},
		{"j2settings.sh", []string{"--method", "ffgw"}, `--method must be ffgu or ensembleu, not "ffgw"`, nil},
		{"fig4.sh", []string{"--sweeps", "M,lr"}, `--sweeps takes grid, M, small, prior and shape, not "lr"`, nil},
		{"fig4.sh", []string{"--methods", "ffgw"}, `--methods takes ffgu and ensu, not "ffgw"`, nil},
		{"fig4.sh", []string{"--sweeps", ","}, "--sweeps and --methods need at least one name", nil},
		{"fig4.sh", []string{"--sweeps", "prior", "--methods", "ensu"}, "selects no cell", nil},
		{"fig4.sh", []string{"--sweeps", "shape", "--methods", "ensu"}, "selects no cell", nil},
		{"fig4.sh", []string{"--grid-m", "48"}, "--grid-m takes 16, 32, 64 or 128 (the M sweep's values), not 48", nil},
		{"fig4.sh", []string{"--grid-m", "x"}, `--grid-m takes a whole number, not "x"`, nil},
		{"fig4.sh", []string{"--lr", "0"}, `--lr takes a positive number, not "0"`, nil},
		{"fig4.sh", []string{"--lr", "-1e-3"}, `--lr takes a positive number, not "-1e-3"`, nil},
		{"fig4.sh", []string{"--lr", "nan"}, `--lr takes a positive number, not "nan"`, nil},
		{"fig4.sh", []string{"--lr", "1e-400"}, `--lr takes a positive number, not "1e-400" (1e-12 to 1e6)`, nil},
		{"fig4.sh", []string{"--lr", "1e999"}, `--lr takes a positive number, not "1e999"`, nil},
		{"prunedc.sh", []string{"--finetune-lr", "0"}, `--finetune-lr takes a positive number, not "0"`, nil},
		{"prunedc.sh", []string{"--finetune-limit", "-1"}, `--finetune-limit takes a whole number, not "-1"`, nil},
		{"prunetab.sh", []string{"--finetune-lr", "1e-4x"}, `--finetune-lr takes a positive number, not "1e-4x"`, nil},
		{"fa_papers.sh", []string{"--only", "linear,bogus"}, "--only: unknown experiment bogus", nil},
		{"fa_papers.sh", []string{"--seeds", "0"}, "--seeds must be ≥ 1", nil},
		{"fa_papers.sh", []string{"--epochs", "3"}, "usage: bench/fa_papers.sh", nil},
		{"toy_vs_hmc.sh", []string{"--seeds", "0"}, "--seeds must be at least 1", nil},
		{"toy_vs_hmc.sh", []string{"./edgebnn", "runs/toyhmc"}, "usage: bench/toy_vs_hmc.sh", nil},
		{"fsvi_sd_lr.sh", []string{"--seeds", "1 2 3"}, "--seeds takes a whole number", nil},
		{"fsvi_sd_lr.sh", []string{"--factors", "1 x"}, `--factors: "x" is not a positive number`, nil},
		{"fsvi_sd_lr.sh", []string{"--factors", " "}, "--factors names no factor", nil},
		{"fsvi_preset.sh", []string{"--seeds", "1"}, "--seeds must be at least 2", nil},
		{"fsvi_preset.sh", []string{"--jobs", "0"}, "--samples and --jobs must be at least 1", nil},
		{"appk.sh", []string{"--seeds", "1"}, "--seeds must be at least 2", nil},
		{"appk.sh", []string{"--finetune", "0"}, "--epochs and --finetune must be at least 1", nil},
		{"appk.sh", []string{"--prune", "1"}, `--prune is the fraction of Z pruned, in (0, 1), not "1"`, nil},
		{"appk.sh", []string{"--prune", "nan"}, `--prune is the fraction of Z pruned, in (0, 1), not "nan"`, nil},
		{"appk.sh", []string{"--model", "cnn"}, `--model is mlp or resnet, not "cnn"`, nil},
		{"appk.sh", []string{"--corrupt", "maybe"}, `--corrupt is yes or no, not "maybe"`, nil},
		{"appk.sh", []string{"--model", "resnet", "--corrupt", "yes"}, "--corrupt yes needs --model mlp", nil},
		{"appk.sh", []string{"--finetune-lr", "0"}, `--finetune-lr takes a positive number, not "0"`, nil},
		{"appk.sh", []string{"--reuse", "runs"}, "--reuse takes bench/uvsw.sh --model resnet's checkpoints: --model resnet only", nil},
		{"appk.sh", []string{"--model", "resnet", "--reuse", "/nonexistent"}, "--reuse /nonexistent: not a directory", nil},
		{"j1settings.sh", []string{"--seeds", "0"}, "--seeds must be ≥ 1", nil},
		{"vifainit.sh", []string{"--seeds", "1"}, "--seeds must be at least 2", nil},
		{"vifainit.sh", []string{"--epochs", "1"}, "--epochs must be at least 2", nil},
		{"run_toy.sh", []string{"--recipe", "j2"}, `--recipe is paper or ours, not "j2"`, nil},
		{"run_toy.sh", []string{"--seeds", "x"}, `--seeds takes a whole number, not "x"`, nil},
		{"j1settings.sh", []string{"--seeds", "two"}, "--seeds takes a whole number", nil},
		{"fmnist_c.sh", []string{"--seeds", "0"}, "--seeds must be at least 1", nil},
		{"fmnist_c.sh", []string{"--test-limit", "-1"}, `--test-limit takes a whole number, not "-1"`, nil},
		{"fmnist_c.sh", []string{"a.ebnn", "edgebnn", "extra"}, "usage: bench/fmnist_c.sh", nil},
		{"fa_linreg_cli.sh", []string{"ten"}, `SEEDS takes a whole number, not "ten"`, nil},
		{"fa_linreg_cli.sh", []string{"--seeds", "1e3"}, `--seeds takes a whole number, not "1e3"`, nil},
		{"run_toy.sh", []string{"./edgebnn", "toy", "extra"}, "usage: bench/run_toy.sh", nil},
		// A number's value never reaches bash arithmetic unchecked, where PATH[$(cmd)] runs cmd
		// (the hand-written parsers of fmnist_c.sh, fa_linreg_cli.sh and run_toy.sh did that
		// before session 29); the loop checks that the command did not run.
		{"fmnist_c.sh", []string{"--seeds", codeWord, "/nonexistent.ebnn", "/nonexistent"}, "--seeds takes a whole number", nil},
		{"fmnist_c.sh", []string{"--samples", codeWord, "/nonexistent.ebnn"}, "--samples takes a whole number", nil},
		{"fa_linreg_cli.sh", []string{codeWord}, "SEEDS takes a whole number", nil},
		{"fa_linreg_cli.sh", []string{"--seeds", codeWord}, "--seeds takes a whole number", nil},
		{"run_toy.sh", []string{"--seeds", codeWord}, "--seeds takes a whole number", nil},
		{"fig4.sh", []string{"--epochs", codeWord}, "--epochs takes a whole number", nil},
		{"prunedc.sh", []string{"--corrupt-limit", codeWord}, "--corrupt-limit takes a whole number", nil},
		{"prunetab.sh", nil, "JOBS must be a whole number from 1 to 64", []string{"JOBS=" + codeWord}},
		{"uvsw.sh", nil, `JOBS must be a whole number from 1 to 64, not "0"`, []string{"JOBS=0"}},
		{"j2settings.sh", []string{"--scale", "3"}, "--scale must divide 50", []string{"epochsset=" + codeWord}},
		{"fig3.sh", []string{"--arm"}, "ARM_WARMUP: 010 is not a count", []string{"ARM_WARMUP=010"}},
		{"fsvi_table1.sh", []string{"--fsvi-context", "data:a b"}, `--fsvi-context "data:a b" is not a context name`, nil},
		{"throughput.sh", []string{"/bin/false", codeWord}, "STEPS a whole number", nil},
		{"fig3.sh", []string{"--arm"}, "is not a member count of 1 to 999", []string{"ARM_K=" + codeWord, "ARMCOUNT=/bin/true"}},
		{"toy_vs_hmc.sh", nil, "METHODS: ffgw* is not ffgw", []string{"METHODS=ffgw*"}},
		// Leading zeros (octal to bash arithmetic), empty and unsafe paths, values missing.
		{"fmnist_c.sh", []string{"--seeds", "010"}, `--seeds takes a whole number, not "010"`, nil},
		{"fmnist_c.sh", []string{"--samples", "08"}, `--samples takes a whole number, not "08"`, nil},
		{"appg.sh", []string{"--out", ""}, "--out takes a value, not an empty word", nil},
		{"fsvi_table1.sh", []string{"--out", "runs/a b"}, "--out takes a path without white space", nil},
		{"j1settings.sh", []string{"--out", "runs/x*"}, "--out takes a path without white space", nil},
		{"fsvi_table1.sh", []string{"--temperature", "0.1 --epochs 500"}, "--temperature takes a positive number", nil},
		{"fsvi_table1.sh", []string{"--fsvi-covariance", "full"}, "--fsvi-covariance full is not joint or per_output", nil},
		{"hmc_toy.sh", []string{"--seeds", "3"}, "hmc_toy.sh: unknown option --seeds", nil},
		{"convert_eval.sh", []string{"--quick", "extra"}, "usage: bench/convert_eval.sh", nil},
		{"fig3.sh", []string{"--png"}, "fig3.sh: --png needs a value", nil},
		{"mixture.sh", []string{"--groups", "0"}, "--groups and --epochs must be at least 1", nil},
		{"globalu.sh", []string{"--size", "0"}, "--epochs, --size and --samples must be at least 1", nil},
	} {
		dir := t.TempDir() + "/out"
		marker := t.TempDir() + "/ran"
		args := make([]string, len(tc.args))
		for i, a := range tc.args {
			args[i] = strings.ReplaceAll(a, codeWord, "PATH[$(touch "+marker+")]")
		}
		if tc.script == "throughput.sh" || tc.script == "hmc_toy.sh" || tc.script == "convert_eval.sh" {
			// no --out before the positional arguments
		} else if len(args) < 1 || args[0] != "--out" {
			args = append([]string{"--out", dir}, args...)
		}
		cmd := exec.Command(bash, append([]string{"../bench/" + tc.script}, args...)...)
		cmd.Env = os.Environ()
		for _, e := range tc.env {
			cmd.Env = append(cmd.Env, strings.ReplaceAll(e, codeWord, "PATH[$(touch "+marker+")]"))
		}
		out, err := cmd.CombinedOutput()
		if err == nil || !strings.Contains(string(out), tc.want) {
			t.Errorf("%s %q: err %v, output %q, want an error containing %q", tc.script, args, err, out, tc.want)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%s %q ran the command in an option's value", tc.script, args)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("%s %q wrote %d entries to --out before refusing", tc.script, tc.args, len(entries))
		}
	}
}

// TestParseOpts: bench/lib/opts.sh's parse_opts on its own — types, QUICK's defaults (only for
// what the command line did not give, in either order), positional words, "--", and the VARset
// flags, which start at 0 whatever the environment holds.
func TestParseOpts(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	const script = `set -euo pipefail
source ../bench/lib/opts.sh
seeds=3 lr=1e-3 out=runs pos=()
parse_opts "usage: t" "seeds=1 lr=0.1" --seeds=seeds:int --lr=lr:pos --out=out:path @pos:2 -- "$@"
echo "seeds=$seeds lr=$lr out=$out quick=$quick seedsset=$seedsset lrset=$lrset pos=${pos[*]}"`
	for _, tc := range []struct {
		args []string
		env  string
		want string // the line printed, or the start of the error
		code int
	}{
		{nil, "", "seeds=3 lr=1e-3 out=runs quick=0 seedsset=0 lrset=0 pos=", 0},
		{nil, "seedsset=1 lrset=1 quick=1", "seeds=3 lr=1e-3 out=runs quick=0 seedsset=0 lrset=0 pos=", 0},
		{[]string{"--quick"}, "", "seeds=1 lr=0.1 out=runs quick=1 seedsset=0 lrset=0 pos=", 0},
		{[]string{"--seeds", "5", "--quick"}, "", "seeds=5 lr=0.1 out=runs quick=1 seedsset=1 lrset=0 pos=", 0},
		{[]string{"--quick", "--seeds", "5"}, "", "seeds=5 lr=0.1 out=runs quick=1 seedsset=1 lrset=0 pos=", 0},
		{[]string{"a", "--lr", "3e-4", "b"}, "", "seeds=3 lr=3e-4 out=runs quick=0 seedsset=0 lrset=1 pos=a b", 0},
		{[]string{"--", "-x", "--seeds"}, "", "seeds=3 lr=1e-3 out=runs quick=0 seedsset=0 lrset=0 pos=-x --seeds", 0},
		{[]string{"--out", "/tmp/a-b_c.d"}, "", "seeds=3 lr=1e-3 out=/tmp/a-b_c.d quick=0 seedsset=0 lrset=0 pos=", 0},
		{[]string{"a", "b", "c"}, "", "usage: t", 2},
		{[]string{""}, "", "usage: t", 2},
		{[]string{"--seeds"}, "", "usage: t", 2},
		{[]string{"--bogus", "1"}, "", "usage: t", 2},
		{[]string{"--seeds", "010"}, "", `--seeds takes a whole number, not "010"`, 2},
		{[]string{"--seeds", "-1"}, "", `--seeds takes a whole number, not "-1"`, 2},
		{[]string{"--seeds", ""}, "", "--seeds takes a value, not an empty word", 2},
		{[]string{"--lr", "0"}, "", `--lr takes a positive number, not "0"`, 2},
		{[]string{"--out", "a b"}, "", "--out takes a path without white space", 2},
		{[]string{"--out", "runs/*"}, "", "--out takes a path without white space", 2},
		{[]string{"--out", "runs/[x]"}, "", "--out takes a path without white space", 2},
		{[]string{"--out", "-rf"}, "", "--out takes a path without white space", 2},
	} {
		cmd := exec.Command(bash, append([]string{"-c", script, "parse_opts_test"}, tc.args...)...)
		cmd.Env = os.Environ()
		if tc.env != "" {
			cmd.Env = append(cmd.Env, strings.Fields(tc.env)...)
		}
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != tc.code || !strings.HasPrefix(string(out), tc.want) {
			t.Errorf("parse_opts %q (env %q): exit %d, output %q; want exit %d, output starting %q", tc.args, tc.env, code, out, tc.code, tc.want)
		}
	}
}
