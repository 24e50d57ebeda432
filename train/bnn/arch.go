package bnn

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/runtime"
)

// MaxArchBytes bounds an architecture file (a JSON architecture of a ResNet-50 is about 30 KiB):
// it must be a regular file of at most this size.
const MaxArchBytes = 16 << 20

// MLPModules returns the modules of an nn.Sequential MLP with the given layer widths (input
// first) and activation ("relu", "tanh", "sigmoid", "gelu") between the Linear layers, named as
// PyTorch numbers them, starting with a Flatten: 0 Flatten, 1 Linear, 2 ReLU, 3 Linear, ...
func MLPModules(widths []int, act string) ([]torcharch.Module, error) {
	if len(widths) < 2 {
		return nil, fmt.Errorf("bnn: an MLP needs at least input and output widths, got %v", widths)
	}
	actType := map[string]string{"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid", "gelu": "GELU"}[act]
	if actType == "" {
		return nil, fmt.Errorf("bnn: activation %q is not relu, tanh, sigmoid or gelu", act)
	}
	mods := []torcharch.Module{{Name: "0", Type: "Flatten", StartDim: 1, EndDim: -1}}
	for i := 1; i < len(widths); i++ {
		if widths[i-1] < 1 || widths[i] < 1 {
			return nil, fmt.Errorf("bnn: MLP widths %v must be positive", widths)
		}
		mods = append(mods, torcharch.Module{Name: strconv.Itoa(len(mods)), Type: "Linear",
			InFeatures: widths[i-1], OutFeatures: widths[i], Bias: true})
		if i < len(widths)-1 {
			mods = append(mods, torcharch.Module{Name: strconv.Itoa(len(mods)), Type: actType, Approximate: "none"})
		}
	}
	return mods, nil
}

// ParseArch reads an architecture: "mlp:784-256-256-10" or "mlp:1-50-1:tanh" (see MLPModules),
// a JSON architecture file (.json; convert/torcharch's format, extended with residual blocks as
// described at ParseArchJSON), inline JSON of that format (starting with '{') or a file holding
// print(net) of an nn.Sequential (the forms of convert's --arch). Residual blocks come back
// delimited by marker modules (see ResidualBegin). convert's built-in ResNet names need the
// number of classes and input channels: build them with resnet.New and ModulesFromNodes (as
// the trainer does).
func ParseArch(s string) ([]torcharch.Module, error) {
	if rest, ok := strings.CutPrefix(s, "mlp:"); ok {
		spec, act, _ := strings.Cut(rest, ":")
		if act == "" {
			act = "relu"
		}
		var widths []int
		for _, f := range strings.Split(spec, "-") {
			v, err := strconv.Atoi(f)
			if err != nil {
				return nil, fmt.Errorf("bnn: arch %q: width %q is not an integer", s, f)
			}
			widths = append(widths, v)
		}
		return MLPModules(widths, act)
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "{") {
		mods, err := ParseArchJSON(strings.NewReader(t))
		if err != nil {
			return nil, fmt.Errorf("bnn: inline architecture: %w", err)
		}
		return mods, nil
	}
	if strings.HasSuffix(s, ".json") {
		b, err := readlimit.ReadFile(s, MaxArchBytes)
		if err != nil {
			return nil, fmt.Errorf("bnn: architecture: %w", err)
		}
		mods, err := ParseArchJSON(bytes.NewReader(b))
		if err != nil {
			return nil, fmt.Errorf("bnn: architecture %s: %w", s, err)
		}
		return mods, nil
	}
	return torcharch.ParseReprFile(s)
}

// SpecFromModules turns an architecture and a bayesianize inference config (nil: every layer
// deterministic) into a runtime.Spec and the layers' training settings. mods are leaf modules in
// execution order, with residual blocks delimited by marker modules (ResidualBegin,
// ResidualShortcut, ResidualEnd; see ParseArch and ModulesFromNodes). inputShape is one input's
// shape ([features] or [C, H, W]); noiseVar is the regression noise variance.
func SpecFromModules(mods []torcharch.Module, cfg *bnnconfig.Config, inputShape []int, task runtime.Task, noiseVar float64) (*runtime.Spec, map[string]Init, error) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: task, InputShape: append([]int(nil), inputShape...)}
	if task == runtime.Regression {
		spec.NoiseVar = noiseVar
	}
	nodes, err := NodesFromModules(mods)
	if err != nil {
		return nil, nil, err
	}
	inits := map[string]Init{}
	if spec.Layers, err = layerSpecs(nodes, cfg, inits); err != nil {
		return nil, nil, err
	}
	if err := spec.Validate(); err != nil {
		return nil, nil, err
	}
	return spec, inits, nil
}

// layerSpecs maps a tree of modules to runtime layers (convert.Layers, the converter's mapping),
// filling inits for the parametric and BatchNorm layers.
func layerSpecs(nodes []resnet.Node, cfg *bnnconfig.Config, inits map[string]Init) ([]runtime.LayerSpec, error) {
	return convert.Layers(nodes, cfg, func(m *torcharch.Module, ls *runtime.LayerSpec, l bnnconfig.Layer) {
		switch ls.Op {
		case runtime.OpLinear, runtime.OpConv2d:
			inits[ls.Name] = initOf(ls, l)
		case runtime.OpBatchNorm:
			var in Init
			if m.Momentum == nil {
				in.CumulativeStats = true
			} else {
				v := *m.Momentum
				in.Momentum = &v
			}
			inits[ls.Name] = in
		}
	})
}

// initOf is the training start of a Linear or Conv2d layer from its resolved inference settings.
func initOf(ls *runtime.LayerSpec, l bnnconfig.Layer) Init {
	switch {
	case l.Kind == bnnconfig.Inducing:
		return Init{InitLamda: l.Inducing.InitLamda, LearnLamda: l.Inducing.LearnLamda}
	case l.Kind == bnnconfig.FFG:
		dIn := ls.In
		if ls.Op == runtime.OpConv2d {
			dIn *= ls.Kernel[0] * ls.Kernel[1]
		}
		if ls.Bias {
			dIn++
		}
		return Init{InitSD: l.FFG.InitSD, PriorMean: l.FFG.PriorMean, PriorBiasSD: l.FFG.EffectivePriorBiasSD(dIn)}
	case l.Kind == bnnconfig.FCG:
		return Init{InitSD: l.FCG.InitSD, PriorMean: l.FCG.PriorMean, PriorBiasSD: l.FCG.PriorBiasSD}
	}
	return Init{}
}
