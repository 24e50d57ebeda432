package bnn

import (
	"errors"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/optim"
)

// tinyResNetJSON is a ResNet-style net for 1×28×28 inputs: a stride-2 stem, an identity
// BasicBlock, a downsampling BasicBlock, global average pooling and a linear layer.
const tinyResNetJSON = "testdata/tiny_resnet.json"

// TestFashionMNISTResNet trains the tiny ResNet with inducing conv and linear layers on the first
// Fashion-MNIST test images for a few epochs and checks that the mean training loss per epoch
// falls, and that the trained net builds in the runtime.
func TestFashionMNISTResNet(t *testing.T) {
	ds, err := data.FashionMNIST(data.DefaultFashionMNISTDir, "test")
	if errors.Is(err, os.ErrNotExist) {
		t.Skipf("Fashion-MNIST is not installed: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	examples, epochs, batch := 256, 6, 32
	if testing.Short() {
		examples, epochs = 64, 4
	}
	ds = ds.Head(examples)
	nodes, _, err := convert.ParseArch(tinyResNetJSON, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := bnnconfig.Parse([]byte(`{"inference": "inducing", "inducing_rows": 4, "inducing_cols": 4, "init_lamda": 0.001}`))
	if err != nil {
		t.Fatal(err)
	}
	spec, inits, err := SpecFromNodes(nodes, cfg, ds.Shape, runtime.Classification, 0)
	if err != nil {
		t.Fatal(err)
	}
	n, err := New[float32](spec, inits, rand.New(rand.NewPCG(3, 3)))
	if err != nil {
		t.Fatal(err)
	}
	opt, err := optim.NewAdam([]optim.Group[float32]{{Params: n.Trainable(), LR: 0.01}}, optim.DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	tp := autodiff.NewTape[float32]()
	var losses []float64
	step := int64(0)
	for e := 0; e < epochs; e++ {
		sum := 0.0
		for b := 0; b < ds.N; b += batch {
			end := min(b+batch, ds.N)
			x := ds.X[b*ds.Dim : end*ds.Dim]
			tp.Reset()
			n.Begin()
			n.Seed(1, step)
			opt.ZeroGrad()
			out := n.Forward(tp, tp.Const(x, append([]int{end - b}, ds.Shape...)...), true)
			nll := tp.CrossEntropy(out, ds.Labels[b:end])
			loss := tp.Add(nll, tp.Scale(n.KL(tp), float32(1e-3/float64(ds.N))))
			if err := tp.Backward(loss); err != nil {
				t.Fatal(err)
			}
			opt.Step()
			step++
			sum += float64(nll.Item()) * float64(end-b)
		}
		losses = append(losses, sum/float64(ds.N))
	}
	t.Logf("mean training NLL per epoch: %.4f", losses)
	if !(losses[len(losses)-1] < losses[0]-0.1) {
		t.Fatalf("the training loss did not fall: %.4f", losses)
	}
	if _, err := n.Model(); err != nil {
		t.Fatalf("the trained net does not build in the runtime: %v", err)
	}
}
