//go:build !device

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConvertCommand(t *testing.T) {
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	out := filepath.Join(t.TempDir(), "m.ebnn")
	stdout := runOK(t, "convert", "--checkpoint", filepath.Join(d, "state_dict.safetensors"),
		"--config", filepath.Join(d, "inference_config.json"), "--arch", filepath.Join(d, "model.txt"),
		"--out", out, "--dtype", "f16", "--prune", "0.5", "--compress", "zstd",
		"--validate", filepath.Join(d, "reference.safetensors"), "--samples", "4")
	checkContains(t, "output", stdout, "LAYER", "inducing", "total", "wrote "+out, "deterministic network in fp32",
		"pruned 12072 of 24144 Z entries", "unpruned f32", "written file", "difference", "ECE")
	tests := []cliCase{
		{name: "no checkpoint", args: []string{"convert", "--out", "x"}, wantCode: 2, wantStderr: []string{"missing --checkpoint"}},
		{name: "no out", args: []string{"convert", "--checkpoint", "x"}, wantCode: 2, wantStderr: []string{"missing --out"}},
		{name: "bad shape", args: []string{"convert", "--checkpoint", "x", "--out", "y", "--input-shape", "1,2"}, wantCode: 2, wantStderr: []string{"input shape"}},
		// Storage settings out of their domain are usage errors (exit 2), refused before any work.
		{name: "bad dtype", args: []string{"convert", "--checkpoint", "x", "--out", "y", "--dtype", "f8"}, wantCode: 2, wantStderr: []string{`dtype "f8"`}},
		{name: "bad compress", args: []string{"convert", "--checkpoint", "x", "--out", "y", "--compress", "gzip"}, wantCode: 2, wantStderr: []string{`compression "gzip"`}},
		{name: "bad prune", args: []string{"convert", "--checkpoint", "x", "--out", "y", "--prune", "1.5"}, wantCode: 2, wantStderr: []string{"prune fraction 1.5"}},
		{name: "bad f16 policy", args: []string{"convert", "--checkpoint", "x", "--out", "y", "--f16-policy", "xyz"}, wantCode: 2, wantStderr: []string{`policy "xyz"`}},
		{name: "plan bad dtype", args: []string{"plan", "--arch", "mlp:4-2", "--dtype", "f8"}, wantCode: 2, wantStderr: []string{`dtype "f8"`}},
		{name: "train bad posterior", args: []string{"train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-4-1", "--posterior", "bogus"},
			wantCode: 2, wantStderr: []string{`posterior "bogus"`}},
		{name: "train bad data", args: []string{"train", "--data", "bogus", "--task", "regression", "--arch", "mlp:1-4-1"},
			wantCode: 2, wantStderr: []string{`data "bogus"`}},
		{name: "train bad toy1d", args: []string{"train", "--data", "toy1d:1", "--task", "regression", "--arch", "mlp:1-4-1"},
			wantCode: 2, wantStderr: []string{"toy1d:N with N in [2,"}},
		{name: "train bad epochs", args: []string{"train", "--data", "toy1d", "--task", "regression", "--arch", "mlp:1-4-1", "--epochs", "-1"},
			wantCode: 2, wantStderr: []string{"epochs -1"}},
		{name: "over input", args: []string{"convert", "--checkpoint", out, "--out", out}, wantCode: 1, wantStderr: []string{"refusing to write"}},
		{name: "config with a model file", args: []string{"convert", "--checkpoint", out, "--config", filepath.Join(d, "inference_config.json"),
			"--out", filepath.Join(t.TempDir(), "c.ebnn")}, wantCode: 1, wantStderr: []string{"carries its own posteriors"}},
		{name: "missing arch", args: []string{"convert", "--checkpoint", filepath.Join(d, "state_dict.pt"), "--out", filepath.Join(t.TempDir(), "o")},
			wantCode: 1, wantStderr: []string{"needs an architecture"}},
		{name: "help", args: []string{"convert", "-h"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn convert", "--checkpoint", "--allow-clamp"}},
	}
	runCases(t, tests)
	// Re-converting our own model file needs no config or architecture.
	out2 := filepath.Join(t.TempDir(), "m2.ebnn")
	if code, _, stderr := runCLI("convert", "--checkpoint", out, "--out", out2, "--json"); code != 0 {
		t.Fatalf("re-convert: exit %d: %s", code, stderr)
	}
}

// TestConvertHostileCheckpoints: truncated and corrupted checkpoints and architectures give
// errors, never panics.
func TestConvertHostileCheckpoints(t *testing.T) {
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	dir := t.TempDir()
	for _, src := range []string{"state_dict.pt", "state_dict.safetensors", "model.txt", "inference_config.json"} {
		data, err := os.ReadFile(filepath.Join(d, src))
		if err != nil {
			t.Fatal(err)
		}
		step := max(len(data)/40, 1)
		for cut := 0; cut < len(data); cut += step {
			p := filepath.Join(dir, "cut-"+src)
			mustWrite(t, p, data[:cut])
			files := map[string]string{"state_dict.pt": filepath.Join(d, "state_dict.pt"), "model.txt": filepath.Join(d, "model.txt"),
				"inference_config.json": filepath.Join(d, "inference_config.json")}
			key := src
			if src == "state_dict.safetensors" {
				key = "state_dict.pt"
			}
			files[key] = p
			code, _, stderr := runCLI("convert", "--checkpoint", files["state_dict.pt"], "--config", files["inference_config.json"],
				"--arch", files["model.txt"], "--out", filepath.Join(dir, "out.ebnn"))
			if code != 1 && !(code == 0 && src == "model.txt") {
				t.Errorf("%s cut at %d: exit %d: %s", src, cut, code, stderr)
			}
		}
	}
}

func TestConvertJSON(t *testing.T) {
	d := filepath.Join(fixtureRoot, "cnn_ensembleu")
	out := filepath.Join(t.TempDir(), "c.ebnn")
	var rep map[string]any
	runCLIJSON(t, &rep, "convert", "--checkpoint", filepath.Join(d, "state_dict.pt"), "--config",
		filepath.Join(d, "inference_config.json"), "--arch", filepath.Join(d, "model.txt"), "--out", out, "--json")
	for _, k := range []string{"parameters", "deterministic_parameters", "file_bytes", "deterministic_fp32_bytes", "layers"} {
		if _, ok := rep[k]; !ok {
			t.Errorf("JSON report lacks %q", k)
		}
	}
}

// TestConvertValidateRaw: --validate feeds its inputs through the model's stored preprocessing,
// as predict does. The reference inputs are already scaled to [0, 1]: declared raw pixels
// (--input-scale 1/255) they become near-zero images, and the score must show it — it used to
// be the unpreprocessed network's 80 %.
func TestConvertValidateRaw(t *testing.T) {
	d := filepath.Join(fixtureRoot, "mlp_ffgu")
	score := func(extra ...string) float64 {
		t.Helper()
		args := append([]string{"convert", "--checkpoint", filepath.Join(d, "state_dict.safetensors"),
			"--config", filepath.Join(d, "inference_config.json"), "--arch", filepath.Join(d, "model.txt"),
			"--out", filepath.Join(t.TempDir(), "m.ebnn"), "--validate", filepath.Join(d, "reference.safetensors"), "--samples", "4", "--json"}, extra...)
		var rep struct {
			Validation struct {
				File struct{ Accuracy float64 } `json:"file"`
			} `json:"validation"`
		}
		if err := json.Unmarshal([]byte(runOK(t, args...)), &rep); err != nil {
			t.Fatal(err)
		}
		return rep.Validation.File.Accuracy
	}
	plain, scaled := score(), score("--input-scale", "0.00392156862745098")
	t.Logf("accuracy %.4f without preprocessing, %.4f with --input-scale 1/255", plain, scaled)
	if !(plain > 0.7 && scaled < plain-0.3) {
		t.Errorf("accuracy %.4f plain, %.4f with a preprocessing the data do not match: want the second far lower", plain, scaled)
	}
}

// TestConvertPruneMembers: --prune prunes every member's Z of a mixture, not member 0's alone
// (which left the others dense under a report of the whole fraction).
func TestConvertPruneMembers(t *testing.T) {
	a := convertFixture(t, "mlp_ffgu")
	out := filepath.Join(t.TempDir(), "ab.ebnn")
	stdout := runOK(t, "convert", "--checkpoint", a, "--member", a, "--prune", "0.5", "--out", out)
	checkContains(t, "convert output", stdout, "pruned 24144 of 48288 Z entries")
	insp := runOK(t, "inspect", out)
	for _, name := range []string{"member1/1.z_row", "member1/3.z_col"} {
		for _, line := range strings.Split(insp, "\n") {
			if strings.HasPrefix(line, name+" ") && !strings.Contains(line, "Sparse") {
				t.Errorf("%s is stored dense: %s", name, line)
			}
		}
	}
}
