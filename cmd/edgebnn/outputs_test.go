//go:build unix

package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, dst, b)
}

// runCLITimeout runs the CLI in process and fails the test if it does not return within d
// (an output that is a FIFO must be refused, not opened).
func runCLITimeout(t *testing.T, d time.Duration, args ...string) (int, string, string) {
	t.Helper()
	var code int
	var stdout, stderr string
	testutil.Within(t, d, "edgebnn "+strings.Join(args, " "), func() error {
		code, stdout, stderr = runCLI(args...)
		return nil
	})
	return code, stdout, stderr
}

// linkTo returns a hostile output path maker that makes name a link (os.Symlink or os.Link) to
// the input in and returns name.
func linkTo(link func(oldname, newname string) error, in, name string) func(*testing.T) string {
	return func(t *testing.T) string {
		if err := link(in, name); err != nil {
			t.Fatal(err)
		}
		return name
	}
}

// outputCommand is an output-writing command line for the hostile-output tests.
type outputCommand struct {
	name string
	// args returns the command line writing its output to out; in the working directory dir it
	// has copies of its inputs, named in inputs.
	args   func(dir, out string) []string
	inputs []string
	// outFile maps the --out value to the file written (eval --plots takes a prefix).
	outFile func(out string) string
	// missingDirOK: the command creates a missing output directory (train).
	missingDirOK bool
}

// fixtureInputs copies the mlp_ffgu fixture's files into dir.
func fixtureInputs(t *testing.T, dir string) {
	t.Helper()
	d, err := filepath.Abs(filepath.Join(fixtureRoot, "mlp_ffgu"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"state_dict.pt", "inference_config.json", "model.txt", "reference.safetensors"} {
		copyFile(t, filepath.Join(d, f), filepath.Join(dir, f))
	}
}

// trainInputs writes a tiny regression CSV and a train config into dir.
func trainInputs(t *testing.T, dir string) {
	t.Helper()
	var b strings.Builder
	b.WriteString("x,y\n")
	for i := range 20 {
		x := float64(i)/10 - 1
		fmt.Fprintf(&b, "%g,%g\n", x, 2*x+0.1)
	}
	mustWrite(t, filepath.Join(dir, "data.csv"), []byte(b.String()))
	cfg := `{"data": "csv:data.csv", "task": "regression", "arch": "mlp:1-4-1", "posterior": "deterministic",
  "epochs": 1, "batch_size": 10, "test_fraction": 0}`
	mustWrite(t, filepath.Join(dir, "cfg.json"), []byte(cfg))
}

// outputCommands lists every command that writes files.
func outputCommands() []outputCommand {
	same := func(out string) string { return out }
	return []outputCommand{
		{
			name: "convert",
			args: func(dir, out string) []string {
				return []string{"convert", "--checkpoint", "state_dict.pt", "--config", "inference_config.json",
					"--arch", "model.txt", "--validate", "reference.safetensors", "--samples", "2", "--out", out}
			},
			inputs:  []string{"state_dict.pt", "inference_config.json", "model.txt", "reference.safetensors"},
			outFile: same,
		},
		{
			name: "plan",
			args: func(dir, out string) []string {
				return []string{"plan", "--arch", "model.txt", "--config", "inference_config.json", "--out", out}
			},
			inputs:  []string{"model.txt", "inference_config.json"},
			outFile: same,
		},
		{
			name: "train",
			args: func(dir, out string) []string {
				// Every case is refused before the architecture or inference config is used.
				return []string{"train", "--config", "cfg.json", "--arch", "model.txt", "--inference", "inference_config.json",
					"--quiet", "--no-plots", "--out", out}
			},
			inputs:       []string{"cfg.json", "data.csv", "model.txt", "inference_config.json"},
			outFile:      same,
			missingDirOK: true,
		},
		{
			name: "eval",
			args: func(dir, out string) []string {
				return []string{"eval", "--data", "csv:data.csv", "--plots", out, "model.txt"}
			},
			inputs:  []string{"model.txt", "data.csv"},
			outFile: func(out string) string { return out + ".reliability.png" },
		},
	}
}

// TestHostileOutputs: for every output-writing command, an output that is a FIFO, a symbolic
// link, a device, one of the command's inputs (by the same path, another relative spelling, a
// symbolic or a hard link) or in a missing directory is refused quickly with a message naming
// it, and the existing file (and the inputs) are left untouched.
func TestHostileOutputs(t *testing.T) {
	for _, oc := range outputCommands() {
		t.Run(oc.name, func(t *testing.T) {
			skipAbsent(t, oc.name)
			dir := t.TempDir()
			fixtureInputs(t, dir)
			trainInputs(t, dir)
			t.Chdir(dir)
			snapshot := map[string]string{}
			for _, in := range oc.inputs {
				b, err := os.ReadFile(in)
				if err != nil {
					t.Fatal(err)
				}
				snapshot[in] = string(b)
			}
			type hostile struct {
				name string
				// out returns the --out value; the file it names (oc.outFile) is prepared.
				out  func(t *testing.T) string
				want string // in stderr
			}
			cases := []hostile{
				{"fifo", func(t *testing.T) string {
					testutil.Mkfifo(t, oc.outFile("fifo"))
					return "fifo"
				}, "named pipe"},
				{"symlink", func(t *testing.T) string {
					mustWrite(t, "target", []byte("keep"))
					if err := os.Symlink("target", oc.outFile("link")); err != nil {
						t.Fatal(err)
					}
					return "link"
				}, "symbolic link"},
				{"directory", func(t *testing.T) string {
					if err := os.Mkdir(oc.outFile("adir"), 0o755); err != nil {
						t.Fatal(err)
					}
					return "adir"
				}, "directory"},
			}
			if oc.name != "eval" { // eval's outputs are <prefix>.*.png
				cases = append(cases, hostile{"device", func(t *testing.T) string {
					if st, err := os.Lstat(os.DevNull); err != nil || st.Mode()&os.ModeCharDevice == 0 {
						t.Skipf("%s is not a character device here (%v)", os.DevNull, err)
					}
					return os.DevNull
				}, "device"})
			}
			for _, in := range oc.inputs {
				if oc.outFile("x") != "x" {
					// A prefix: make an input that is also a plot path.
					continue
				}
				cases = append(cases,
					hostile{"input " + in, func(*testing.T) string { return in }, "input"},
					hostile{"input ./" + in, func(*testing.T) string { return "./" + in }, "input"},
					hostile{"input absolute " + in, func(*testing.T) string { return filepath.Join(dir, in) }, "input"},
					hostile{"input via ../ " + in, func(*testing.T) string {
						return filepath.Join("..", filepath.Base(dir), in)
					}, "input"},
					hostile{"symlink to input " + in, linkTo(os.Symlink, in, "l-"+in), "symbolic link"},
					hostile{"hard link to input " + in, linkTo(os.Link, in, "h-"+in), "input"},
				)
			}
			if oc.name == "eval" {
				cases = append(cases, hostile{"input as a plot", func(t *testing.T) string {
					copyFile(t, "model.txt", "m.reliability.png")
					if err := os.Rename("model.txt", "model.txt.bak"); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink("m.reliability.png", "model.txt"); err != nil {
						t.Fatal(err)
					}
					return "m"
				}, "input"})
			}
			if !oc.missingDirOK {
				cases = append(cases, hostile{"missing directory", func(*testing.T) string {
					return filepath.Join("missing", "out")
				}, "does not exist"})
			}
			for _, hc := range cases {
				t.Run(hc.name, func(t *testing.T) {
					out := hc.out(t)
					file := oc.outFile(out)
					before, lerr := os.Lstat(file)
					code, stdout, stderr := runCLITimeout(t, 20*time.Second, oc.args(dir, out)...)
					if code != 1 {
						t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
					}
					if !strings.Contains(stderr, hc.want) || !strings.Contains(stderr, out) {
						t.Errorf("stderr %q does not name %s and %q", stderr, out, hc.want)
					}
					if lerr == nil {
						after, err := os.Lstat(file)
						if err != nil || after.Mode() != before.Mode() || (before.Mode().IsRegular() && !os.SameFile(before, after)) {
							t.Errorf("%s was replaced: before %v, after %v (%v)", file, before.Mode(), after, err)
						}
					} else if _, err := os.Lstat(file); err == nil {
						t.Errorf("%s was created", file)
					}
					for in, want := range snapshot {
						if b, err := os.ReadFile(in); err != nil || string(b) != want {
							t.Errorf("input %s changed (%v)", in, err)
						}
					}
					if b, err := os.ReadFile("target"); err == nil && string(b) != "keep" {
						t.Errorf("symlink target overwritten: %q", b)
					}
					ents, _ := os.ReadDir(".")
					for _, e := range ents {
						if strings.Contains(e.Name(), ".tmp") {
							t.Errorf("temporary %s left behind", e.Name())
						}
					}
				})
				if oc.name == "eval" {
					// restore the model for the next case
					if _, err := os.Lstat("model.txt.bak"); err == nil {
						os.Remove("model.txt")
						os.Rename("model.txt.bak", "model.txt")
					}
				}
			}
		})
	}
}

// TestConvertFailedValidateWritesNothing: a conversion whose --validate fails leaves the output
// as it was (absent, or the previous file) and no temporary file beside it.
func TestConvertFailedValidateWritesNothing(t *testing.T) {
	skipAbsent(t, "convert")
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	tests := []struct {
		name     string
		validate string
		previous string // content of an existing output; "" for none
	}{
		{"missing data, new output", filepath.Join(t.TempDir(), "missing.safetensors"), ""},
		{"not safetensors, new output", filepath.Join(d, "model.txt"), ""},
		{"no inputs tensor, existing output", filepath.Join(d, "state_dict.safetensors"), "previous model"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "m.ebnn")
			if tc.previous != "" {
				mustWrite(t, out, []byte(tc.previous))
			}
			code, stdout, stderr := runCLI("convert", "--checkpoint", filepath.Join(d, "state_dict.pt"),
				"--config", filepath.Join(d, "inference_config.json"), "--arch", filepath.Join(d, "model.txt"),
				"--validate", tc.validate, "--samples", "2", "--out", out)
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, stdout, stderr)
			}
			if strings.Contains(stderr, ".tmp-") {
				t.Errorf("stderr names the staging path: %s", stderr)
			}
			b, err := os.ReadFile(out)
			switch {
			case tc.previous == "" && err == nil:
				t.Errorf("%s was written despite the failed validation", out)
			case tc.previous != "" && string(b) != tc.previous:
				t.Errorf("%s changed despite the failed validation (%v)", out, err)
			}
			ents, _ := os.ReadDir(dir)
			if want := map[bool]int{true: 0, false: 1}[tc.previous == ""]; len(ents) != want {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("directory holds %v, want %d file(s)", names, want)
			}
		})
	}
}

// TestTrainOutputs: train creates a missing output directory, writes its checkpoint, model,
// metrics log and plots there with no temporary file left, and refuses --out given in the
// config file as the config file itself.
func TestTrainOutputs(t *testing.T) {
	skipAbsent(t, "train")
	dir := t.TempDir()
	trainInputs(t, dir)
	t.Chdir(dir)
	runOK(t, "train", "--config", "cfg.json", "--quiet", "--out", filepath.Join("runs", "a", "m.ebnn"))
	ents, err := os.ReadDir(filepath.Join("runs", "a"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
		if strings.Contains(e.Name(), ".tmp") {
			t.Errorf("temporary %s left behind", e.Name())
		}
	}
	for _, want := range []string{"m.ebnn", "m.model.ebnn", "m.metrics.jsonl", "m.curves.png"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("no %s among %v", want, names)
		}
	}
	log, err := os.ReadFile(filepath.Join("runs", "a", "m.metrics.jsonl"))
	if err != nil || !strings.Contains(string(log), `"epoch":1`) {
		t.Errorf("metrics log %q (%v) lacks epoch 1", log, err)
	}
	// The config names itself as the output.
	cfg, err := os.ReadFile("cfg.json")
	if err != nil {
		t.Fatal(err)
	}
	self := strings.Replace(string(cfg), "{", `{"out": "cfg.json", `, 1)
	mustWrite(t, "cfg.json", []byte(self))
	code, _, stderr := runCLI("train", "--config", "cfg.json", "--quiet")
	if code != 1 || !strings.Contains(stderr, "input") {
		t.Fatalf("exit %d, stderr %q; want a refusal", code, stderr)
	}
	if b, _ := os.ReadFile("cfg.json"); string(b) != self {
		t.Errorf("cfg.json was overwritten")
	}
}

// TestTrainResumeOutputs: --resume may continue into the run's own per-epoch checkpoint (it is
// replaced atomically), but its final --out must not be the checkpoint resumed from; the
// metrics log of a resumed run holds every epoch.
func TestTrainResumeOutputs(t *testing.T) {
	skipAbsent(t, "train")
	dir := t.TempDir()
	trainInputs(t, dir)
	t.Chdir(dir)
	runOK(t, "train", "--config", "cfg.json", "--quiet", "--no-plots", "--epochs", "2", "--checkpoint-min-steps", "0", "--out", "m.ebnn")
	final, err := os.ReadFile("m.ebnn")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		ok   bool
	}{
		{"over the resumed checkpoint", []string{"--resume", "m.ebnn", "--epochs", "3"}, false},
		{"over the resumed checkpoint, explicit --out", []string{"--resume", "m.ebnn", "--epochs", "3", "--out", "./m.ebnn"}, false},
		{"over the resumed checkpoint by a link", []string{"--resume", "m.ebnn", "--epochs", "3", "--out", "hard.ebnn"}, false},
		{"new output", []string{"--resume", "m.ebnn", "--epochs", "3", "--out", "m3.ebnn"}, true},
		{"from the per-epoch checkpoint", []string{"--resume", "m.last.ebnn", "--epochs", "4", "--checkpoint-min-steps", "0", "--out", "m4.ebnn"}, true},
		{"into the per-epoch checkpoint it resumes from", []string{"--resume", "m4.last.ebnn", "--epochs", "5", "--out", "m4.ebnn"}, true},
	}
	if err := os.Link("m.ebnn", "hard.ebnn"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(append([]string{"train", "--quiet", "--no-plots"}, tc.args...)...)
			if (code == 0) != tc.ok {
				t.Fatalf("exit %d, want ok=%v\nstdout: %s\nstderr: %s", code, tc.ok, stdout, stderr)
			}
			if !tc.ok && (code == 0 || !strings.Contains(stderr, "input")) {
				t.Errorf("exit %d, stderr %q: want a refusal naming the input", code, stderr)
			}
			// Without --out: the default output is the checkpoint itself, and the refusal says
			// what to do.
			if !slices.Contains(tc.args, "--out") && !tc.ok && !strings.Contains(stderr, "give --out") {
				t.Errorf("stderr %q does not say to give --out", stderr)
			}
			if b, err := os.ReadFile("m.ebnn"); err != nil || !bytes.Equal(b, final) {
				t.Errorf("m.ebnn changed (%v)", err)
			}
		})
	}
	log, err := os.ReadFile("m4.metrics.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `"epoch":`); n != 5 {
		t.Errorf("m4.metrics.jsonl has %d epochs, want 5:\n%s", n, log)
	}
}

// TestTrainSideOutputs: the files train writes beside --out (per-epoch checkpoint, model,
// metrics log, plots) are vetted like --out itself, before any training.
func TestTrainSideOutputs(t *testing.T) {
	skipAbsent(t, "train")
	tests := []struct {
		name    string
		prepare func(t *testing.T) // in the working directory, with cfg.json and data.csv
		want    string
	}{
		{"fifo metrics log", func(t *testing.T) {
			testutil.Mkfifo(t, "m.metrics.jsonl")
		}, "named pipe"},
		{"symlink per-epoch checkpoint", func(t *testing.T) {
			if err := os.Symlink("data.csv", "m.last.ebnn"); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
		{"directory model", func(t *testing.T) {
			if err := os.Mkdir("m.model.ebnn", 0o755); err != nil {
				t.Fatal(err)
			}
		}, "directory"},
		{"plot is the data", func(t *testing.T) {
			if err := os.Link("data.csv", "m.curves.png"); err != nil {
				t.Fatal(err)
			}
		}, "input"},
		{"metrics log is the config", func(t *testing.T) {
			if err := os.Rename("cfg.json", "m.metrics.jsonl"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("m.metrics.jsonl", "cfg.json"); err != nil {
				t.Fatal(err)
			}
		}, "input"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			trainInputs(t, dir)
			t.Chdir(dir)
			tc.prepare(t)
			code, stdout, stderr := runCLITimeout(t, 20*time.Second, "train", "--config", "cfg.json", "--quiet", "--out", "m.ebnn")
			if code != 1 || !strings.Contains(stderr, tc.want) {
				t.Fatalf("exit %d, stderr %q; want 1 and %q\nstdout: %s", code, stderr, tc.want, stdout)
			}
			if strings.Contains(stdout, "epoch") {
				t.Errorf("trained before refusing: %s", stdout)
			}
			if _, err := os.Lstat("m.ebnn"); err == nil {
				t.Error("m.ebnn was written")
			}
		})
	}
}

// TestFailedPlanWritesNothing: a plan that fails after its output was vetted leaves no output
// and no staging directory.
func TestFailedPlanWritesNothing(t *testing.T) {
	skipAbsent(t, "plan")
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	tests := []struct {
		name string
		args []string
	}{
		{"missing config", []string{"--arch", filepath.Join(d, "model.txt"), "--config", filepath.Join(t.TempDir(), "missing.json")}},
		{"bad prune", []string{"--arch", filepath.Join(d, "model.txt"), "--config", filepath.Join(d, "inference_config.json"), "--prune", "2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "p.ebnn")
			code, _, stderr := runCLI(append(append([]string{"plan"}, tc.args...), "--out", out)...)
			if code == 0 {
				t.Fatal("plan succeeded")
			}
			if strings.Contains(stderr, ".tmp-") {
				t.Errorf("stderr names the staging path: %s", stderr)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Errorf("left behind: %v", ents)
			}
		})
	}
}

// TestTrainResumeOutputBeside: without --out a resumed run writes beside the checkpoint it
// resumes, under the recorded name — never at the recorded path itself, which a checkpoint from
// elsewhere would choose (it once replaced whatever file that path named).
func TestTrainResumeOutputBeside(t *testing.T) {
	skipAbsent(t, "train")
	dir := t.TempDir()
	trainInputs(t, dir)
	t.Chdir(dir)
	for _, d := range []string{"a", "b"} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runOK(t, "train", "--config", "cfg.json", "--quiet", "--no-plots", "--epochs", "2", "--out", "a/victim.ebnn")
	before, err := os.ReadFile("a/victim.ebnn")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename("a/victim.ebnn", "b/ckpt.ebnn"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("a/victim.ebnn", before, 0o644); err != nil {
		t.Fatal(err)
	}
	runOK(t, "train", "--resume", "b/ckpt.ebnn", "--epochs", "3", "--quiet", "--no-plots")
	if b, err := os.ReadFile("a/victim.ebnn"); err != nil || !bytes.Equal(b, before) {
		t.Errorf("a/victim.ebnn (the recorded output) changed: %v", err)
	}
	if _, err := os.Stat("b/victim.ebnn"); err != nil {
		t.Errorf("no output beside the checkpoint: %v", err)
	}
}

// TestTrainOutputIsContextInput: fsvi's --context data:PATH is an input like --data: an --out
// over it is refused before anything trains (it was replaced by the checkpoint).
func TestTrainOutputIsContextInput(t *testing.T) {
	skipAbsent(t, "train")
	dir := t.TempDir()
	t.Chdir(dir)
	mustWrite(t, "ctx.csv", []byte("0.5\n-0.5\n1\n"))
	code, _, stderr := runCLI("train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-4-1", "--posterior", "ffg_w",
		"--objective", "fsvi", "--context", "data:ctx.csv", "--epochs", "1", "--quiet", "--no-plots", "--out", "ctx.csv")
	if code != 1 || !strings.Contains(stderr, "input") {
		t.Fatalf("exit %d, stderr %q; want a refusal naming the input", code, stderr)
	}
	if b, _ := os.ReadFile("ctx.csv"); string(b) != "0.5\n-0.5\n1\n" {
		t.Errorf("ctx.csv was overwritten")
	}
}
