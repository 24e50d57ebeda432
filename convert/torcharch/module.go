package torcharch

import "strings"

// Module is one leaf layer of the architecture. Only the fields that
// belong to Type are meaningful; the others keep their zero value. Field
// names follow PyTorch's constructor arguments.
type Module struct {
	// Name is the dotted module path as in the state_dict, e.g. "0" or
	// "features.3".
	Name string
	// Type is the PyTorch class name, e.g. "Linear", "InducingConv2d".
	Type string

	// Linear family.
	InFeatures, OutFeatures int
	// Conv2d family.
	InChannels, OutChannels int
	// KernelSize, Stride, Padding and Dilation are (height, width) for
	// Conv2d and the pooling layers; an int argument n means (n, n).
	KernelSize, Stride, Padding, Dilation [2]int
	// PaddingString is "same" or "valid" when Conv2d padding was given as
	// a string (Padding is then zero).
	PaddingString string
	// Groups of a Conv2d.
	Groups int
	// Bias of Linear/Conv2d.
	Bias bool
	// PaddingMode of a Conv2d: "zeros", "reflect", "replicate" or
	// "circular".
	PaddingMode string

	// CeilMode of the pooling layers.
	CeilMode bool
	// CountIncludePad of AvgPool2d.
	CountIncludePad bool
	// DivisorOverride of AvgPool2d; 0 means None.
	DivisorOverride int
	// OutputSize of AdaptiveAvgPool2d; -1 stands for None (keep that
	// input dimension).
	OutputSize [2]int

	// StartDim and EndDim of Flatten.
	StartDim, EndDim int

	// BatchNorm1d/BatchNorm2d.
	NumFeatures int
	Eps         float64
	// Momentum is nil for momentum=None (cumulative moving average).
	Momentum          *float64
	Affine            bool
	TrackRunningStats bool

	// P is the Dropout probability.
	P float64
	// Inplace of ReLU and Dropout.
	Inplace bool
	// Approximate of GELU: "none" or "tanh".
	Approximate string

	// InducingRows and InducingCols of the Inducing* layers.
	InducingRows, InducingCols int
	// PriorMean and PriorSD as printed by FFG*/FCG* layers ("prior
	// mean=0.00, prior sd=1.00", two decimals); nil when not printed.
	PriorMean, PriorSD *float64
}

// bayesPrefixes lists the class-name prefixes of bayesianize's layers,
// longest first, with their inference names as bayesianize_ spells them.
var bayesPrefixes = []struct{ prefix, inference string }{
	{"InducingDeterministic", "inducingdeterministic"},
	{"Inducing", "inducing"},
	{"FFG", "ffg"},
	{"FCG", "fcg"},
}

// BaseType returns the plain torch.nn class a bayesianize layer was built
// from ("InducingConv2d" → "Conv2d"); other types are returned unchanged.
func (m *Module) BaseType() string {
	for _, p := range bayesPrefixes {
		if b, ok := strings.CutPrefix(m.Type, p.prefix); ok && (b == "Linear" || b == "Conv2d") {
			return b
		}
	}
	return m.Type
}

// Inference returns the bayesianize inference name of the layer
// ("inducing", "inducingdeterministic", "ffg", "fcg"), or "" for a
// deterministic module.
func (m *Module) Inference() string {
	for _, p := range bayesPrefixes {
		if b, ok := strings.CutPrefix(m.Type, p.prefix); ok && (b == "Linear" || b == "Conv2d") {
			return p.inference
		}
	}
	return ""
}
