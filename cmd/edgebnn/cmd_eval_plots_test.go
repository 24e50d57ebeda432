//go:build !device

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train"
)

// TestEvalPlotsRefuseOODInput: eval --plots refuses a plot path that is the --ood digits:PATH
// file it reads (it had been written over with the PNG), and leaves the file as it was.
func TestEvalPlotsRefuseOODInput(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "m.ebnn")
	mustWrite(t, model, demoModel)
	prefix := filepath.Join(dir, "x")
	digits := prefix + ".selective.png"
	old := []byte("the digits data\n")
	mustWrite(t, digits, old)
	code, stdout, stderr := runCLI("eval", "--data", "fmnist", "--ood", "digits:"+digits, "--plots", prefix, model)
	if code == 0 || !strings.Contains(stderr, "--plots") || !strings.Contains(stderr, digits) {
		t.Errorf("exit %d, stderr %q, want --plots refused for %s\n%s", code, stderr, digits, stdout)
	}
	if got, err := os.ReadFile(digits); err != nil || !bytes.Equal(got, old) {
		t.Errorf("the --ood file was changed: %q, %v", got, err)
	}
}

// TestEvalPlotsKeptOnLateFailure: a run of eval --plots that fails in --psis (here: the .model
// file train writes beside its checkpoint, which PSIS cannot resume) leaves the plots that were
// there byte for byte; a run that succeeds replaces them.
func TestEvalPlotsKeptOnLateFailure(t *testing.T) {
	dir := t.TempDir()
	ckpt := trainMoons(t, dir, "ffg_w")
	model := (&train.Trainer{Config: train.Config{Out: ckpt}}).ModelPath()
	prefix := filepath.Join(dir, "p")
	plots := []string{prefix + ".reliability.png", prefix + ".selective.png"}
	for _, p := range plots {
		mustWrite(t, p, []byte("OLD "+p))
	}
	code, stdout, stderr := runCLI("eval", "--psis", "--psis-draws", "200", "--samples", "4", "--plots", prefix, model)
	if code == 0 || !strings.Contains(stderr, "--psis") {
		t.Fatalf("exit %d, stderr %q, want the --psis error\n%s", code, stderr, stdout)
	}
	for _, p := range plots {
		if got, err := os.ReadFile(p); err != nil || string(got) != "OLD "+p {
			t.Errorf("%s changed by a failed run: %d bytes, %v", p, len(got), err)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 5 { // arch.json, ffg_w.ebnn, ffg_w.model.ebnn, the two plots
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("files left: %v", names)
	}
	runOK(t, "eval", "--samples", "4", "--plots", prefix, ckpt)
	for _, p := range plots {
		if got, err := os.ReadFile(p); err != nil || !bytes.HasPrefix(got, []byte("\x89PNG")) {
			t.Errorf("%s not replaced by a PNG: %d bytes, %v", p, len(got), err)
		}
	}
}
