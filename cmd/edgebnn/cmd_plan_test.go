//go:build !device

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPlanCommand(t *testing.T) {
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	args := []string{"plan", "--arch", filepath.Join(d, "model.txt"), "--config", filepath.Join(d, "inference_config.json")}
	var rep struct {
		Parameters   int64 `json:"parameters"`
		FileBytes    int64 `json:"file_bytes"`
		RuntimeBytes int64 `json:"runtime_bytes"`
		Fits         *bool `json:"fits"`
	}
	runCLIJSON(t, &rep, append(args, "--json", "--board", "rpi0")...)
	// Independent count: two inducing layers 16×24 (784+1 → 128, 128+1 → 10), diagonal q(U).
	ind := func(r, c, dOut, dIn int64) int64 { return r*dOut + c*dIn + r + c + 1 + 2*r*c }
	if want := ind(16, 24, 128, 785) + ind(16, 24, 10, 129); rep.Parameters != want {
		t.Errorf("parameters %d, want %d", rep.Parameters, want)
	}
	if rep.Fits == nil || !*rep.Fits || rep.RuntimeBytes <= rep.FileBytes {
		t.Errorf("plan = %+v", rep)
	}
	// The planned file size is exact: it equals the converted fixture's (f32, no compression).
	out := convertFixture(t, "mlp_ffgu")
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if rep.FileBytes != st.Size() {
		t.Errorf("planned %d bytes, converted file has %d", rep.FileBytes, st.Size())
	}
	code, stdout, _ := runCLI(append(args, "--board", "rpi0")...)
	if code != 0 || !strings.Contains(stdout, "fits its budget") || !strings.Contains(stdout, "runtime total") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	runCases(t, []cliCase{
		{name: "no arch", args: []string{"plan"}, wantCode: 2, wantStderr: []string{"missing --arch"}},
		{name: "bad board", args: append(args, "--board", "cray1"), wantCode: 2, wantStderr: []string{`unknown board "cray1"`}},
		{name: "bad arch", args: []string{"plan", "--arch", "resnet9000"}, wantCode: 1, wantStderr: []string{"resnet9000"}},
		{name: "help", args: []string{"plan", "-h"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn plan"}},
		{name: "dir without board", args: append(args, "--dir", t.TempDir()), wantCode: 2, wantStderr: []string{"--dir", "--board"}},
		// --classes defaults to the built-in ResNets' 10 only for them: a regression-shaped MLP
		// had been refused with "--classes 10 but the architecture's last layer has 1 outputs"
		{name: "one output", args: []string{"plan", "--arch", "mlp:13-50-1"}, wantStdout: []string{"parameters"}},
		{name: "classes checked", args: []string{"plan", "--arch", "mlp:13-50-1", "--classes", "3"}, wantCode: 1, wantStderr: []string{"--classes 3", "1 outputs"}},
		{name: "resnet default classes", args: []string{"plan", "--arch", "resnet18", "--json"}, wantStdout: []string{`"parameters": 11`}},
	})
}

// TestPlanOut: plan --out writes the planned model, which loads and predicts, has the planned
// size, and is written atomically (an unwritable directory leaves nothing behind).
func TestPlanOut(t *testing.T) {
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	dir := t.TempDir()
	out := filepath.Join(dir, "planned.ebnn")
	args := []string{"plan", "--arch", filepath.Join(d, "model.txt"), "--config", filepath.Join(d, "inference_config.json"), "--dtype", "f16"}
	var rep struct {
		FileBytes int64 `json:"file_bytes"`
	}
	runCLIJSON(t, &rep, append(args, "--json", "--out", out)...)
	st, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() != rep.FileBytes {
		t.Errorf("wrote %d bytes, planned %d", st.Size(), rep.FileBytes)
	}
	runCases(t, []cliCase{
		{name: "bench planned", args: []string{"bench", "--model", out, "--count", "2"}, wantStdout: []string{"predictions       2"}},
		{name: "missing dir", args: append(args, "--out", filepath.Join(dir, "no", "such", "m.ebnn")), wantCode: 1,
			wantStderr: []string{"m.ebnn"}},
	})
}

// TestPlanKeepF16Hint: an fp16 plan that does not fit a board's budget says whether it would
// with --keep-f16 (an Ensemble-W of four 1024-256-10 MLPs with BatchNorm: about 4.4 MB at run
// time, 3.3 MB with the fp16 weights kept as stored, against a 4 000 000-byte budget), and
// --keep-f16 then fits; a float32 plan gets no such line.
func TestPlanKeepF16Hint(t *testing.T) {
	dir := t.TempDir()
	arch := filepath.Join(dir, "model.txt")
	mustWrite(t, arch, []byte(`Sequential(
  (0): Linear(in_features=1024, out_features=256, bias=True)
  (1): BatchNorm1d(256, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU()
  (3): Linear(in_features=256, out_features=10, bias=True)
)
`))
	boardDir := filepath.Join(dir, "boards")
	if err := os.Mkdir(boardDir, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(boardDir, "tiny.json"), []byte(`{"name": "tiny", "description": "a 4 MB budget", "goos": "linux",
 "goarch": "arm64", "qemu": "qemu-aarch64-static", "qemu_cpu": "cortex-a53", "ram_bytes": 16000000,
 "budget_bytes": 4000000, "simd": {"neon": true}}`))
	base := []string{"plan", "--arch", arch, "--members", "4", "--board", "tiny", "--dir", boardDir}
	runCases(t, []cliCase{
		{name: "f16", args: append(base, "--dtype", "f16"), wantStdout: []string{"does NOT fit its budget", "with --keep-f16    would fit ("}},
		{name: "f16 kept", args: append(base, "--dtype", "f16", "--keep-f16"), wantStdout: []string{"board tiny         fits its budget"}},
		{name: "f32 kept", args: append(base, "--keep-f16"), wantCode: 2, wantStderr: []string{"--keep-f16 sizes an fp16 model", "give --dtype f16"}},
	})
	if out := runOK(t, append(base, "--dtype", "f32")...); strings.Contains(out, "--keep-f16") || !strings.Contains(out, "does NOT fit") {
		t.Errorf("f32 plan:\n%s", out)
	}
}
