package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// TestValidateFailureKeepsOldOutput: when --validate DATA is unusable (here its inputs have 3
// features for a 784-input MLP), Convert fails and leaves the previous output as it was (it had
// already replaced it with the new file before reading DATA; only the CLI staged its output).
func TestValidateFailureKeepsOldOutput(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "model.ebnn")
	old := []byte("previous output, must survive a failed conversion")
	if err := os.WriteFile(out, old, 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "val.safetensors")
	in, err := safetensors.NewF32("inputs", []int{2, 3}, []float32{0, 1, 2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	lab, err := safetensors.NewI64("labels", []int{2}, []int64{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	writeSafetensors(t, data, []safetensors.Tensor{in, lab})
	opts := fixtureOpts("mlp_ffgu", ".safetensors", out)
	opts.Validate = data
	opts.ValidateSamples = 2
	_, err = Convert(opts)
	if err == nil {
		t.Fatal("Convert accepted validation inputs of the wrong width")
	}
	t.Logf("Convert: %v", err)
	got, rerr := os.ReadFile(out)
	if rerr != nil {
		t.Fatalf("after the failed conversion --out is gone: %v", rerr)
	}
	if !bytes.Equal(got, old) {
		t.Errorf("the failed conversion (validation error) replaced --out: %d bytes, want the previous %d", len(got), len(old))
	}
}

// TestPruneWithoutInducingLayers: --prune on a model without inducing layers (here an FFG-W
// model) is an error, as --snr-keep on a model without FFG layers is; it had succeeded with
// "pruned 0 of 0 Z entries" (most likely --snr-keep was meant).
func TestPruneWithoutInducingLayers(t *testing.T) {
	src, _ := writeFFGModel(t)
	rep, err := Convert(Options{Checkpoint: src, Out: filepath.Join(t.TempDir(), "p.ebnn"), Prune: 0.5})
	if err == nil {
		t.Errorf("--prune 0.5 on a model without inducing layers succeeded (pruned %d of %d Z entries); want an error as --snr-keep gives",
			rep.Prune.Pruned, rep.Prune.Entries)
	}
}

// TestF16RangeOnlyForF16Tensors: under --dtype f16 a value
// beyond ±65504 in a tensor the policy keeps in float32 (q(U)'s inducing_mean) converts without
// --allow-clamp and is stored unchanged.
func TestF16RangeOnlyForF16Tensors(t *testing.T) {
	dir := t.TempDir()
	p := editedStateDict(t, "mlp_ffgu", dir, "sd", "1.inducing_mean", func(v []float32) { v[3] = 7e4 })
	o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, "out.ebnn"))
	o.Checkpoint, o.DType, o.Prune = p, "f16", 0.5
	if _, err := Convert(o); err != nil {
		t.Fatal(err)
	}
}
