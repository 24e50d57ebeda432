package train

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// exampleResNetArch is the residual JSON architecture shipped with the benchmarks.
const exampleResNetArch = "../bench/configs/fmnist_resnet_arch.json"

func needFashionMNIST(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")); errors.Is(err, os.ErrNotExist) {
		t.Skipf("Fashion-MNIST is not installed in %s", data.DefaultFashionMNISTDir)
	}
}

// resnet18Params is torchvision's resnet18 parameter count (weights, biases and BatchNorm
// affine parameters) with bayesianize's 3×3 stem for c input channels and k classes, summed by
// hand: stem 64·c·9 + BN 128; layer1 4 convs 64·64·9 + 4 BNs; layer2..4 each a stride-2 block
// (conv in→p, conv p→p, 1×1 downsample in→p, 3 BNs) and an identity block (2 convs, 2 BNs);
// fc 512·k + k.
func resnet18Params(c, k int) int64 {
	n := int64(64*c*9 + 2*64)
	n += 4 * (64*64*9 + 2*64)
	in := 64
	for _, p := range []int{128, 256, 512} {
		n += int64(in*p*9+p*p*9+in*p) + 3*2*int64(p)
		n += 2 * (int64(p*p*9) + 2*int64(p))
		in = p
	}
	return n + int64(512*k+k)
}

// TestTrainArchResNet18 builds bayesianize's ResNet-18 (convert's built-in name) from
// Fashion-MNIST's classes and channels and compares the deterministic net's parameter count with
// a hand count and with convert.Plan's for the same arch. Without -short it then trains the
// inducing ResNet-18 for one step of 4 images and checks that runtime.Load reads the checkpoint.
func TestTrainArchResNet18(t *testing.T) {
	needFashionMNIST(t)
	dir := t.TempDir()
	c := DefaultConfig()
	c.Arch, c.DataDir, c.Posterior = "resnet18", data.DefaultFashionMNISTDir, "deterministic"
	c.TrainLimit, c.TestLimit, c.BatchSize, c.Epochs = 8, 8, 4, 1
	c.TestSamples, c.Out = 1, filepath.Join(dir, "resnet18.ebnn")
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.spec.InputShape; len(got) != 3 || got[0] != 1 || got[1] != 28 || got[2] != 28 {
		t.Fatalf("input shape %v, want [1 28 28]", got)
	}
	var n int64
	for _, p := range tr.Nets[0].Params() {
		if p.Trainable {
			n += int64(len(p.Value))
		}
	}
	want := resnet18Params(1, 10)
	if n != want {
		t.Fatalf("resnet18 for 1×28×28, 10 classes: %d trainable parameters, hand count %d", n, want)
	}
	rep, err := convert.Plan(convert.PlanOptions{Arch: "resnet18", Classes: 10, InputShape: []int{1, 28, 28}})
	if err != nil {
		t.Fatal(err)
	}
	if rep.DeterministicParameters != want {
		t.Fatalf("convert.Plan counts %d deterministic parameters, hand count %d", rep.DeterministicParameters, want)
	}
	if testing.Short() {
		return
	}
	c.Posterior = "deterministic" // inducing conv layers: TestConvertResidualJSONCheckpoint
	if tr, err = New(c); err != nil {
		t.Fatal(err)
	}
	if err := tr.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	if len(tr.History) != 1 || math.IsNaN(tr.History[0].NLL) {
		t.Fatalf("history %+v, want one epoch with a finite NLL", tr.History)
	}
	m, err := runtime.Load(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.OutputSize() != 10 || m.InputSize() != 28*28 {
		t.Fatalf("checkpoint model: %d inputs, %d outputs", m.InputSize(), m.OutputSize())
	}
}

// TestConvertResidualJSONCheckpoint trains the example residual JSON architecture for one epoch
// of 8 images, writes the trained tensors as a PyTorch-style state_dict (safetensors,
// num_batches_tracked as int64), converts that with the same JSON file as --arch, and checks that
// the converted model predicts what the runtime predicts from the trainer's own checkpoint.
func TestConvertResidualJSONCheckpoint(t *testing.T) {
	needFashionMNIST(t)
	for _, tc := range []struct{ posterior, config string }{
		{"deterministic", ""},
		{"inducing", `{"inference": "inducing"}`},
	} {
		t.Run(tc.posterior, func(t *testing.T) {
			dir := t.TempDir()
			c := DefaultConfig()
			c.Arch, c.DataDir, c.Posterior = exampleResNetArch, data.DefaultFashionMNISTDir, tc.posterior
			c.TrainLimit, c.TestLimit, c.BatchSize, c.Epochs = 8, 8, 4, 1
			if testing.Short() {
				c.TrainLimit, c.TestLimit = 4, 4
			}
			c.TestSamples, c.Out = 1, filepath.Join(dir, "ckpt.ebnn")
			tr := trainRun(t, c)
			var tensors []safetensors.Tensor
			for _, p := range tr.Nets[0].Params() {
				var st safetensors.Tensor
				var err error
				if strings.HasSuffix(p.Name, ".num_batches_tracked") {
					st, err = safetensors.NewI64(p.Name, p.Shape, []int64{int64(p.Value[0])})
				} else {
					st, err = safetensors.NewF32(p.Name, p.Shape, p.Value)
				}
				if err != nil {
					t.Fatal(err)
				}
				tensors = append(tensors, st)
			}
			sd := filepath.Join(dir, "state_dict.safetensors")
			if err := safetensors.WriteFile(sd, tensors, nil); err != nil {
				t.Fatal(err)
			}
			opts := convert.Options{Checkpoint: sd, Arch: exampleResNetArch, Out: filepath.Join(dir, "conv.ebnn"),
				InputShape: []int{1, 28, 28}}
			if tc.config != "" {
				opts.Config = filepath.Join(dir, "config.json")
				if err := os.WriteFile(opts.Config, []byte(tc.config), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := convert.Convert(opts); err != nil {
				t.Fatalf("converting the state_dict with --arch %s: %v", exampleResNetArch, err)
			}
			// Without --input-shape the converter says why it cannot infer it.
			noShape := opts
			noShape.InputShape, noShape.Out = nil, filepath.Join(dir, "noshape.ebnn")
			if _, err := convert.Convert(noShape); err == nil || !strings.Contains(err.Error(), "--input-shape 1,H,W") {
				t.Fatalf("conversion without an input shape: error %v, want one asking for --input-shape 1,H,W", err)
			}
			direct, err := runtime.Load(c.Out)
			if err != nil {
				t.Fatal(err)
			}
			defer direct.Close()
			conv, err := runtime.Load(opts.Out)
			if err != nil {
				t.Fatal(err)
			}
			defer conv.Close()
			const samples = 4
			pa, err := direct.NewPredictor(runtime.Options{Samples: samples, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer pa.Close()
			pb, err := conv.NewPredictor(runtime.Options{Samples: samples, Seed: 7})
			if err != nil {
				t.Fatal(err)
			}
			defer pb.Close()
			x := tr.Test.X[:28*28]
			var a, b runtime.Prediction
			if err := pa.Predict(x, &a); err != nil {
				t.Fatal(err)
			}
			if err := pb.Predict(x, &b); err != nil {
				t.Fatal(err)
			}
			for k := range a.Probs {
				if d := math.Abs(float64(a.Probs[k] - b.Probs[k])); !(d <= 1e-6) {
					t.Fatalf("class %d: converted model p=%g, checkpoint p=%g", k, b.Probs[k], a.Probs[k])
				}
			}
			if direct.Stochastic() != (tc.config != "") {
				t.Fatalf("checkpoint stochastic=%v for posterior %s", direct.Stochastic(), tc.posterior)
			}
		})
	}
}

// TestArchModulesResNetErrors: a built-in ResNet needs classification images.
func TestArchNodesResNetErrors(t *testing.T) {
	cases := []struct {
		name, task string
		d          *data.Dataset
		want       string
	}{
		{"flatData", "classification", &data.Dataset{Shape: []int{784}, Classes: 10}, "needs image data [C, H, W]"},
		{"regression", "regression", &data.Dataset{Shape: []int{1, 28, 28}, Outputs: 1}, "is a classifier"},
		{"noClasses", "classification", &data.Dataset{Shape: []int{1, 28, 28}}, "0 classes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := archNodes("resnet34", tc.task, tc.d)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "resnet34") {
				t.Fatalf("error %v, want one naming resnet34 and containing %q", err, tc.want)
			}
		})
	}
	nodes, err := archNodes("resnet50", "classification", &data.Dataset{Shape: []int{3, 32, 32}, Classes: 7})
	if err != nil {
		t.Fatal(err)
	}
	if fc := nodes[len(nodes)-1].Module; fc == nil || fc.Name != "fc" || fc.InFeatures != 2048 || fc.OutFeatures != 7 {
		t.Fatalf("last module %+v, want fc 2048 → 7", fc)
	}
	if c1 := nodes[0].Module; c1 == nil || c1.Name != "conv1" || c1.InChannels != 3 {
		t.Fatalf("first module %+v, want conv1 with 3 input channels", c1)
	}
}

// TestStoredArch: a checkpoint records an architecture file inline, and convert.ParseArch reads
// the recorded text back as the file's tree; names, shorthands and inline JSON are kept as given.
func TestStoredArch(t *testing.T) {
	dir := t.TempDir()
	repr := filepath.Join(dir, "net.txt")
	if err := os.WriteFile(repr, []byte("Sequential(\n  (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1))\n  (1): ReLU()\n  (2): Flatten(start_dim=1, end_dim=-1)\n  (3): Linear(in_features=3136, out_features=10, bias=True)\n)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		arch   string
		inline bool
	}{
		{exampleResNetArch, true},
		{repr, true},
		{"mlp:784-32-10", false},
		{"resnet18", false},
		{`{"layers": [{"name": "0", "type": "Linear", "in_features": 2, "out_features": 3}]}`, false},
	} {
		classes, in := 0, 0
		if tc.arch == "resnet18" {
			classes, in = 10, 1
		}
		want, _, err := convert.ParseArch(tc.arch, classes, in)
		if err != nil {
			t.Fatalf("%s: %v", tc.arch, err)
		}
		got := storedArch(tc.arch, want)
		if !tc.inline {
			if got != tc.arch {
				t.Errorf("%s: recorded as %.60q, want it as given", tc.arch, got)
			}
			continue
		}
		if !strings.HasPrefix(got, "{") || strings.Contains(got, "\n") {
			t.Fatalf("%s: recorded as %.60q, want one line of inline JSON", tc.arch, got)
		}
		back, _, err := convert.ParseArch(got, 0, 0)
		if err != nil {
			t.Fatalf("%s: the recorded architecture does not parse: %v", tc.arch, err)
		}
		if !reflect.DeepEqual(back, want) {
			t.Errorf("%s: the recorded architecture reads back as another tree", tc.arch)
		}
	}
}
