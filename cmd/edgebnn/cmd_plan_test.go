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
