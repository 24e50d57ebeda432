package bnn

import (
	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/runtime"
)

// SpecFromNodes turns an architecture (convert.ParseArch's tree) and a bayesianize inference
// config (nil: every layer deterministic) into a runtime.Spec — through convert.Layers, the
// converter's own mapping — and the layers' training settings. inputShape is one input's shape
// ([features] or [C, H, W]); noiseVar is the regression noise variance.
func SpecFromNodes(nodes []resnet.Node, cfg *bnnconfig.Config, inputShape []int, task runtime.Task, noiseVar float64) (*runtime.Spec, map[string]Init, error) {
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: task, InputShape: append([]int(nil), inputShape...)}
	if task == runtime.Regression {
		spec.NoiseVar = noiseVar
	}
	inits := map[string]Init{}
	var err error
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
		return Init{InitSD: l.FFG.InitSD, PriorMean: l.FFG.PriorMean, PriorBiasSD: l.FFG.EffectivePriorBiasSD(dIn),
			WholeWeights: !l.FFG.LocalReparameterization}
	case l.Kind == bnnconfig.FCG:
		return Init{InitSD: l.FCG.InitSD, PriorMean: l.FCG.PriorMean, PriorBiasSD: l.FCG.PriorBiasSD}
	}
	return Init{}
}
