package resnet_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/edgebnn/edgebnn/convert/resnet"
)

// A residual block in the JSON architecture format: convert --arch and edgebnn train --arch
// read it into the same tree, and WriteJSON writes it back with every argument spelled out.
func ExampleParseJSON() {
	arch := `{"layers": [
  {"name": "conv1", "type": "Conv2d", "in_channels": 1, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
  {"name": "block", "type": "Residual",
   "body": [{"name": "block.conv", "type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 3, "stride": 2, "padding": 1, "bias": false},
            {"name": "block.bn", "type": "BatchNorm2d", "num_features": 8}],
   "shortcut": [{"name": "block.down", "type": "Conv2d", "in_channels": 4, "out_channels": 8, "kernel_size": 1, "stride": 2, "bias": false}]},
  {"name": "pool", "type": "AdaptiveAvgPool2d", "output_size": 1},
  {"name": "flatten", "type": "Flatten"},
  {"name": "fc", "type": "Linear", "in_features": 8, "out_features": 3}]}`
	nodes, err := resnet.ParseJSON(strings.NewReader(arch))
	if err != nil {
		fmt.Println(err)
		return
	}
	b := nodes[1]
	fmt.Println(b.Name, "body:", b.Body[0].Module.Name, b.Body[1].Module.Name, "shortcut:", b.Shortcut[0].Module.Name)
	if err := resnet.WriteJSON(os.Stdout, nodes[3:]); err != nil {
		fmt.Println(err)
	}
	// Output:
	// block body: block.conv block.bn shortcut: block.down
	// {"layers": [
	//   {"name": "flatten", "type": "Flatten", "start_dim": 1, "end_dim": -1},
	//   {"name": "fc", "type": "Linear", "in_features": 8, "out_features": 3, "bias": true}
	// ]}
}
