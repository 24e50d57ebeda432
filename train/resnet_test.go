package train

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
)

// resnetArch is train/bnn's tiny ResNet for 1×28×28 inputs in the JSON architecture format with
// residual blocks (convert.ParseArch): a stride-2 stem, an identity BasicBlock and a
// downsampling BasicBlock with a conv+BN shortcut, adaptive average pooling and a linear layer.
const resnetArch = "bnn/testdata/tiny_resnet.json"

// TestTrainResNetFashionMNIST trains the tiny ResNet (inducing conv and linear layers, BatchNorm)
// through the trainer on the first Fashion-MNIST images: the NLL falls, and the checkpoint
// (with the BatchNorm running statistics) loads in the runtime and converts to an f16 model.
func TestTrainResNetFashionMNIST(t *testing.T) {
	if _, err := os.Stat(data.DefaultFashionMNISTDir); errors.Is(err, os.ErrNotExist) {
		t.Skipf("Fashion-MNIST is not installed in %s", data.DefaultFashionMNISTDir)
	}
	dir := t.TempDir()
	c := DefaultConfig()
	c.Arch, c.DataDir, c.Posterior = resnetArch, data.DefaultFashionMNISTDir, "inducing"
	if err := c.Inference.Set(`{"inference": "inducing", "inducing_rows": 4, "inducing_cols": 4, "init_lamda": 0.001}`); err != nil {
		t.Fatal(err)
	}
	c.TrainLimit, c.TestLimit, c.BatchSize, c.Epochs, c.LR = 256, 100, 32, 5, 0.01
	if testing.Short() {
		c.TrainLimit, c.Epochs = 128, 4
	}
	c.MLEpochs, c.TestSamples, c.EvalEvery = c.Epochs, 2, 1000
	c.Out = filepath.Join(dir, "resnet.ebnn")
	tr := trainRun(t, c)
	first, last := tr.History[0].NLL, tr.History[len(tr.History)-1].NLL
	t.Logf("NLL per epoch: first %.4f, last %.4f", first, last)
	if !(last < first-0.05) {
		t.Fatalf("the NLL did not fall: %.4f → %.4f", first, last)
	}
	m, err := runtime.Load(c.Out)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var nbt float32
	for _, p := range tr.Nets[0].Params() {
		if p.Name == "layer2.0.downsample.1.num_batches_tracked" {
			nbt = p.Value[0]
		}
	}
	if want := float32(c.Epochs * ((c.TrainLimit + c.BatchSize - 1) / c.BatchSize)); nbt != want {
		t.Errorf("num_batches_tracked %g, want %g (one per training step)", nbt, want)
	}
	convertLoad(t, convert.Options{Checkpoint: c.Out, Out: filepath.Join(dir, "resnet.f16.ebnn"), DType: "f16"})
}
