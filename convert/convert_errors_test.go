package convert

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// TestCheckpointMismatch: missing, extra and mis-shaped tensors are errors naming the tensor
// (and both shapes); num_batches_tracked-style integer buffers of BatchNorm are dropped.
func TestCheckpointMismatch(t *testing.T) {
	f := fixtureFile(t, "mlp_ffgu", "state_dict")
	dir := t.TempDir()
	write := func(ts []safetensors.Tensor) string {
		p := filepath.Join(dir, "sd.safetensors")
		writeSafetensors(t, p, ts)
		return p
	}
	extra, _ := safetensors.NewF32("1.surprise", []int{2}, []float32{1, 2})
	badShape, _ := safetensors.NewF32("3._d_col", []int{23}, make([]float32, 23))
	intParam, _ := safetensors.NewI64("3._d_col", []int{24}, make([]int64, 24))
	tests := []struct {
		name string
		edit func([]safetensors.Tensor) []safetensors.Tensor
		want []string
	}{
		{"missing", func(ts []safetensors.Tensor) []safetensors.Tensor {
			var out []safetensors.Tensor
			for _, t := range ts {
				if t.Name != "1.z_col" {
					out = append(out, t)
				}
			}
			return out
		}, []string{`"1.z_col"`, "missing", "[24 785]"}},
		{"extra", func(ts []safetensors.Tensor) []safetensors.Tensor { return append(ts, extra) },
			[]string{`"1.surprise"`, "not used"}},
		{"shape", func(ts []safetensors.Tensor) []safetensors.Tensor { return replace(ts, badShape) },
			[]string{`"3._d_col"`, "[23]", "[24]"}},
		{"integer", func(ts []safetensors.Tensor) []safetensors.Tensor { return replace(ts, intParam) },
			[]string{`"3._d_col"`, "integer"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ts := append([]safetensors.Tensor(nil), f.Tensors...)
			p := write(tc.edit(ts))
			o := fixtureOpts("mlp_ffgu", ".pt", filepath.Join(dir, "out.ebnn"))
			o.Checkpoint = p
			_, err := Convert(o)
			testutil.ErrorContains(t, err, tc.want...)
		})
	}
}

func replace(ts []safetensors.Tensor, r safetensors.Tensor) []safetensors.Tensor {
	for i := range ts {
		if ts[i].Name == r.Name {
			ts[i] = r
		}
	}
	return ts
}

// TestSourceHashFormatIndependent: the provenance hash of the .pt and the .safetensors export
// is the same, and changes with any value.
func TestSourceHashFormatIndependent(t *testing.T) {
	for _, fx := range fixtures {
		a, err := readCheckpoint(filepath.Join(fixtureDir, fx, "state_dict.pt"))
		if err != nil {
			t.Fatal(err)
		}
		b, err := readCheckpoint(filepath.Join(fixtureDir, fx, "state_dict.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		ha, hb := SourceHash(a.tensors), SourceHash(b.tensors)
		if ha != hb {
			t.Errorf("%s: hashes differ: %s vs %s", fx, ha, hb)
		}
		b.tensors[0].F32[0] += 1
		if SourceHash(b.tensors) == ha {
			t.Errorf("%s: hash ignores a value change", fx)
		}
	}
}

// TestInferInputShape: [in_features] for the MLP, [1, 28, 28] (the smallest square input giving
// the Linear its 576 in_features) for the CNNs.
func TestInferInputShape(t *testing.T) {
	cfgSpec := func(fx string) []int {
		src, err := readCheckpoint(filepath.Join(fixtureDir, fx, "state_dict.pt"))
		if err != nil {
			t.Fatal(err)
		}
		o := fixtureOpts(fx, ".pt", "")
		m, err := buildModel(src, o)
		if err != nil {
			t.Fatal(err)
		}
		return m.spec.InputShape
	}
	if s := cfgSpec("mlp_ffgu"); len(s) != 1 || s[0] != 784 {
		t.Errorf("mlp input shape %v, want [784]", s)
	}
	if s := cfgSpec("cnn_ensembleu"); len(s) != 3 || s[0] != 1 || s[1] != 28 || s[2] != 28 {
		t.Errorf("cnn input shape %v, want [1 28 28]", s)
	}
}

// TestPlanDeterministicResNet18: a plain ResNet-18 (no config: BatchNorm, residual blocks,
// deterministic weights) plans, with torchvision's parameter count.
func TestPlanDeterministicResNet18(t *testing.T) {
	if testing.Short() {
		t.Skip("11 M random parameters; too slow under emulation")
	}
	rep, err := Plan(PlanOptions{Arch: "resnet18", Classes: 10})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Parameters != 11173962 || rep.DeterministicParameters != 11173962 {
		t.Errorf("parameters %d / %d, want 11,173,962", rep.Parameters, rep.DeterministicParameters)
	}
	t.Logf("resnet18: file %d bytes, model %d, scratch %d, runtime %d", rep.FileBytes, rep.ModelBytes, rep.ScratchBytes, rep.RuntimeBytes)
}

// TestPlanMemoryLimit: an architecture file of a few lines can declare any widths; Plan counts
// the parameters before building stand-ins for them and refuses above its memory limit, saying
// how many there are, in time and memory independent of the widths.
func TestPlanMemoryLimit(t *testing.T) {
	dir := t.TempDir()
	arch := func(name string, in, out int) string {
		p := filepath.Join(dir, name)
		txt := fmt.Sprintf("Sequential(\n  (0): Linear(in_features=%d, out_features=%d, bias=True)\n)\n", in, out)
		if err := os.WriteFile(p, []byte(txt), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cases := []struct {
		name      string
		arch      string
		classes   int
		maxMemory int64
		want      []string
	}{
		// 10¹⁰ parameters: 37 GiB as float32, above any machine's default here.
		{"huge widths, default limit", arch("huge.txt", 100000, 100000), 100000, 0, []string{"10000100000 parameters", "37.3 GiB"}},
		// 1,000,010 parameters (4 MB) against a 16 MB limit: 6 × 4 MB is above it.
		{"explicit limit", arch("mid.txt", 100000, 10), 10, 16 << 20, []string{"1000010 parameters"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Plan(PlanOptions{Arch: c.arch, Classes: c.classes, MaxMemory: c.maxMemory})
			if !errors.Is(err, runtime.ErrMemory) {
				t.Fatalf("Plan = %v, want runtime.ErrMemory", err)
			}
			testutil.ErrorContains(t, err, c.want...)
		})
	}
	// The same 1M-parameter model plans under a limit that allows it.
	if _, err := Plan(PlanOptions{Arch: arch("ok.txt", 100000, 10), Classes: 10, MaxMemory: 64 << 20}); err != nil {
		t.Errorf("1M parameters under 64 MiB: %v", err)
	}
}

// TestInspectCountsStoredParameters: inspect counts a layer's parameters as plan and bayesianize
// do — every entry of a dense Z, whatever its value (it no longer reads the values), and only the
// stored entries of a Z pruned to a sparse encoding.
func TestInspectCountsStoredParameters(t *testing.T) {
	d := filepath.Join(fixtureDir, "mlp_ffgu")
	for _, prune := range []float64{0, 0.5} {
		out := filepath.Join(t.TempDir(), "m.ebnn")
		rep, err := Plan(PlanOptions{Arch: filepath.Join(d, "model.txt"), Config: filepath.Join(d, "inference_config.json"),
			Classes: 10, Prune: prune, Out: out})
		if err != nil {
			t.Fatal(err)
		}
		in, err := Inspect(out, false)
		if err != nil {
			t.Fatal(err)
		}
		if in.Parameters != rep.Parameters {
			t.Errorf("prune %g: inspect counts %d parameters, plan %d", prune, in.Parameters, rep.Parameters)
		}
		// By hand (MATH.md §1 table), FFG-U 784-128-10 with 16×24 inducing weights: layer 1
		// (128 × 785 with bias) z_row 16·128 + z_col 24·785 + d 16+24 + λ 1 + mean and sd 2·16·24
		// = 21,697; layer 2 (10 × 129) 16·10 + 24·129 + 40 + 1 + 768 = 4,065.
		if prune == 0 && in.Parameters != 21697+4065 {
			t.Errorf("unpruned: %d parameters, want 25,762", in.Parameters)
		}
	}
}

// TestConvertF16Underflow: a Z whose entries fp16 rounds to zero passes every check made before
// quantising; the written file must then be refused (it would not load), not reported written.
func TestConvertF16Underflow(t *testing.T) {
	dir := t.TempDir()
	ck := editedStateDict(t, "mlp_ffgu", dir, "tiny", "3.z_row", func(v []float32) {
		for i := range v {
			v[i] *= 1e-8
		}
	})
	o := fixtureOpts("mlp_ffgu", ".safetensors", filepath.Join(dir, "f32.ebnn"))
	o.Checkpoint = ck
	if _, err := Convert(o); err != nil {
		t.Fatalf("f32: %v", err)
	}
	o.Out, o.DType = filepath.Join(dir, "f16.ebnn"), "f16"
	// Refused with what to do about it: an option that exists (there is no per-tensor f32).
	if _, err := Convert(o); err == nil || !strings.Contains(err.Error(), "does not load") || !strings.Contains(err.Error(), `"3"`) ||
		!strings.Contains(err.Error(), "rounded to zero? use --dtype f32") {
		t.Fatalf("f16 of a Z of 1e-8-scaled entries: %v, want the written file refused", err)
	}
	o.F16Policy = "compact"
	if _, err := Convert(o); err == nil || !strings.Contains(err.Error(), "use --dtype f32, or --f16-policy default") {
		t.Fatalf("f16 compact: %v, want the default policy suggested as well", err)
	}
	// Refused, and not left at Out (it had been, though it does not load).
	if st, err := os.Stat(o.Out); err == nil {
		t.Errorf("the failed conversion left a %d-byte file that does not load at %s", st.Size(), o.Out)
	}
}
