package bnn_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// Building an inducing-weight MLP from an architecture and a bayesianize inference config,
// sampling one forward pass with its KL, and deploying the parameters to the runtime.
func Example() {
	nodes, _ := convert.MLP([]int{4, 8, 3}, "relu")
	cfg, _ := bnnconfig.Parse([]byte(`{"inference": "inducing", "inducing_rows": 2, "inducing_cols": 3, "sqrt_width_scaling": true}`))
	spec, inits, err := bnn.SpecFromNodes(nodes, cfg, []int{4}, runtime.Classification, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	net, err := bnn.New[float32](spec, inits, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	tape := autodiff.NewTape[float32]()
	net.Seed(7, 0)
	out := net.Forward(tape, tape.Const(make([]float32, 2*4), 2, 4), true)
	kl := net.KL(tape)
	fmt.Println("outputs", out.Shape(), "KL > 0:", kl.Item() > 0)
	for _, p := range net.Params()[:3] {
		fmt.Println(p.Name, p.Shape)
	}
	m, err := net.Model() // the same parameters in the deployed runtime
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runtime layers:", len(m.Layers()))
	// Output:
	// outputs [2 3] KL > 0: true
	// 1.z_row [2 8]
	// 1.z_col [3 5]
	// 1.inducing_mean [2 3]
	// runtime layers: 2
}

// A residual block with BatchNorm in the JSON architecture format (one of --arch's forms,
// convert.ParseArch): the block becomes one runtime layer with a body and a shortcut, and its
// BatchNorm buffers are tensors of the net.
func ExampleSpecFromNodes() {
	arch := `{"layers": [
  {"name": "conv1", "type": "Conv2d", "in_channels": 1, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
  {"name": "block", "type": "Residual",
   "body": [{"name": "block.conv", "type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 1, "bias": false},
            {"name": "block.bn", "type": "BatchNorm2d", "num_features": 8}],
   "shortcut": [{"name": "block.down", "type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 1, "stride": 2, "bias": false}]},
  {"name": "relu", "type": "ReLU"},
  {"name": "pool", "type": "AdaptiveAvgPool2d", "output_size": 1},
  {"name": "flatten", "type": "Flatten"},
  {"name": "fc", "type": "Linear", "in_features": 8, "out_features": 3}]}`
	nodes, _, err := convert.ParseArch(arch, 0, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	spec, inits, err := bnn.SpecFromNodes(nodes, nil, []int{1, 8, 8}, runtime.Classification, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	b := spec.Layers[1]
	fmt.Println(b.Name, b.Op, len(b.Body), "body layers,", len(b.Shortcut), "shortcut layer")
	net, err := bnn.New[float32](spec, inits, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range net.Params() {
		if strings.HasPrefix(p.Name, "block.bn") {
			fmt.Println(p.Name, p.Shape, "trainable:", p.Trainable)
		}
	}
	// Output:
	// block residual 2 body layers, 1 shortcut layer
	// block.bn.weight [8] trainable: true
	// block.bn.bias [8] trainable: true
	// block.bn.running_mean [8] trainable: false
	// block.bn.running_var [8] trainable: false
	// block.bn.num_batches_tracked [] trainable: false
}
