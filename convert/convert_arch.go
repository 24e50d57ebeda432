package convert

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/runtime"
)

// loadArch reads an architecture: a built-in name (resnet18, resnet34, resnet50), a JSON
// architecture file (convert/torcharch's format) or a printed nn.Sequential repr. A Sequential
// becomes a list of leaf nodes. builtin reports whether it was a built-in ResNet.
func loadArch(arch string, classes, inChannels int) (nodes []resnet.Node, builtin bool, err error) {
	if resnet.Known(arch) {
		nodes, err := resnet.New(arch, classes, inChannels)
		return nodes, true, err
	}
	data, err := os.ReadFile(arch)
	if err != nil {
		return nil, false, fmt.Errorf("convert: architecture %q is neither a built-in name (%s) nor a readable file: %w",
			arch, strings.Join(resnet.Names(), ", "), err)
	}
	var mods []torcharch.Module
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		mods, err = torcharch.ParseJSON(bytes.NewReader(data))
	} else {
		mods, err = torcharch.ParseRepr(bytes.NewReader(data))
	}
	if err != nil {
		return nil, false, fmt.Errorf("convert: architecture %s: %w", arch, err)
	}
	for i := range mods {
		nodes = append(nodes, resnet.Node{Module: &mods[i]})
	}
	return nodes, false, nil
}

// specBuilder turns architecture nodes and a bayesianize config into a runtime.Spec.
type specBuilder struct {
	cfg *bnnconfig.Config
}

func (b *specBuilder) nodes(ns []resnet.Node) ([]runtime.LayerSpec, error) {
	var out []runtime.LayerSpec
	for _, n := range ns {
		if n.Module == nil {
			body, err := b.nodes(n.Body)
			if err != nil {
				return nil, err
			}
			sc, err := b.nodes(n.Shortcut)
			if err != nil {
				return nil, err
			}
			out = append(out, runtime.LayerSpec{Name: n.Name, Op: runtime.OpResidual, Body: body, Shortcut: sc})
			continue
		}
		ls, err := b.module(n.Module)
		if err != nil {
			return nil, fmt.Errorf("convert: module %q (%s): %w", n.Module.Name, n.Module.Type, err)
		}
		out = append(out, ls)
	}
	return out, nil
}

func pair1(p [2]int) [2]int {
	if p == [2]int{1, 1} {
		return [2]int{}
	}
	return p
}

func (b *specBuilder) module(m *torcharch.Module) (runtime.LayerSpec, error) {
	ls, err := LayerSpec(m)
	if err != nil {
		return ls, err
	}
	switch ls.Op {
	case runtime.OpLinear:
		return ls, b.posterior(m, &ls, m.OutFeatures, m.InFeatures)
	case runtime.OpConv2d:
		return ls, b.posterior(m, &ls, m.OutChannels, m.InChannels*m.KernelSize[0]*m.KernelSize[1])
	}
	return ls, nil
}

// LayerSpec maps one PyTorch module (its plain torch.nn class; bayesianize's Inducing*/FFG*
// forms map like their base class) to the runtime's layer description, without a posterior.
// Modules or arguments the runtime cannot execute are errors that say which.
func LayerSpec(m *torcharch.Module) (runtime.LayerSpec, error) {
	ls := runtime.LayerSpec{Name: m.Name}
	switch m.BaseType() {
	case "Linear":
		ls.Op, ls.In, ls.Out, ls.Bias = runtime.OpLinear, m.InFeatures, m.OutFeatures, m.Bias
		if m.InFeatures < 1 || m.OutFeatures < 1 {
			return ls, fmt.Errorf("in_features %d / out_features %d must be positive", m.InFeatures, m.OutFeatures)
		}
	case "Conv2d":
		if m.Groups != 1 {
			return ls, fmt.Errorf("groups=%d is not supported (only 1)", m.Groups)
		}
		if m.PaddingMode != "" && m.PaddingMode != "zeros" {
			return ls, fmt.Errorf("padding_mode=%s is not supported (only zeros)", m.PaddingMode)
		}
		ls.Op, ls.In, ls.Out, ls.Bias = runtime.OpConv2d, m.InChannels, m.OutChannels, m.Bias
		ls.Kernel, ls.Stride, ls.Padding, ls.Dilation = m.KernelSize, pair1(m.Stride), m.Padding, pair1(m.Dilation)
		switch m.PaddingString {
		case "valid":
			ls.Padding = [2]int{}
		case "same":
			for i := 0; i < 2; i++ {
				d := max(m.Dilation[i], 1)
				tot := d * (m.KernelSize[i] - 1)
				if tot%2 != 0 {
					return ls, fmt.Errorf("padding='same' with kernel %v and dilation %v pads asymmetrically, which is not supported", m.KernelSize, m.Dilation)
				}
				ls.Padding[i] = tot / 2
			}
		}
	case "ReLU":
		ls.Op = runtime.OpReLU
	case "Tanh":
		ls.Op = runtime.OpTanh
	case "Sigmoid":
		ls.Op = runtime.OpSigmoid
	case "GELU":
		if m.Approximate == "tanh" {
			return ls, fmt.Errorf("GELU(approximate='tanh') is not supported")
		}
		ls.Op = runtime.OpGELU
	case "Identity":
		ls.Op = runtime.OpIdentity
	case "Dropout":
		ls.Op = runtime.OpDropout
	case "Flatten":
		if m.StartDim != 1 || m.EndDim != -1 {
			return ls, fmt.Errorf("Flatten(start_dim=%d, end_dim=%d) is not supported (only 1, -1)", m.StartDim, m.EndDim)
		}
		ls.Op = runtime.OpFlatten
	case "MaxPool2d", "AvgPool2d":
		ls.Op = runtime.OpMaxPool2d
		if m.Type == "AvgPool2d" {
			ls.Op = runtime.OpAvgPool2d
			if m.DivisorOverride != 0 {
				return ls, fmt.Errorf("divisor_override is not supported")
			}
			ls.CountIncludePad = m.CountIncludePad
		} else {
			ls.Dilation = pair1(m.Dilation)
		}
		ls.Kernel, ls.Stride, ls.Padding, ls.CeilMode = m.KernelSize, m.Stride, m.Padding, m.CeilMode
	case "AdaptiveAvgPool2d":
		if m.OutputSize[0] < 1 || m.OutputSize[1] < 1 {
			return ls, fmt.Errorf("output_size %v is not supported (None entries)", m.OutputSize)
		}
		ls.Op, ls.OutputSize = runtime.OpAdaptiveAvgPool2d, m.OutputSize
	case "BatchNorm1d", "BatchNorm2d":
		if !m.TrackRunningStats {
			return ls, fmt.Errorf("track_running_stats=False is not supported (inference needs running statistics)")
		}
		ls.Op, ls.In, ls.Eps, ls.Affine = runtime.OpBatchNorm, m.NumFeatures, m.Eps, m.Affine
	default:
		return ls, fmt.Errorf("module type %s is not supported by the runtime", m.Type)
	}
	return ls, nil
}

// posterior sets ls.Posterior from the config (and the module's printed type, when it names a
// bayesianize layer). dOut and k are the weight's rows and columns without the bias.
func (b *specBuilder) posterior(m *torcharch.Module, ls *runtime.LayerSpec, dOut, k int) error {
	dIn := k
	if ls.Bias {
		dIn++
	}
	printed := m.Inference()
	kind := bnnconfig.None
	var layer bnnconfig.Layer
	if b.cfg != nil {
		var err error
		layer, err = b.cfg.ResolveModule(m.Name, m.BaseType())
		if err != nil {
			return err
		}
		kind = layer.Kind
	} else if printed != "" {
		return fmt.Errorf("the architecture has a bayesianize %s layer but no inference config was given (--config)", printed)
	}
	if printed != "" && string(kind) != printed {
		return fmt.Errorf("the architecture says %s but the config resolves this module to %q", m.Type, kind)
	}
	switch kind {
	case bnnconfig.None:
		return nil
	case bnnconfig.Inducing:
		s := layer.Inducing
		rows, cols := s.Rows(dOut), s.Cols(dIn)
		if printed != "" && (m.InducingRows != rows || m.InducingCols != cols) {
			return fmt.Errorf("the architecture has inducing_rows=%d, inducing_cols=%d but the config gives %d, %d",
				m.InducingRows, m.InducingCols, rows, cols)
		}
		if rows < 1 || cols < 1 {
			return fmt.Errorf("inducing_rows %d / inducing_cols %d must be positive", rows, cols)
		}
		p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: rows, InducingCols: cols,
			PriorSD: s.EffectivePriorSD(dIn), MaxLamda: s.MaxLamda, MaxSDU: s.MaxSDU, QInducing: s.QInducing,
			WhitenedU: s.WhitenedU}
		if s.QInducing == runtime.QEnsemble {
			p.EnsembleSize = s.EnsembleSize
		}
		ls.Posterior = p
	case bnnconfig.FFG:
		s := layer.FFG
		ls.Posterior = &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: s.EffectivePriorWeightSD(dIn), MaxSD: s.MaxSD}
	default:
		return fmt.Errorf("inference %q is not supported by the runtime (inducing and ffg are)", kind)
	}
	return nil
}

// ffgPriors returns the FFG prior buffers bayesianize would register for a layer (used when a
// checkpoint lacks them): prior_mean and the effective weight and bias standard deviations.
func ffgPriors(cfg *bnnconfig.Config, name, class string, dIn int) (mean, wsd, bsd float64, err error) {
	l, err := cfg.ResolveModule(name, class)
	if err != nil || l.FFG == nil {
		return 0, 0, 0, fmt.Errorf("convert: layer %q: no ffg settings: %v", name, err)
	}
	return l.FFG.PriorMean, l.FFG.EffectivePriorWeightSD(dIn), l.FFG.EffectivePriorBiasSD(dIn), nil
}

// inferInputShape finds the input shape of a Sequential network: [in_features] when the first
// parametric layer is a Linear; for a network starting with Conv2d, [C, H, H] with C its
// in_channels and H the smallest size for which the layers before the first Linear produce
// exactly that Linear's in_features.
func inferInputShape(layers []runtime.LayerSpec) ([]int, error) {
	for i, l := range layers {
		switch l.Op {
		case runtime.OpLinear:
			return []int{l.In}, nil
		case runtime.OpConv2d:
			c := l.In
			for j := i; j < len(layers); j++ {
				if layers[j].Op == runtime.OpLinear {
					want := layers[j].In
					for h := 1; h <= 4096; h++ {
						if n, ok := flatSize(layers[:j], c, h); ok && n == want {
							return []int{c, h, h}, nil
						}
					}
					return nil, fmt.Errorf("convert: no square input of %d channels gives layer %q its %d in_features; give the input shape",
						c, layers[j].Name, want)
				}
			}
			return nil, fmt.Errorf("convert: cannot infer the input size of a network without a Linear layer; give the input shape")
		case runtime.OpBatchNorm, runtime.OpResidual:
			return nil, fmt.Errorf("convert: cannot infer the input shape from layer %q; give the input shape", l.Name)
		}
	}
	return nil, fmt.Errorf("convert: cannot infer the input shape (no Linear or Conv2d layer); give the input shape")
}

// flatSize simulates the spatial shape through conv and pooling layers.
func flatSize(layers []runtime.LayerSpec, c, h int) (int, bool) {
	w := h
	out := func(in, k, s, p, d int, ceil bool) int {
		if s == 0 {
			s = 1
		}
		if d == 0 {
			d = 1
		}
		num := in + 2*p - d*(k-1) - 1
		if num < 0 {
			return 0
		}
		if ceil {
			o := (num+s-1)/s + 1
			if (o-1)*s >= in+p {
				o--
			}
			return o
		}
		return num/s + 1
	}
	for _, l := range layers {
		switch l.Op {
		case runtime.OpConv2d, runtime.OpMaxPool2d, runtime.OpAvgPool2d:
			h = out(h, l.Kernel[0], l.Stride[0], l.Padding[0], l.Dilation[0], l.CeilMode)
			w = out(w, l.Kernel[1], l.Stride[1], l.Padding[1], l.Dilation[1], l.CeilMode)
			if l.Op == runtime.OpConv2d {
				c = l.Out
			}
		case runtime.OpAdaptiveAvgPool2d:
			if h < l.OutputSize[0] || w < l.OutputSize[1] {
				return 0, false
			}
			h, w = l.OutputSize[0], l.OutputSize[1]
		case runtime.OpFlatten:
			return c * h * w, h > 0 && w > 0
		}
		if h < 1 || w < 1 {
			return 0, false
		}
	}
	return c * h * w, true
}
