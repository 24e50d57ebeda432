package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/train/data"
)

// archNodes reads the configured architecture (convert.ParseArch, the grammar of every --arch). A
// built-in ResNet name (resnet18, resnet34, resnet50: bayesianize's make_network with a 3×3 stem
// and no max-pool) is built with the training data's number of classes and input channels, so it
// needs classification images [C, H, W].
func archNodes(arch string, task string, train *data.Dataset) ([]resnet.Node, error) {
	if !resnet.Known(arch) {
		nodes, _, err := convert.ParseArch(arch, 0, 0)
		return nodes, err
	}
	if task == "regression" {
		return nil, fmt.Errorf("train: arch %s is a classifier; task %q needs another architecture", arch, task)
	}
	if train == nil || len(train.Shape) != 3 {
		var shape []int
		if train != nil {
			shape = train.Shape
		}
		return nil, fmt.Errorf("train: arch %s needs image data [C, H, W], the data's examples have shape %v", arch, shape)
	}
	nodes, _, err := convert.ParseArch(arch, train.Classes, train.Shape[0])
	if err != nil {
		return nil, fmt.Errorf("train: arch %s: %w", arch, err)
	}
	return nodes, nil
}

// storedArch returns the architecture as a checkpoint records it. An architecture read from a
// file (a JSON architecture or a print(net) file) is recorded inline, as compact JSON
// (resnet.WriteJSON, which convert.ParseArch reads back as the same tree), so that resuming,
// converting or evaluating the checkpoint does not depend on that file still existing or on the
// directory the training ran in. A built-in name, the mlp: shorthand and inline JSON are
// recorded as given. Should the tree not be writable as JSON, the file's absolute path is
// recorded instead.
func storedArch(arch string, nodes []resnet.Node) string {
	if resnet.Known(arch) || strings.HasPrefix(arch, "mlp:") || strings.HasPrefix(strings.TrimSpace(arch), "{") {
		return arch
	}
	var b, c bytes.Buffer
	if err := resnet.WriteJSON(&b, nodes); err == nil && json.Compact(&c, b.Bytes()) == nil {
		return c.String()
	}
	if abs, err := filepath.Abs(arch); err == nil {
		return abs
	}
	return arch
}
