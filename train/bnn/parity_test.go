package bnn

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
)

var fixtureDir = filepath.Join("..", "..", "testdata", "bayesianize")

// fixtureNet builds a trainer Net from a fixture's model.txt and inference_config.json and loads
// its state_dict.
func fixtureNet[T Float](t *testing.T, fixture string) (*Net[T], *safetensors.File) {
	t.Helper()
	dir := filepath.Join(fixtureDir, fixture)
	nodes, _, err := convert.ParseArch(filepath.Join(dir, "model.txt"), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bnnconfig.ParseFile(filepath.Join(dir, "inference_config.json"))
	if err != nil {
		t.Fatal(err)
	}
	in := []int{784}
	if nodes[0].Module.BaseType() == "Conv2d" {
		in = []int{1, 28, 28}
	}
	spec, inits, err := SpecFromNodes(nodes, cfg, in, runtime.Classification, 0)
	if err != nil {
		t.Fatal(err)
	}
	net, err := New[T](spec, inits, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	return net, loadFixtureState(t, net, dir)
}

// loadFixtureState loads dir's state_dict.safetensors into n, checks that every state_dict tensor
// is one of n's parameters (same names as bayesianize), and returns dir's reference.safetensors.
func loadFixtureState[T Float](t *testing.T, n *Net[T], dir string) *safetensors.File {
	t.Helper()
	sd, err := safetensors.ReadFile(filepath.Join(dir, "state_dict.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	src := runtime.Tensors{}
	for i := range sd.Tensors {
		tn := &sd.Tensors[i]
		v, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		src[tn.Name] = runtime.Tensor{Shape: tn.Shape, Data: v}
	}
	if err := n.Load(src); err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, p := range n.Params() {
		have[p.Name] = true
	}
	for name := range src {
		if !have[name] {
			t.Errorf("state_dict tensor %q has no trainer parameter", name)
		}
	}
	ref, err := safetensors.ReadFile(filepath.Join(dir, "reference.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestKLParity checks every layer's KL against bayesianize's kl_divergence() in the fixtures.
func TestKLParity(t *testing.T) {
	for _, fx := range []string{"mlp_ffgu", "cnn_ensembleu", "cnn_noisy_ffgu"} {
		t.Run(fx, func(t *testing.T) {
			net, ref := fixtureNet[float64](t, fx)
			kls := layerKLs(t, net)
			// The float32 training tape must agree too.
			net32, _ := fixtureNet[float32](t, fx)
			kls32 := layerKLs(t, net32)
			for i := range kls32 {
				if rel := math.Abs(kls32[i].KL-kls[i].KL) / math.Abs(kls[i].KL); !(rel < 1e-4) {
					t.Errorf("layer %s: float32 KL %.8g, float64 %.8g", kls[i].Name, kls32[i].KL, kls[i].KL)
				}
			}
			if len(kls) == 0 {
				t.Fatal("no stochastic layers")
			}
			for _, k := range kls {
				tn, ok := ref.Tensor(k.Name + ".kl")
				if !ok {
					t.Fatalf("reference has no %s.kl", k.Name)
				}
				want, err := tn.Float64s()
				if err != nil {
					t.Fatal(err)
				}
				if rel := math.Abs(k.KL-want[0]) / math.Abs(want[0]); !(rel < 1e-4) {
					t.Errorf("layer %s: KL %.8g, bayesianize %.8g (rel. error %.2g)", k.Name, k.KL, want[0], rel)
				} else {
					t.Logf("layer %s: KL %.8g, bayesianize %.8g (rel. error %.2g)", k.Name, k.KL, want[0], rel)
				}
			}
		})
	}
}
