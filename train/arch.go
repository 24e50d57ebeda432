package train

import (
	"bytes"
	"encoding/json"
	"fmt"

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
// file (convert.ArchIsFile: a JSON architecture or a print(net) file) is recorded inline, as
// compact JSON (resnet.WriteJSON, which convert.ParseArch reads back as the same tree), so that
// resuming, converting or evaluating the checkpoint does not depend on that file still existing
// or on the directory the training ran in. Anything else is recorded as given, as is a tree
// WriteJSON refuses (one ParseArch cannot produce).
func storedArch(arch string, nodes []resnet.Node) string {
	if !convert.ArchIsFile(arch) {
		return arch
	}
	var b, c bytes.Buffer
	if resnet.WriteJSON(&b, nodes) != nil || json.Compact(&c, b.Bytes()) != nil {
		return arch
	}
	return c.String()
}
