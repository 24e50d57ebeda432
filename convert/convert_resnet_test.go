package convert

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/internal/schema"
	"github.com/edgebnn/edgebnn/runtime"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// bnnTensor is one state_dict entry of bayesianize's ResNet-50, enumerated by hand below.
type bnnTensor struct {
	name  string
	shape []int
	param bool
	i64   bool
}

// resnet50StateDict lists, independently of the converter, the state_dict bayesianize_ gives
// torchvision's resnet50(num_classes=10) with the 3×3 stem, every Conv2d made inducing with 64×64
// inducing weights and fc with 10×64, q(U) diagonal ("FFG-U").
func resnet50StateDict() []bnnTensor {
	var out []bnnTensor
	inducing := func(name string, dOut, dIn, r, c int) {
		out = append(out,
			bnnTensor{name + ".z_row", []int{r, dOut}, true, false},
			bnnTensor{name + ".z_col", []int{c, dIn}, true, false},
			bnnTensor{name + ".inducing_mean", []int{r, c}, true, false},
			bnnTensor{name + "._inducing_sd", []int{r, c}, true, false},
			bnnTensor{name + "._lamda", nil, true, false},
			bnnTensor{name + "._d_row", []int{r}, true, false},
			bnnTensor{name + "._d_col", []int{c}, true, false})
	}
	bn := func(name string, c int) {
		out = append(out,
			bnnTensor{name + ".weight", []int{c}, true, false},
			bnnTensor{name + ".bias", []int{c}, true, false},
			bnnTensor{name + ".running_mean", []int{c}, false, false},
			bnnTensor{name + ".running_var", []int{c}, false, false},
			bnnTensor{name + ".num_batches_tracked", nil, false, true})
	}
	inducing("conv1", 64, 3*9, 64, 64)
	bn("bn1", 64)
	in := 64
	for li, l := range []struct{ planes, blocks int }{{64, 3}, {128, 4}, {256, 6}, {512, 3}} {
		for b := 0; b < l.blocks; b++ {
			p := fmt.Sprintf("layer%d.%d.", li+1, b)
			inducing(p+"conv1", l.planes, in, 64, 64)
			bn(p+"bn1", l.planes)
			inducing(p+"conv2", l.planes, l.planes*9, 64, 64)
			bn(p+"bn2", l.planes)
			inducing(p+"conv3", 4*l.planes, l.planes, 64, 64)
			bn(p+"bn3", 4*l.planes)
			if b == 0 {
				inducing(p+"downsample.0", 4*l.planes, in, 64, 64)
				bn(p+"downsample.1", 4*l.planes)
			}
			in = 4 * l.planes
		}
	}
	inducing("fc", 10, 2048+1, 10, 64)
	return out
}

const resnetConfig = `{
	"inference": {
		"Conv2d": {"inference": "inducing", "inducing_rows": 64, "inducing_cols": 64},
		"Linear": {"inference": "inducing", "inducing_rows": 10, "inducing_cols": 64}
	},
	"whitened_u": true, "q_inducing": "diagonal", "learn_lamda": true, "init_lamda": 0.001,
	"max_lamda": 0.03, "max_sd_u": 0.1, "cache_cholesky": true, "prior_sd": 1.0,
	"sqrt_width_scaling": true
}`

// TestResNet50Counts: bayesianize's own counts for ResNet-50 / CIFAR-10 with 64×64 inducing
// weights: 5,703,396 parameters against 23,520,842 for the deterministic network, and 3,099,442
// after pruning half of the Z entries.
func TestResNet50Counts(t *testing.T) {
	cfg, err := bnnconfig.Parse([]byte(resnetConfig))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := specFor("resnet50", cfg, 10, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The converter expects exactly bayesianize's names and shapes.
	want := map[string][]int{}
	for _, b := range resnet50StateDict() {
		want[b.name] = b.shape
	}
	got := schema.Expected(spec)
	if len(got) != len(want) {
		t.Errorf("converter expects %d tensors, bayesianize has %d", len(got), len(want))
	}
	for _, e := range got {
		w, ok := want[e.Name]
		if !ok {
			t.Errorf("converter expects %q, which bayesianize does not have", e.Name)
		} else if !runtime.SameShape(e.Shape, w) {
			t.Errorf("tensor %q: converter expects %v, bayesianize has %v", e.Name, e.Shape, w)
		}
	}
	infos := schema.LayerInfos(spec)
	if err := schema.CountParameters(spec, infos, func(t schema.Tensor) (int64, int64, error) { return int64(t.Size()), 0, nil }); err != nil {
		t.Fatal(err)
	}
	var params, det, z int64
	for _, li := range infos {
		params += li.Parameters
		det += li.Deterministic
		z += li.Z
	}
	if params != 5703396 || det != 23520842 {
		t.Errorf("parameters %d (want 5,703,396), deterministic %d (want 23,520,842)", params, det)
	}
	if pruned := params - (z+1)/2; pruned != 3099442 {
		t.Errorf("after 50%% pruning %d parameters, want 3,099,442", pruned)
	}
	if testing.Short() {
		return
	}
	testResNet50Files(t)
}

// testResNet50Files converts a random ResNet-50 state_dict (f16, 50 % pruning, zstd) and
// inspects the files.
func testResNet50Files(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 8))
	var ts []safetensors.Tensor
	isp := float32(math.Log(math.Expm1(1e-3)))
	for _, b := range resnet50StateDict() {
		n := 1
		for _, d := range b.shape {
			n *= d
		}
		var tn safetensors.Tensor
		var err error
		if b.i64 {
			tn, err = safetensors.NewI64(b.name, b.shape, []int64{391 * 200})
		} else {
			v := make([]float32, n)
			for i := range v {
				x := float32(rng.NormFloat64())
				switch filepath.Ext(b.name) {
				case ".z_row", ".z_col":
					x *= 0.125
				case "._d_row", "._d_col", "._lamda", "._inducing_sd":
					x = isp + 0.5*x
				case ".running_var":
					x = 1 + 0.1*float32(math.Abs(float64(x)))
				case ".weight":
					x = 1 + 0.1*x
				case ".bias", ".running_mean":
					x *= 0.1
				}
				v[i] = x
			}
			tn, err = safetensors.NewF32(b.name, b.shape, v)
		}
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tn)
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Name < ts[j].Name })
	ckpt := filepath.Join(dir, "resnet50.safetensors")
	writeSafetensors(t, ckpt, ts)
	cfgPath := filepath.Join(dir, "ffg_u.json")
	if err := os.WriteFile(cfgPath, []byte(resnetConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		dtype, compress, policy string
		prune                   float64
		params                  int64
		maxRatio                float64
	}{
		{"f32", "none", "", 0, 5703396, 0.25},
		// The default fp16 policy keeps the q(U) statistics (0.44 M values) in float32; that
		// alone is 1.85 % of the deterministic fp32 bytes, so 7.5 % needs the compact policy.
		{"f16", "zstd", "", 0.5, 3099442, 0.08},
		{"f16", "none", "compact", 0.5, 3099442, 0.08},
		{"f16", "zstd", "compact", 0.5, 3099442, 0.075},
	} {
		out := filepath.Join(dir, fmt.Sprintf("r50-%s-%s-%s-%v.ebnn", tc.dtype, tc.compress, tc.policy, tc.prune))
		rep, err := Convert(Options{Checkpoint: ckpt, Config: cfgPath, Arch: "resnet50", Classes: 10, Out: out,
			DType: tc.dtype, Compress: tc.compress, Prune: tc.prune, F16Policy: tc.policy})
		if err != nil {
			t.Fatal(err)
		}
		in, err := Inspect(out, true)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s %s policy %q prune %v: %d parameters (deterministic %d), file %d bytes = %.4f of the deterministic fp32 %d bytes",
			tc.dtype, tc.compress, tc.policy, tc.prune, in.Parameters, in.DeterministicParameters, in.FileBytes, in.Ratio, in.DeterministicFP32Bytes)
		if in.Parameters != tc.params || rep.Parameters != tc.params || in.DeterministicParameters != 23520842 {
			t.Errorf("inspect: %d parameters (report %d), deterministic %d; want %d, 23,520,842",
				in.Parameters, rep.Parameters, in.DeterministicParameters, tc.params)
		}
		if !(in.Ratio <= tc.maxRatio) {
			t.Errorf("file is %.4f of the deterministic fp32 bytes, want ≤ %v", in.Ratio, tc.maxRatio)
		}
		checkResNetPredicts(t, out)
	}
}

// checkResNetPredicts loads a converted ResNet with runtime.Load and predicts one CIFAR-shaped
// input with two samples per strategy: the probabilities must be finite and sum to one.
func checkResNetPredicts(t *testing.T, path string) {
	t.Helper()
	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	x := make([]float32, m.InputSize())
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range x {
		x[i] = rng.Float32()
	}
	for _, st := range []runtime.Strategy{runtime.Weight, runtime.Local} {
		p, err := m.NewPredictor(runtime.Options{Samples: 2, Strategy: st})
		if err != nil {
			t.Fatal(err)
		}
		var out runtime.Prediction
		if err := p.Predict(x, &out); err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, v := range out.Probs {
			if math.IsNaN(float64(v)) || v < 0 {
				t.Fatalf("%s: %v: probability %v", path, st, v)
			}
			sum += float64(v)
		}
		if !(math.Abs(sum-1) <= 1e-4) || len(out.Probs) != 10 {
			t.Errorf("%s: %v: %d probabilities summing to %v", path, st, len(out.Probs), sum)
		}
	}
}
