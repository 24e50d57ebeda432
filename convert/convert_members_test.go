package convert

import (
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// perturbedCopy writes a copy of the model file src to dst with every tensor's values scaled by
// 1 + eps·(i mod 7 − 3)/3 (a different posterior of the same architecture), and the spec edited
// by edit (may be nil).
func perturbedCopy(t *testing.T, src, dst string, eps float64, edit func(*runtime.Spec)) {
	t.Helper()
	f := modeltest.Open(t, src)
	spec := modeltest.Spec(t, f)
	if edit != nil {
		edit(spec)
	}
	w := format.NewWriter()
	for _, name := range f.Tensors() {
		tn := modeltest.Tensor(t, f, name)
		c := make([]float32, len(tn.Data))
		for i, x := range tn.Data {
			c[i] = x * float32(1+eps*float64(i%7-3)/3)
		}
		if _, err := w.AddTensor(name, tn.Shape, c, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.AddSpec(t, w, spec)
	modeltest.Save(t, w, dst)
}

// TestConvertMembers: three FFG-U posteriors (the mlp_ffgu fixture and two perturbed copies)
// combine into a mixture, f32 and f16; its sample s is, bit for bit, member s mod 3's sample
// s div 3 of that member converted alone with the member's seed (runtime's mixture keying).
func TestConvertMembers(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.ebnn")
	if _, err := Convert(fixtureOpts("mlp_ffgu", ".safetensors", a)); err != nil {
		t.Fatal(err)
	}
	paths := []string{a, filepath.Join(dir, "b.ebnn"), filepath.Join(dir, "c.ebnn")}
	perturbedCopy(t, a, paths[1], 0.05, nil)
	perturbedCopy(t, a, paths[2], 0.1, nil)
	for _, dtype := range []string{"f32", "f16"} {
		t.Run(dtype, func(t *testing.T) {
			mix := filepath.Join(dir, "mix-"+dtype+".ebnn")
			rep, err := Convert(Options{Checkpoint: a, Members: paths[1:], Out: mix, DType: dtype})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Members != 3 {
				t.Fatalf("report: %d members", rep.Members)
			}
			m, err := runtime.Load(mix)
			if err != nil {
				t.Fatal(err)
			}
			defer m.Close()
			if !m.Mixture() || m.Members() != 3 {
				t.Fatalf("Mixture %v, Members %d", m.Mixture(), m.Members())
			}
			x := make([]float32, m.InputSize())
			for i := range x {
				x[i] = float32(i%13) / 13
			}
			const K, seed = 6, 17
			p, err := m.NewPredictor(runtime.Options{Samples: K, Seed: seed, KeepSamples: true})
			if err != nil {
				t.Fatal(err)
			}
			var got runtime.Prediction
			if err := p.Predict(x, &got); err != nil {
				t.Fatal(err)
			}
			c := m.OutputSize()
			for k, path := range paths {
				one := filepath.Join(dir, "one.ebnn")
				if _, err := Convert(Options{Checkpoint: path, Out: one, DType: dtype}); err != nil {
					t.Fatal(err)
				}
				sm, err := runtime.Load(one)
				if err != nil {
					t.Fatal(err)
				}
				sp, err := sm.NewPredictor(runtime.Options{Samples: K / 3, Seed: seed + uint64(k)*0x9e3779b97f4a7c15, KeepSamples: true})
				if err != nil {
					t.Fatal(err)
				}
				var want runtime.Prediction
				if err := sp.Predict(x, &want); err != nil {
					t.Fatal(err)
				}
				sm.Close()
				for l := 0; l < K/3; l++ {
					s := 3*l + k
					for j := 0; j < c; j++ {
						if g, w := got.Outputs[s*c+j], want.Outputs[l*c+j]; math.Float32bits(g) != math.Float32bits(w) {
							t.Fatalf("sample %d (member %d's %d) output %d: %v, member alone %v", s, k, l, j, g, w)
						}
					}
				}
			}
			in, err := Inspect(mix, true)
			if err != nil {
				t.Fatal(err)
			}
			if in.Members != 3 || !in.Mixture {
				t.Fatalf("inspect: members %d, mixture %v", in.Members, in.Mixture)
			}
		})
	}
}

// TestConvertMembersErrors: members of another architecture or posterior, another
// preprocessing, a state_dict member, an ensemble member and a member that is the output are
// refused, naming the member.
func TestConvertMembersErrors(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a.ebnn")
	if _, err := Convert(fixtureOpts("mlp_ffgu", ".safetensors", a)); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(dir, "other.ebnn")
	perturbedCopy(t, a, other, 0.05, func(s *runtime.Spec) { s.Layers[1].Posterior.PriorSD = 0.5 })
	ens := filepath.Join(dir, "ens.ebnn")
	writeEnsembleCheckpoint(t, ens, 2, nil)
	fx := fixtureOpts("mlp_ffgu", ".safetensors", "")
	out := filepath.Join(dir, "out.ebnn")
	for _, c := range []struct {
		name    string
		opts    Options
		want    []string
		exclude bool
	}{
		{"another posterior", Options{Checkpoint: a, Members: []string{other}, Out: out}, []string{"member 1", "other.ebnn", "another architecture or posterior"}, false},
		{"state_dict member", Options{Checkpoint: a, Members: []string{fx.Checkpoint}, Out: out}, []string{"member 1", "state_dict"}, false},
		{"state_dict first", Options{Checkpoint: fx.Checkpoint, Config: fx.Config, Arch: fx.Arch, Members: []string{a}, Out: out}, []string{"state_dict", "convert a state_dict first"}, false},
		{"ensemble member", Options{Checkpoint: a, Members: []string{ens}, Out: out}, []string{"member 1", "2 members"}, false},
		{"member is the output", Options{Checkpoint: a, Members: []string{out}, Out: out}, []string{"refusing to write"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.name == "member is the output" {
				perturbedCopy(t, a, out, 0.01, nil)
			}
			_, err := Convert(c.opts)
			testutil.ErrorContains(t, err, c.want...)
		})
	}
}

// deepModel writes a deterministic model of layers Linear(2, 2) layers (2 tensors each) to path,
// with the extra tensors (names the spec does not declare) added.
func deepModel(t *testing.T, path string, layers int, extra map[string][]float32) {
	t.Helper()
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2}}
	w := format.NewWriter()
	add := func(name string, shape []int, v []float32) {
		if _, err := w.AddTensor(name, shape, v, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range layers {
		name := strconv.Itoa(2 * i)
		spec.Layers = append(spec.Layers, runtime.LayerSpec{Name: name, Op: runtime.OpLinear, In: 2, Out: 2, Bias: true})
		add(name+".weight", []int{2, 2}, []float32{1, 0, 0, 1})
		add(name+".bias", []int{2}, []float32{0, 0})
	}
	for name, v := range extra {
		add(name, []int{len(v)}, v)
	}
	modeltest.AddSpec(t, w, spec)
	modeltest.Save(t, w, path)
}

// TestConvertMembersLimits: members that each pass the limits of one input but together
// exceed them — the model format's sections, the memory the combined tensors take — are refused
// before the members are read (or as soon as what was read adds up past the memory), naming the
// inputs, and nothing is written. 1024 members of a 40-layer network (80 tensors each) used to
// be read whole and fail in the writer, naming only member 0's file, with "tensor
// \"member819/16.weight\": section count exceeds limit 65536"; the memory was not checked.
func TestConvertMembersLimits(t *testing.T) {
	dir := t.TempDir()
	deep := filepath.Join(dir, "deep.ebnn")
	deepModel(t, deep, 40, nil)
	small := filepath.Join(dir, "small.ebnn")
	deepModel(t, small, 2, nil) // 12 values
	junk := filepath.Join(dir, "junk.ebnn")
	deepModel(t, junk, 2, map[string][]float32{"junk": make([]float32, 1<<16)})
	repeat := func(p string, n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = p
		}
		return out
	}
	for _, c := range []struct {
		name string
		opts Options
		want []string
	}{
		{"sections", Options{Checkpoint: deep, Members: repeat(deep, 1023)},
			[]string{`deep.ebnn" with 1023 --member file(s)`, "1024 members of 80 tensors each", "81922 sections", "65536", "at most 819 members"}},
		{"memory", Options{Checkpoint: small, Members: repeat(small, 99), MaxMemory: 4000},
			[]string{`small.ebnn" with 99 --member file(s)`, "100 members of 12 values each", "4800 bytes", "4000 bytes available (Options.MaxMemory)", "at most 83 members"}},
		{"undeclared tensors", Options{Checkpoint: small, Members: repeat(junk, 10), MaxMemory: 1 << 18},
			[]string{"member 1 (", "junk.ebnn", "the 2 members read so far"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.Out = filepath.Join(dir, "out.ebnn")
			_, err := Convert(c.opts)
			testutil.ErrorContains(t, err, c.want...)
			if _, err := os.Stat(c.opts.Out); err == nil {
				t.Errorf("%s written", c.opts.Out)
			}
		})
	}
	// Within the limits, the same members combine.
	if _, err := Convert(Options{Checkpoint: small, Members: repeat(small, 9), MaxMemory: 4000, Out: filepath.Join(dir, "ok.ebnn")}); err != nil {
		t.Errorf("10 members of 12 values within 4000 bytes: %v", err)
	}
}
