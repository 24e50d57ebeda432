// Package resnet describes the torchvision ResNets that bayesianize trains on CIFAR:
// bnn.nn.nets.make_network(name, kernel_size=3, remove_maxpool=True, out_features=N), i.e.
// torchvision.models.resnetXX(num_classes=N) with conv1 replaced by a 3×3, stride 1, padding 1
// convolution without bias and the max-pool replaced by nn.Identity.
//
// Module names are torchvision's, as they appear in the state_dict: conv1, bn1, layer1.0.conv1,
// layer1.0.bn1, …, layer2.0.downsample.0 (the 1×1 shortcut convolution), layer2.0.downsample.1
// (its BatchNorm), fc. ResNet-18 and -34 use BasicBlock (two 3×3 convolutions), ResNet-50 uses
// Bottleneck (1×1, 3×3, 1×1 with expansion 4, the stride on the 3×3 as in torchvision ≥ 0.5).
package resnet

import (
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"sort"

	"github.com/edgebnn/edgebnn/convert/torcharch"
)

// Node is one step of the network: either a leaf module, or a residual block whose output is
// Body(x) + Shortcut(x) (an empty Shortcut is the identity).
type Node struct {
	// Module is the leaf module; nil for a residual block.
	Module *torcharch.Module
	// Name is the block's module name (e.g. "layer1.0") for a residual block.
	Name           string
	Body, Shortcut []Node
}

type config struct {
	bottleneck bool
	blocks     [4]int
}

var configs = map[string]config{
	"resnet18": {false, [4]int{2, 2, 2, 2}},
	"resnet34": {false, [4]int{3, 4, 6, 3}},
	"resnet50": {true, [4]int{3, 4, 6, 3}},
}

// Names lists the supported architecture names.
func Names() []string {
	out := make([]string, 0, len(configs))
	for k := range configs {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Known reports whether name is a supported architecture.
func Known(name string) bool {
	_, ok := configs[name]
	return ok
}

// DefaultInputShape is the CIFAR image shape the architectures are trained on.
var DefaultInputShape = []int{3, 32, 32}

// New returns the network called name ("resnet18", "resnet34" or "resnet50") with a classes-way
// fc layer and inChannels input channels (3 for RGB).
func New(name string, classes, inChannels int) ([]Node, error) {
	cfg, ok := configs[name]
	if !ok {
		return nil, fmt.Errorf("resnet: unknown architecture %s (known: %v)", clip.Q(name), Names())
	}
	if classes < 1 || classes > 1<<20 {
		return nil, fmt.Errorf("resnet: %d classes is out of range (give the number of classes)", classes)
	}
	if inChannels < 1 || inChannels > 4096 {
		return nil, fmt.Errorf("resnet: %d input channels is out of range", inChannels)
	}
	nodes := []Node{
		leaf(conv("conv1", inChannels, 64, 3, 1)),
		leaf(bn("bn1", 64)),
		leaf(simple("relu", "ReLU")),
		leaf(simple("maxpool", "Identity")),
	}
	inplanes := 64
	expansion := 1
	if cfg.bottleneck {
		expansion = 4
	}
	for li, planes := range []int{64, 128, 256, 512} {
		for b := 0; b < cfg.blocks[li]; b++ {
			stride := 1
			if b == 0 && li > 0 {
				stride = 2
			}
			p := fmt.Sprintf("layer%d.%d.", li+1, b)
			var body []Node
			if cfg.bottleneck {
				body = []Node{
					leaf(conv(p+"conv1", inplanes, planes, 1, 1)), leaf(bn(p+"bn1", planes)), leaf(simple(p+"relu", "ReLU")),
					leaf(conv(p+"conv2", planes, planes, 3, stride)), leaf(bn(p+"bn2", planes)), leaf(simple(p+"relu", "ReLU")),
					leaf(conv(p+"conv3", planes, planes*4, 1, 1)), leaf(bn(p+"bn3", planes*4)),
				}
			} else {
				body = []Node{
					leaf(conv(p+"conv1", inplanes, planes, 3, stride)), leaf(bn(p+"bn1", planes)), leaf(simple(p+"relu", "ReLU")),
					leaf(conv(p+"conv2", planes, planes, 3, 1)), leaf(bn(p+"bn2", planes)),
				}
			}
			var shortcut []Node
			if stride != 1 || inplanes != planes*expansion {
				shortcut = []Node{
					leaf(conv(p+"downsample.0", inplanes, planes*expansion, 1, stride)),
					leaf(bn(p+"downsample.1", planes*expansion)),
				}
			}
			nodes = append(nodes, Node{Name: p[:len(p)-1], Body: body, Shortcut: shortcut},
				leaf(simple(p+"relu", "ReLU")))
			inplanes = planes * expansion
		}
	}
	avg := simple("avgpool", "AdaptiveAvgPool2d")
	avg.OutputSize = [2]int{1, 1}
	flat := simple("flatten", "Flatten")
	flat.StartDim, flat.EndDim = 1, -1
	fc := simple("fc", "Linear")
	fc.InFeatures, fc.OutFeatures, fc.Bias = 512*expansion, classes, true
	nodes = append(nodes, leaf(avg), leaf(flat), leaf(fc))
	return nodes, nil
}

// Modules lists the leaf modules in execution order (body before shortcut), each once.
func Modules(nodes []Node) []torcharch.Module {
	var out []torcharch.Module
	seen := map[string]bool{}
	var walk func([]Node)
	walk = func(ns []Node) {
		for _, n := range ns {
			if n.Module != nil {
				if !seen[n.Module.Name] {
					seen[n.Module.Name] = true
					out = append(out, *n.Module)
				}
				continue
			}
			walk(n.Body)
			walk(n.Shortcut)
		}
	}
	walk(nodes)
	return out
}

func leaf(m torcharch.Module) Node { return Node{Module: &m} }

func simple(name, typ string) torcharch.Module { return torcharch.Module{Name: name, Type: typ} }

func conv(name string, in, out, k, stride int) torcharch.Module {
	return torcharch.Module{Name: name, Type: "Conv2d", InChannels: in, OutChannels: out,
		KernelSize: [2]int{k, k}, Stride: [2]int{stride, stride}, Padding: [2]int{k / 2, k / 2},
		Dilation: [2]int{1, 1}, Groups: 1, PaddingMode: "zeros"}
}

func bn(name string, c int) torcharch.Module {
	m := 0.1
	return torcharch.Module{Name: name, Type: "BatchNorm2d", NumFeatures: c, Eps: 1e-5, Momentum: &m,
		Affine: true, TrackRunningStats: true}
}
