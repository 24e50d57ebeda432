package train

import (
	"fmt"

	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/train/bnn"
	"github.com/edgebnn/edgebnn/train/data"
)

// archModules reads the configured architecture as leaf modules with residual markers (see
// bnn.ParseArch). A built-in ResNet name (resnet18, resnet34, resnet50: convert's --arch names,
// bayesianize's make_network with a 3×3 stem and no max-pool) is built with the training data's
// number of classes and input channels, so it needs classification images [C, H, W].
func archModules(arch string, task string, train *data.Dataset) ([]torcharch.Module, error) {
	if !resnet.Known(arch) {
		return bnn.ParseArch(arch)
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
	nodes, err := resnet.New(arch, train.Classes, train.Shape[0])
	if err != nil {
		return nil, fmt.Errorf("train: arch %s: %w", arch, err)
	}
	return bnn.ModulesFromNodes(nodes), nil
}
