package convert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/internal/testutil"
	"github.com/edgebnn/edgebnn/runtime"
)

// ensArch is a small MLP with BatchNorm as print(net) shows it; 78 + 12 + 21 = 111 parameters.
const ensArch = `Sequential(
  (0): Linear(in_features=12, out_features=6, bias=True)
  (1): BatchNorm1d(6, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU()
  (3): Linear(in_features=6, out_features=3, bias=True)
)
`

const ensMemberParams = 111

func ensSpec(members int) *runtime.Spec {
	return &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{12},
		Members: members,
		Layers: []runtime.LayerSpec{
			{Name: "0", Op: runtime.OpLinear, In: 12, Out: 6, Bias: true},
			{Name: "1", Op: runtime.OpBatchNorm, In: 6, Eps: 1e-5, Affine: true},
			{Name: "2", Op: runtime.OpReLU},
			{Name: "3", Op: runtime.OpLinear, In: 6, Out: 3, Bias: true},
		}}
}

// ensMember returns one network's tensors (plain names), as the trainer would hold them. The
// weights are large enough (≥ 64 values) for the f16 policy to store them in fp16.
func ensMember(r *rand.Rand) map[string]runtime.Tensor {
	rnd := func(n int, c, s float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(c + s*r.NormFloat64())
		}
		return v
	}
	return map[string]runtime.Tensor{
		"0.weight":              {Shape: []int{6, 12}, Data: rnd(72, 0, 0.5)},
		"0.bias":                {Shape: []int{6}, Data: rnd(6, 0, 0.2)},
		"1.weight":              {Shape: []int{6}, Data: rnd(6, 1, 0.1)},
		"1.bias":                {Shape: []int{6}, Data: rnd(6, 0, 0.1)},
		"1.running_mean":        {Shape: []int{6}, Data: rnd(6, 0, 0.3)},
		"1.running_var":         {Shape: []int{6}, Data: rnd(6, 1.2, 0.1)},
		"1.num_batches_tracked": {Shape: []int{}, Data: []float32{12}},
		"3.weight":              {Shape: []int{3, 6}, Data: rnd(18, 0, 0.8)},
		"3.bias":                {Shape: []int{3}, Data: rnd(3, 0, 0.2)},
	}
}

// writeEnsembleCheckpoint writes a training-checkpoint-like ensemble model file: the spec with
// members, every member's tensors (member k > 0 under "member<k>/"), an optimizer tensor and a
// train blob. It returns the members' tensors.
func writeEnsembleCheckpoint(t *testing.T, path string, k int, edit func(map[string]runtime.Tensor)) []map[string]runtime.Tensor {
	t.Helper()
	r := rand.New(rand.NewPCG(3, uint64(k)))
	w := format.NewWriter()
	all := map[string]runtime.Tensor{}
	var members []map[string]runtime.Tensor
	for e := 0; e < k; e++ {
		ts := ensMember(r)
		members = append(members, ts)
		for name, v := range ts {
			if e > 0 {
				name = fmt.Sprintf("member%d/%s", e, name)
			}
			all[name] = v
		}
	}
	all[TrainingStatePrefix+"m.0.weight"] = runtime.Tensor{Shape: []int{24}, Data: make([]float32, 24)}
	if edit != nil {
		edit(all)
	}
	for _, name := range sortedKeys(all) {
		v := all[name]
		if _, err := w.AddTensor(name, v.Shape, v.Data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	modeltest.AddSpec(t, w, ensSpec(k))
	if err := w.AddBlob("train", []byte(`{}`), false); err != nil {
		t.Fatal(err)
	}
	modeltest.Save(t, w, path)
	return members
}

func sortedKeys(m map[string]runtime.Tensor) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

// TestConvertEnsemble: an Ensemble-W checkpoint converts to f16 keeping every member; the loaded
// model's predictive with S = K is the hand-made average of the softmax outputs of K single
// networks built from the converted file's member tensors; inspect reports K and the per-member
// parameter count.
func TestConvertEnsemble(t *testing.T) {
	const K = 3
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "ens.ebnn")
	members := writeEnsembleCheckpoint(t, ckpt, K, nil)
	out := filepath.Join(dir, "ens16.ebnn")
	rep, err := Convert(Options{Checkpoint: ckpt, Out: out, DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Members != K || rep.Parameters != K*ensMemberParams || rep.DeterministicParameters != ensMemberParams {
		t.Errorf("report: members %d, parameters %d / %d; want %d, %d / %d", rep.Members, rep.Parameters,
			rep.DeterministicParameters, K, K*ensMemberParams, ensMemberParams)
	}
	f, err := format.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Member tensors are kept (f16 for the weights), in member order; no optimizer state.
	names := f.Tensors()
	want := 8 * K
	if len(names) != want {
		t.Errorf("%d tensors, want %d: %v", len(names), want, names)
	}
	for _, n := range names {
		if strings.HasPrefix(n, TrainingStatePrefix) || strings.HasSuffix(n, "num_batches_tracked") {
			t.Errorf("converted file holds %q", n)
		}
	}
	if names[0] != "0.weight" || names[len(names)-1] != "member2/3.bias" {
		t.Errorf("tensor order %v", names)
	}
	for _, s := range f.Sections() {
		if s.Name == "member2/0.weight" && !strings.Contains(s.Encoding.String(), "F16") {
			t.Errorf("member2/0.weight stored as %s, want fp16", s.Encoding)
		}
	}
	m, err := runtime.FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if m.Members() != K {
		t.Fatalf("loaded model has %d members", m.Members())
	}
	// Reference: each member as its own single network, from the converted file's tensors.
	single := ensSpec(0)
	var singles []*runtime.Model
	for e := 0; e < K; e++ {
		ts := runtime.Tensors{}
		for name := range members[e] {
			if strings.HasSuffix(name, "num_batches_tracked") {
				continue
			}
			full := name
			if e > 0 {
				full = fmt.Sprintf("member%d/%s", e, name)
			}
			ts[name] = modeltest.Tensor(t, f, full)
		}
		sm, err := runtime.New(single, ts)
		if err != nil {
			t.Fatal(err)
		}
		singles = append(singles, sm)
	}
	p, err := m.NewPredictor(runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(8, 8))
	for i := 0; i < 4; i++ {
		x := make([]float32, 12)
		for j := range x {
			x[j] = float32(r.NormFloat64())
		}
		var got runtime.Prediction
		if err := p.Predict(x, &got); err != nil {
			t.Fatal(err)
		}
		avg := make([]float64, 3)
		for _, sm := range singles {
			sp, err := sm.NewPredictor(runtime.Options{KeepSamples: true})
			if err != nil {
				t.Fatal(err)
			}
			var one runtime.Prediction
			if err := sp.Predict(x, &one); err != nil {
				t.Fatal(err)
			}
			z, mx := 0.0, math.Inf(-1)
			for _, v := range one.Outputs {
				mx = math.Max(mx, float64(v))
			}
			for _, v := range one.Outputs {
				z += math.Exp(float64(v) - mx)
			}
			for j, v := range one.Outputs {
				avg[j] += math.Exp(float64(v)-mx) / z / K
			}
		}
		for j := range avg {
			if !(math.Abs(float64(got.Probs[j])-avg[j]) <= 1e-6) {
				t.Errorf("input %d class %d: p = %v, members' average %v", i, j, got.Probs[j], avg[j])
			}
		}
	}
	in, err := Inspect(out, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Members != K || in.MemberParameters != ensMemberParams || in.Parameters != K*ensMemberParams ||
		in.DeterministicParameters != ensMemberParams {
		t.Errorf("inspect: members %d, per member %d, parameters %d / %d", in.Members, in.MemberParameters,
			in.Parameters, in.DeterministicParameters)
	}
	var layerBytes int64
	for _, l := range in.Layers {
		layerBytes += l.Bytes
	}
	var tensorBytes int64
	for _, s := range in.Sections {
		if s.Kind == "tensor" {
			tensorBytes += s.StoredBytes
		}
	}
	if layerBytes != tensorBytes {
		t.Errorf("inspect: layers hold %d bytes, the tensor sections %d", layerBytes, tensorBytes)
	}
}

// TestConvertEnsembleErrors: a missing or misshapen member tensor, or a member more than the spec
// says, is an error naming the tensor.
func TestConvertEnsembleErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(map[string]runtime.Tensor)
		want []string
	}{
		{"missing", func(ts map[string]runtime.Tensor) { delete(ts, "member2/3.weight") },
			[]string{`"member2/3.weight"`, "missing"}},
		{"shape", func(ts map[string]runtime.Tensor) {
			ts["member1/1.running_var"] = runtime.Tensor{Shape: []int{5}, Data: make([]float32, 5)}
		}, []string{`"member1/1.running_var"`, "[5]", "[6]"}},
		{"extra member", func(ts map[string]runtime.Tensor) {
			ts["member3/3.bias"] = runtime.Tensor{Shape: []int{3}, Data: make([]float32, 3)}
		}, []string{`"member3/3.bias"`, "not used"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			ckpt := filepath.Join(dir, "ens.ebnn")
			writeEnsembleCheckpoint(t, ckpt, 3, c.edit)
			_, err := Convert(Options{Checkpoint: ckpt, Out: filepath.Join(dir, "out.ebnn")})
			testutil.ErrorContains(t, err, c.want...)
		})
	}
}

// TestPlanEnsemble: plan counts every member's parameters, sizes the file for all of them and
// the predictor for the default of one sample per member.
func TestPlanEnsemble(t *testing.T) {
	arch := filepath.Join(t.TempDir(), "model.txt")
	if err := os.WriteFile(arch, []byte(ensArch), 0o644); err != nil {
		t.Fatal(err)
	}
	one, err := Plan(PlanOptions{Arch: arch})
	if err != nil {
		t.Fatal(err)
	}
	four, err := Plan(PlanOptions{Arch: arch, Members: 4})
	if err != nil {
		t.Fatal(err)
	}
	if one.Parameters != ensMemberParams || one.Members != 0 {
		t.Errorf("one network: %d parameters, members %d", one.Parameters, one.Members)
	}
	if four.Parameters != 4*ensMemberParams || four.DeterministicParameters != ensMemberParams || four.Members != 4 {
		t.Errorf("four members: parameters %d / %d, members %d", four.Parameters, four.DeterministicParameters, four.Members)
	}
	if four.FileBytes <= one.FileBytes || four.Samples != 4 {
		t.Errorf("four members: file %d bytes (one network %d), samples %d", four.FileBytes, one.FileBytes, four.Samples)
	}
	if _, err := Plan(PlanOptions{Arch: arch, Members: -2}); err == nil {
		t.Error("negative members accepted")
	}
}

// TestPlanF16Memory: an fp16 model's tensors are decoded to float32 at load and their file pages
// given back, so it needs about the memory of the float32 model at run time (not its file plus
// the decoded copy), while its file is about half as large.
func TestPlanF16Memory(t *testing.T) {
	arch := filepath.Join(t.TempDir(), "model.txt")
	const big = `Sequential(
  (0): Linear(in_features=1024, out_features=256, bias=True)
  (1): BatchNorm1d(256, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (2): ReLU()
  (3): Linear(in_features=256, out_features=10, bias=True)
)
`
	if err := os.WriteFile(arch, []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	f32, err := Plan(PlanOptions{Arch: arch, Members: 2})
	if err != nil {
		t.Fatal(err)
	}
	f16, err := Plan(PlanOptions{Arch: arch, Members: 2, DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	if f32.MappedBytes != f32.FileBytes {
		t.Errorf("f32: %d of %d file bytes mapped, want all (read in place)", f32.MappedBytes, f32.FileBytes)
	}
	if f16.FileBytes > f32.FileBytes*6/10 {
		t.Errorf("f16 file %d bytes, f32 %d", f16.FileBytes, f32.FileBytes)
	}
	if f16.MappedBytes > f16.FileBytes/2 || f16.RuntimeBytes > f32.RuntimeBytes*11/10 {
		t.Errorf("f16: %d of %d file bytes mapped, %d at run time (f32: %d)", f16.MappedBytes, f16.FileBytes, f16.RuntimeBytes, f32.RuntimeBytes)
	}
	// Loaded with KeepF16 the weights stay in the file: all of it mapped, the loaded model
	// without the members' float32 weights (264 192 values each), the predictor's scratch with
	// one copy of the largest layer's (262 144 values): for four members about 3.2 MB at run
	// time where the default f16 load needs about 4.3 MB.
	def, err := Plan(PlanOptions{Arch: arch, Members: 4, DType: "f16"})
	if err != nil {
		t.Fatal(err)
	}
	keep, err := Plan(PlanOptions{Arch: arch, Members: 4, DType: "f16", KeepF16: true})
	if err != nil {
		t.Fatal(err)
	}
	const weights, largest = 264192 * 4, 262144 * 4
	if keep.MappedBytes != keep.FileBytes || def.ModelBytes-keep.ModelBytes < 4*weights*9/10 ||
		keep.ScratchBytes-def.ScratchBytes < largest || keep.ScratchBytes-def.ScratchBytes > largest*11/10 ||
		keep.RuntimeBytes != keep.MappedBytes+keep.ModelBytes+keep.ScratchBytes || def.RuntimeBytes-keep.RuntimeBytes < 900_000 {
		t.Fatalf("f16 kept: %d mapped of %d, model %d, scratch %d, run time %d; f16 default: model %d, scratch %d, run time %d",
			keep.MappedBytes, keep.FileBytes, keep.ModelBytes, keep.ScratchBytes, keep.RuntimeBytes, def.ModelBytes, def.ScratchBytes, def.RuntimeBytes)
	}
	t.Logf("four members, f16: %d bytes at run time loaded the default way, %d kept in fp16", def.RuntimeBytes, keep.RuntimeBytes)
}
