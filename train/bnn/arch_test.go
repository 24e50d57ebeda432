package bnn

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/runtime"
)

// resJSON is resSpec's network in the JSON architecture format.
const resJSON = `{"layers": [
  {"name": "conv1", "type": "Conv2d", "in_channels": 2, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
  {"name": "bn1", "type": "BatchNorm2d", "num_features": 4},
  {"name": "relu", "type": "ReLU"},
  {"name": "layer1.0", "type": "Residual", "body": [
    {"name": "layer1.0.conv1", "type": "Conv2d", "in_channels": 4, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer1.0.bn1", "type": "BatchNorm2d", "num_features": 4},
    {"name": "layer1.0.relu", "type": "ReLU"},
    {"name": "layer1.0.conv2", "type": "Conv2d", "in_channels": 4, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer1.0.bn2", "type": "BatchNorm2d", "num_features": 4}]},
  {"name": "layer1.0.relu", "type": "ReLU"},
  {"name": "layer2.0", "type": "Residual", "body": [
    {"name": "layer2.0.conv1", "type": "Conv2d", "in_channels": 4, "out_channels": 5, "kernel_size": 3, "stride": 2, "padding": 1, "bias": false},
    {"name": "layer2.0.bn1", "type": "BatchNorm2d", "num_features": 5},
    {"name": "layer2.0.relu", "type": "ReLU"},
    {"name": "layer2.0.conv2", "type": "Conv2d", "in_channels": 5, "out_channels": 5, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer2.0.bn2", "type": "BatchNorm2d", "num_features": 5}],
   "shortcut": [
    {"name": "layer2.0.downsample.0", "type": "Conv2d", "in_channels": 4, "out_channels": 5, "kernel_size": 1, "stride": 2, "bias": false},
    {"name": "layer2.0.downsample.1", "type": "BatchNorm2d", "num_features": 5}]},
  {"name": "layer2.0.relu", "type": "ReLU"},
  {"name": "avgpool", "type": "AdaptiveAvgPool2d", "output_size": 2},
  {"name": "flatten", "type": "Flatten"},
  {"name": "bnfc", "type": "BatchNorm1d", "num_features": 20},
  {"name": "fc", "type": "Linear", "in_features": 20, "out_features": 3}
]}`

// TestArchJSONResidual parses the JSON form of resSpec's network and checks that the trainer's
// spec is the hand-written one, with the BatchNorm momenta as training settings.
func TestArchJSONResidual(t *testing.T) {
	nodes, _, err := convert.ParseArch(resJSON, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	spec, inits, err := SpecFromNodes(nodes, nil, []int{2, 6, 6}, runtime.Classification, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := resSpec(nil)
	if !reflect.DeepEqual(spec.Layers, want.Layers) {
		t.Fatalf("layers\n%+v\nwant\n%+v", spec.Layers, want.Layers)
	}
	if in := inits["layer2.0.downsample.1"]; in.Momentum == nil || *in.Momentum != 0.1 || in.CumulativeStats {
		t.Fatalf("downsample BatchNorm init %+v, want momentum 0.1", in)
	}
	if _, err := New[float32](spec, inits, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	// momentum null is PyTorch's cumulative average.
	nodes, _, err = convert.ParseArch(strings.Replace(resJSON, `"name": "bn1", "type": "BatchNorm2d", "num_features": 4}`,
		`"name": "bn1", "type": "BatchNorm2d", "num_features": 4, "momentum": null}`, 1), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, inits, err = SpecFromNodes(nodes, nil, []int{2, 6, 6}, runtime.Classification, 0); err != nil {
		t.Fatal(err)
	}
	if in := inits["bn1"]; !in.CumulativeStats {
		t.Fatalf("bn1 with momentum null: init %+v, want cumulative statistics", in)
	}
}

// TestArchResNetSpec reads the built-in ResNet-18 and ResNet-50 through --arch's grammar
// (convert.ParseArch) into the trainer's spec: every residual block and BatchNorm is there.
func TestArchResNetSpec(t *testing.T) {
	for _, name := range []string{"resnet18", "resnet50"} {
		t.Run(name, func(t *testing.T) {
			nodes, builtin, err := convert.ParseArch(name, 10, 3)
			if err != nil || !builtin {
				t.Fatal(err, builtin)
			}
			spec, _, err := SpecFromNodes(nodes, nil, []int{3, 32, 32}, runtime.Classification, 0)
			if err != nil {
				t.Fatal(err)
			}
			blocks, bns := 0, 0
			runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
				switch l.Op {
				case runtime.OpResidual:
					blocks++
				case runtime.OpBatchNorm:
					bns++
				}
			})
			wantBlocks, wantBN := 8, 1+8*2+3 // ResNet-18: 8 BasicBlocks, 3 downsampling shortcuts
			if name == "resnet50" {
				wantBlocks, wantBN = 16, 1+16*3+4
			}
			if blocks != wantBlocks || bns != wantBN {
				t.Fatalf("%d residual blocks and %d BatchNorms, want %d and %d", blocks, bns, wantBlocks, wantBN)
			}
		})
	}
}
