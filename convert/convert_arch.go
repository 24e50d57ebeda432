package convert

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/runtime"
)

// MaxArchBytes bounds an architecture file (a JSON architecture of a ResNet-50 is about 30 KiB):
// it must be a regular file of at most this size.
const MaxArchBytes = 16 << 20

// ArchIsFile reports whether ParseArch reads arch as the path of a file: it is neither a
// built-in name, the mlp: shorthand nor inline JSON (starting with '{').
func ArchIsFile(arch string) bool {
	return !resnet.Known(arch) && !strings.HasPrefix(arch, "mlp:") && !strings.HasPrefix(strings.TrimSpace(arch), "{")
}

// ParseArch reads an architecture in any form that --arch takes; convert, train and eval share
// this one grammar:
//   - a built-in name (resnet18, resnet34, resnet50): bayesianize's CIFAR ResNets (resnet.New)
//     with classes outputs and inChannels input channels;
//   - "mlp:784-256-256-10" or "mlp:1-50-1:tanh": an nn.Sequential MLP (see MLP);
//   - inline JSON (starting with '{'), or a file holding it: convert/torcharch's JSON format
//     extended with residual blocks (resnet.ParseJSON);
//   - a file holding print(net) of an nn.Sequential (torcharch.ParseRepr).
//
// The result is the architecture tree (leaf modules and residual blocks) that Layers maps to a
// Spec's layers. builtin reports a built-in ResNet.
func ParseArch(arch string, classes, inChannels int) (nodes []resnet.Node, builtin bool, err error) {
	if resnet.Known(arch) {
		nodes, err := resnet.New(arch, classes, inChannels)
		return nodes, true, err
	}
	if rest, ok := strings.CutPrefix(arch, "mlp:"); ok {
		spec, act, _ := strings.Cut(rest, ":")
		// Counted before anything is built: n widths are 2n − 2 layers (a Flatten, n − 1
		// Linear, n − 2 activations), and 400 000 widths in an 800 KB config file used to
		// allocate 1.5 GB before the runtime refused the layer count.
		if n := strings.Count(spec, "-") + 1; n > MaxMLPWidths {
			return nil, false, fmt.Errorf("convert: architecture %s: %d widths, more than %d (an MLP of n widths has 2n − 2 layers, and a network at most %d)",
				clip.Q(arch), n, MaxMLPWidths, runtime.MaxLayers)
		}
		var widths []int
		for _, f := range strings.Split(spec, "-") {
			v, err := strconv.Atoi(f)
			if err != nil {
				return nil, false, fmt.Errorf("convert: architecture %s: width %s is not an integer", clip.Q(arch), clip.Q(f))
			}
			widths = append(widths, v)
		}
		nodes, err := MLP(widths, act)
		return nodes, false, err
	}
	data, where := []byte(arch), "the inline architecture"
	if ArchIsFile(arch) {
		if data, err = readlimit.ReadFile(arch, MaxArchBytes); err != nil {
			return nil, false, fmt.Errorf("convert: architecture %s is neither a built-in name (%s), mlp:WIDTHS, inline JSON nor a readable file: %w",
				clip.Q(arch), strings.Join(resnet.Names(), ", "), err)
		}
		where = "architecture " + arch
	}
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		if nodes, err = resnet.ParseJSON(bytes.NewReader(data)); err != nil {
			return nil, false, fmt.Errorf("convert: %s: %w", where, err)
		}
		return nodes, false, nil
	}
	mods, err := torcharch.ParseRepr(bytes.NewReader(data))
	if err != nil {
		return nil, false, fmt.Errorf("convert: %s: %w", where, err)
	}
	return leaves(mods), false, nil
}

// MaxMLPWidths is the most widths an mlp: architecture (or MLP) takes: its 2n − 2 layers within
// runtime.MaxLayers.
const MaxMLPWidths = runtime.MaxLayers/2 + 1

// MLP returns the nn.Sequential MLP with the given layer widths (input first) and activation
// ("relu", the default when empty, "tanh", "sigmoid", "gelu") between its Linear layers, named as
// PyTorch numbers them, starting with a Flatten: 0 Flatten, 1 Linear, 2 ReLU, 3 Linear, …
func MLP(widths []int, act string) ([]resnet.Node, error) {
	if len(widths) < 2 {
		return nil, fmt.Errorf("convert: an MLP needs at least input and output widths, got %v", widths)
	}
	if len(widths) > MaxMLPWidths {
		return nil, fmt.Errorf("convert: an MLP of %d widths: more than %d (an MLP of n widths has 2n − 2 layers, and a network at most %d)",
			len(widths), MaxMLPWidths, runtime.MaxLayers)
	}
	if act == "" {
		act = "relu"
	}
	actType := map[string]string{"relu": "ReLU", "tanh": "Tanh", "sigmoid": "Sigmoid", "gelu": "GELU"}[act]
	if actType == "" {
		return nil, fmt.Errorf("convert: activation %s is not relu, tanh, sigmoid or gelu", clip.Q(act))
	}
	mods := []torcharch.Module{{Name: "0", Type: "Flatten", StartDim: 1, EndDim: -1}}
	for i := 1; i < len(widths); i++ {
		for _, j := range []int{i - 1, i} {
			if widths[j] < 1 {
				return nil, fmt.Errorf("convert: MLP width %d (of %d) is %d; widths must be positive", j+1, len(widths), widths[j])
			}
		}
		mods = append(mods, torcharch.Module{Name: strconv.Itoa(len(mods)), Type: "Linear",
			InFeatures: widths[i-1], OutFeatures: widths[i], Bias: true})
		if i < len(widths)-1 {
			mods = append(mods, torcharch.Module{Name: strconv.Itoa(len(mods)), Type: actType, Approximate: "none"})
		}
	}
	return leaves(mods), nil
}

// leaves makes a tree of leaf modules without residual blocks.
func leaves(mods []torcharch.Module) []resnet.Node {
	nodes := make([]resnet.Node, len(mods))
	for i := range mods {
		nodes[i] = resnet.Node{Module: &mods[i]}
	}
	return nodes
}

// Layers maps a tree of modules and a bayesianize inference config (nil: no Bayesian layers)
// to runtime layers: each module through LayerSpec, each Linear and Conv2d given its posterior
// by Posterior. It is the one mapping from an architecture to a Spec's layers, for the
// converter and the trainer; visit, when not nil, sees every module with its layer and its
// resolved settings (the trainer's initial values come from them).
func Layers(ns []resnet.Node, cfg *bnnconfig.Config, visit func(m *torcharch.Module, ls *runtime.LayerSpec, l bnnconfig.Layer)) ([]runtime.LayerSpec, error) {
	var out []runtime.LayerSpec
	for _, n := range ns {
		if n.Module == nil {
			body, err := Layers(n.Body, cfg, visit)
			if err != nil {
				return nil, err
			}
			sc, err := Layers(n.Shortcut, cfg, visit)
			if err != nil {
				return nil, err
			}
			out = append(out, runtime.LayerSpec{Name: n.Name, Op: runtime.OpResidual, Body: body, Shortcut: sc})
			continue
		}
		m := n.Module
		ls, err := LayerSpec(m)
		var l bnnconfig.Layer
		if err == nil && (ls.Op == runtime.OpLinear || ls.Op == runtime.OpConv2d) {
			ls.Posterior, l, err = Posterior(m, &ls, cfg)
		}
		if err != nil {
			return nil, fmt.Errorf("convert: module %s (%s): %w", clip.Q(m.Name), clip.S(m.Type), err)
		}
		if visit != nil {
			visit(m, &ls, l)
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
			return ls, fmt.Errorf("padding_mode=%s is not supported (only zeros)", clip.S(m.PaddingMode))
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
		return ls, fmt.Errorf("module type %s is not supported by the runtime", clip.S(m.Type))
	}
	return ls, nil
}

// Posterior resolves the posterior of a Linear or Conv2d module (ls, from LayerSpec) as
// bayesianize does from its inference config (cfg nil: deterministic), and returns the
// resolved settings too (nil posterior for a deterministic layer). A printed bayesianize module
// (InducingLinear, FFGConv2d, …) must agree with the config: its kind always, its inducing rows
// and columns where the config sets them; where the config leaves them to bayesianize's
// default (√d_out, √d_in), the printed ones (those the checkpoint was made with) count.
func Posterior(m *torcharch.Module, ls *runtime.LayerSpec, cfg *bnnconfig.Config) (*runtime.PosteriorSpec, bnnconfig.Layer, error) {
	k := ls.In // the weight's columns without the bias
	if ls.Op == runtime.OpConv2d {
		k *= ls.Kernel[0] * ls.Kernel[1]
	}
	dIn := k
	if ls.Bias {
		dIn++
	}
	printed := m.Inference()
	layer := bnnconfig.Layer{Kind: bnnconfig.None}
	if cfg != nil {
		var err error
		if layer, err = cfg.ResolveModule(m.Name, m.BaseType()); err != nil {
			return nil, layer, err
		}
	} else if printed != "" {
		return nil, layer, fmt.Errorf("the architecture has a bayesianize %s layer but no inference config was given (--config)", printed)
	}
	if printed != "" && string(layer.Kind) != printed {
		return nil, layer, fmt.Errorf("the architecture says %s but the config resolves this module to %s", clip.S(m.Type), clip.Q(string(layer.Kind)))
	}
	switch layer.Kind {
	case bnnconfig.None, "":
		return nil, layer, nil
	case bnnconfig.Inducing:
		s := layer.Inducing
		rows, cols := s.Rows(ls.Out), s.Cols(dIn)
		if printed != "" {
			if s.InducingRows == nil && m.InducingRows > 0 {
				rows = m.InducingRows
			}
			if s.InducingCols == nil && m.InducingCols > 0 {
				cols = m.InducingCols
			}
			if (m.InducingRows > 0 && m.InducingRows != rows) || (m.InducingCols > 0 && m.InducingCols != cols) {
				return nil, layer, fmt.Errorf("the architecture has inducing_rows=%d, inducing_cols=%d but the config gives %d, %d",
					m.InducingRows, m.InducingCols, rows, cols)
			}
		}
		if rows < 1 || cols < 1 {
			return nil, layer, fmt.Errorf("inducing_rows %d / inducing_cols %d must be positive", rows, cols)
		}
		p := &runtime.PosteriorSpec{Kind: runtime.KindInducing, InducingRows: rows, InducingCols: cols,
			PriorSD: s.EffectivePriorSD(dIn), MaxLamda: s.MaxLamda, MaxSDU: s.MaxSDU, QInducing: s.QInducing,
			WhitenedU: s.WhitenedU}
		if s.QInducing == runtime.QEnsemble {
			p.EnsembleSize = s.EnsembleSize
		}
		return p, layer, nil
	case bnnconfig.FFG:
		s := layer.FFG
		p := &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: s.EffectivePriorWeightSD(dIn), MaxSD: s.MaxSD}
		if b := s.EffectivePriorBiasSD(dIn); ls.Bias && b != p.PriorSD {
			p.PriorBiasSD = b // nonlinearity_scale or prior_bias_sd ≠ prior_weight_sd
		}
		return p, layer, nil
	case bnnconfig.FCG:
		// FCGMixin: prior_weight_sd ("neal": fan_in^-1/2, without the bias) for the weights and
		// prior_bias_sd for the biases; no width scaling.
		s := layer.FCG
		if s.PriorMean != 0 {
			return nil, layer, fmt.Errorf("fcg prior_mean %g is not supported by the runtime (0 is)", s.PriorMean)
		}
		return &runtime.PosteriorSpec{Kind: runtime.KindFCG, PriorSD: s.EffectivePriorWeightSD(k), PriorBiasSD: s.PriorBiasSD}, layer, nil
	}
	return nil, layer, fmt.Errorf("inference %s is not supported by the runtime (inducing, ffg and fcg are)", clip.Q(string(layer.Kind)))
}

// ffgPriors returns the FFG prior buffers bayesianize would register for a layer (used when a
// checkpoint lacks them): prior_mean and the effective weight and bias standard deviations.
func ffgPriors(cfg *bnnconfig.Config, name, class string, dIn int) (mean, wsd, bsd float64, err error) {
	l, err := cfg.ResolveModule(name, class)
	if err != nil || l.FFG == nil {
		return 0, 0, 0, fmt.Errorf("convert: layer %s: no ffg settings: %v", clip.Q(name), err)
	}
	return l.FFG.PriorMean, l.FFG.EffectivePriorWeightSD(dIn), l.FFG.EffectivePriorBiasSD(dIn), nil
}

// inferInputShape finds the input shape of a network given without one. The first parametric
// layer in execution order (residual blocks included) decides: a Linear gives [in_features]; a
// Conv2d gives [C, H, H] with C its in_channels and H the smallest size for which the layers
// before the first top-level Linear (convolutions, pooling and residual blocks, whose body and
// shortcut must agree) produce exactly that Linear's in_features. When an AdaptiveAvgPool2d
// comes before that Linear, the in_features do not depend on H and W, so the shape cannot be
// inferred: the error says so and which channel count to give. The other cases that cannot be
// inferred (a BatchNorm first, no Linear, no size that fits) are errors asking for the shape too.
func inferInputShape(layers []runtime.LayerSpec) ([]int, error) {
	first := firstParametric(layers)
	if first == nil {
		return nil, fmt.Errorf("convert: cannot infer the input shape (no Linear or Conv2d layer); give the input shape")
	}
	switch first.Op {
	case runtime.OpLinear:
		return []int{first.In}, nil
	case runtime.OpBatchNorm:
		return nil, fmt.Errorf("convert: cannot infer the input shape from layer %s (BatchNorm first); give the input shape", clip.Q(first.Name))
	}
	c := first.In
	for j := range layers {
		if layers[j].Op != runtime.OpLinear {
			continue
		}
		if pool := findOp(layers[:j], runtime.OpAdaptiveAvgPool2d); pool != nil {
			return nil, fmt.Errorf("convert: the input has %d channels (in_channels of layer %s) but its height and width cannot be inferred: "+
				"AdaptiveAvgPool2d %s gives layer %s the same in_features for every input size; give the input shape (--input-shape %d,H,W)",
				c, clip.Q(first.Name), clip.Q(pool.Name), clip.Q(layers[j].Name), c)
		}
		want := layers[j].In
		for h := 1; h <= 4096; h++ {
			if n, ok := flatSize(layers[:j], c, h); ok && n == want {
				return []int{c, h, h}, nil
			}
		}
		return nil, fmt.Errorf("convert: no square input of %d channels gives layer %s its %d in_features; give the input shape",
			c, clip.Q(layers[j].Name), want)
	}
	return nil, fmt.Errorf("convert: the input has %d channels (in_channels of layer %s) but its size cannot be inferred "+
		"in a network without a top-level Linear layer; give the input shape (--input-shape %d,H,W)", c, clip.Q(first.Name), c)
}

// firstParametric returns the first Linear, Conv2d or BatchNorm layer in execution order
// (a residual block's body before its shortcut), or nil.
func firstParametric(layers []runtime.LayerSpec) *runtime.LayerSpec {
	for i := range layers {
		switch l := &layers[i]; l.Op {
		case runtime.OpLinear, runtime.OpConv2d, runtime.OpBatchNorm:
			return l
		case runtime.OpResidual:
			if f := firstParametric(l.Body); f != nil {
				return f
			}
			if f := firstParametric(l.Shortcut); f != nil {
				return f
			}
		}
	}
	return nil
}

// findOp returns the first layer with op op, looking inside residual blocks, or nil.
func findOp(layers []runtime.LayerSpec, op runtime.Op) *runtime.LayerSpec {
	for i := range layers {
		if layers[i].Op == op {
			return &layers[i]
		}
		if layers[i].Op == runtime.OpResidual {
			if f := findOp(layers[i].Body, op); f != nil {
				return f
			}
			if f := findOp(layers[i].Shortcut, op); f != nil {
				return f
			}
		}
	}
	return nil
}

// flatSize simulates the shape of a c×h×h input through conv, pooling, Flatten and residual
// layers and returns the number of features at the end; ok is false when a size drops below 1
// or a residual block's body and shortcut disagree.
func flatSize(layers []runtime.LayerSpec, c, h int) (int, bool) {
	s, ok := shapeThrough(layers, featShape{c, h, h}, 0)
	return s.c * s.h * s.w, ok
}

// featShape is a feature map's channels, height and width (1, 1 after Flatten).
type featShape struct{ c, h, w int }

func shapeThrough(layers []runtime.LayerSpec, s featShape, depth int) (featShape, bool) {
	out := func(in, k, st, p, d int, ceil bool) int {
		if st == 0 {
			st = 1
		}
		if d == 0 {
			d = 1
		}
		num := in + 2*p - d*(k-1) - 1
		if num < 0 {
			return 0
		}
		if ceil {
			o := (num+st-1)/st + 1
			if (o-1)*st >= in+p {
				o--
			}
			return o
		}
		return num/st + 1
	}
	if depth > resnet.MaxNesting {
		return s, false
	}
	for _, l := range layers {
		switch l.Op {
		case runtime.OpConv2d, runtime.OpMaxPool2d, runtime.OpAvgPool2d:
			s.h = out(s.h, l.Kernel[0], l.Stride[0], l.Padding[0], l.Dilation[0], l.CeilMode)
			s.w = out(s.w, l.Kernel[1], l.Stride[1], l.Padding[1], l.Dilation[1], l.CeilMode)
			if l.Op == runtime.OpConv2d {
				s.c = l.Out
			}
		case runtime.OpAdaptiveAvgPool2d:
			if s.h < l.OutputSize[0] || s.w < l.OutputSize[1] {
				return s, false
			}
			s.h, s.w = l.OutputSize[0], l.OutputSize[1]
		case runtime.OpFlatten:
			s = featShape{s.c * s.h * s.w, 1, 1}
		case runtime.OpLinear:
			s = featShape{l.Out, 1, 1}
		case runtime.OpResidual:
			body, ok := shapeThrough(l.Body, s, depth+1)
			if !ok {
				return s, false
			}
			sc, ok := shapeThrough(l.Shortcut, s, depth+1)
			if !ok || sc != body {
				return s, false
			}
			s = body
		}
		if s.h < 1 || s.w < 1 {
			return s, false
		}
	}
	return s, true
}
