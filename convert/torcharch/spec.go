package torcharch

import (
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"math"
	"strconv"
)

// value is one parsed argument value, from repr text or from JSON.
type value struct {
	kind int
	i    int64
	f    float64
	b    bool
	s    string
	tup  []value
}

const (
	vInt = iota
	vFloat
	vBool
	vNone
	vStr
	vTuple
)

func (v value) String() string {
	switch v.kind {
	case vInt:
		return strconv.FormatInt(v.i, 10)
	case vFloat:
		return strconv.FormatFloat(v.f, 'g', -1, 64)
	case vBool:
		return strconv.FormatBool(v.b)
	case vNone:
		return "None"
	case vStr:
		return strconv.Quote(v.s)
	}
	s := "("
	for i, e := range v.tup {
		if i > 0 {
			s += ", "
		}
		s += e.String()
	}
	return s + ")"
}

// Parameter kinds.
const (
	pInt = iota
	pBool
	pFloat
	pFloatOrNone
	pIntOrNone
	pPair        // int n (→ n, n) or 2-tuple of ints
	pPairOrNone  // like pPair, elements may be None (→ -1)
	pPadding     // pPair or the strings "same"/"valid"
	pString      // quoted or bare word
	pFloatOpt    // float, absent by default (PriorMean/PriorSD)
	pStridePool  // pPair defaulting to kernel_size
	pGELUApprox  // "none" or "tanh"
	pPaddingMode // zeros/reflect/replicate/circular
)

// param describes one constructor argument: its key in repr text (which
// may differ from the JSON key, e.g. "prior mean"), its JSON key, its kind,
// whether it is required, its position if PyTorch prints it
// positionally, and its default.
type param struct {
	repr, json string
	kind       int
	required   bool
	pos        int // index among positional args, or -1
	def        value
	set        func(m *Module, v value) error
}

func intV(i int64) value { return value{kind: vInt, i: i} }
func floatV(f float64) value {
	return value{kind: vFloat, f: f}
}
func boolV(b bool) value     { return value{kind: vBool, b: b} }
func strV(s string) value    { return value{kind: vStr, s: s} }
func pairV(a, b int64) value { return value{kind: vTuple, tup: []value{intV(a), intV(b)}} }

var noneV = value{kind: vNone}

func toInt(v value) (int, error) {
	if v.kind != vInt {
		return 0, fmt.Errorf("want an integer, got %s", clip.V(v))
	}
	if v.i > math.MaxInt32 || v.i < math.MinInt32 {
		return 0, fmt.Errorf("integer %d out of range", v.i)
	}
	return int(v.i), nil
}

func toFloat(v value) (float64, error) {
	switch v.kind {
	case vInt:
		return float64(v.i), nil
	case vFloat:
		if math.IsNaN(v.f) || math.IsInf(v.f, 0) {
			return 0, fmt.Errorf("non-finite number %s", clip.V(v))
		}
		return v.f, nil
	}
	return 0, fmt.Errorf("want a number, got %s", clip.V(v))
}

func toBool(v value) (bool, error) {
	if v.kind != vBool {
		return false, fmt.Errorf("want True/False, got %s", clip.V(v))
	}
	return v.b, nil
}

func toString(v value) (string, error) {
	if v.kind != vStr {
		return "", fmt.Errorf("want a string, got %s", clip.V(v))
	}
	return v.s, nil
}

// toPair converts n or (a, b) into [2]int; noneOK lets elements be None
// (→ -1).
func toPair(v value, noneOK bool) ([2]int, error) {
	elem := func(e value) (int, error) {
		if noneOK && e.kind == vNone {
			return -1, nil
		}
		n, err := toInt(e)
		if err != nil {
			return 0, err
		}
		if n < 0 {
			return 0, fmt.Errorf("negative size %d", n)
		}
		return n, nil
	}
	switch v.kind {
	case vTuple:
		if len(v.tup) != 2 {
			return [2]int{}, fmt.Errorf("want 2 values, got %s", clip.V(v))
		}
		a, err := elem(v.tup[0])
		if err != nil {
			return [2]int{}, err
		}
		b, err := elem(v.tup[1])
		if err != nil {
			return [2]int{}, err
		}
		return [2]int{a, b}, nil
	default:
		n, err := elem(v)
		if err != nil {
			return [2]int{}, err
		}
		return [2]int{n, n}, nil
	}
}

func pIntSet(f func(m *Module) *int, min int) func(*Module, value) error {
	return func(m *Module, v value) error {
		n, err := toInt(v)
		if err != nil {
			return err
		}
		if n < min {
			return fmt.Errorf("%d is below the minimum %d", n, min)
		}
		*f(m) = n
		return nil
	}
}

func pBoolSet(f func(m *Module) *bool) func(*Module, value) error {
	return func(m *Module, v value) error {
		b, err := toBool(v)
		*f(m) = b
		return err
	}
}

func pPairSet(f func(m *Module) *[2]int, noneOK bool) func(*Module, value) error {
	return func(m *Module, v value) error {
		p, err := toPair(v, noneOK)
		*f(m) = p
		return err
	}
}

// pPosPairSet is pPairSet for sizes that must be positive (kernel, stride, dilation): PyTorch
// refuses 0, which would otherwise read as the default 1 further down.
func pPosPairSet(f func(m *Module) *[2]int) func(*Module, value) error {
	return func(m *Module, v value) error {
		p, err := toPair(v, false)
		if err == nil && (p[0] < 1 || p[1] < 1) {
			err = fmt.Errorf("%v must be positive", p)
		}
		*f(m) = p
		return err
	}
}

func pEnumSet(f func(m *Module) *string, allowed ...string) func(*Module, value) error {
	return func(m *Module, v value) error {
		s, err := toString(v)
		if err != nil {
			return err
		}
		for _, a := range allowed {
			if s == a {
				*f(m) = s
				return nil
			}
		}
		return fmt.Errorf("%s is not one of %s", clip.Q(s), fmt.Sprintf("%q", allowed))
	}
}

func pFloatPtrSet(f func(m *Module) **float64, noneOK bool) func(*Module, value) error {
	return func(m *Module, v value) error {
		if noneOK && v.kind == vNone {
			*f(m) = nil
			return nil
		}
		x, err := toFloat(v)
		if err != nil {
			return err
		}
		*f(m) = &x
		return nil
	}
}

// Shared parameter lists.
var (
	linearParams = []param{
		{"in_features", "in_features", pInt, true, -1, value{}, pIntSet(func(m *Module) *int { return &m.InFeatures }, 0)},
		{"out_features", "out_features", pInt, true, -1, value{}, pIntSet(func(m *Module) *int { return &m.OutFeatures }, 0)},
		{"bias", "bias", pBool, false, -1, boolV(true), pBoolSet(func(m *Module) *bool { return &m.Bias })},
	}
	conv2dParams = []param{
		{"in_channels", "in_channels", pInt, true, 0, value{}, pIntSet(func(m *Module) *int { return &m.InChannels }, 1)},
		{"out_channels", "out_channels", pInt, true, 1, value{}, pIntSet(func(m *Module) *int { return &m.OutChannels }, 1)},
		{"kernel_size", "kernel_size", pPair, true, -1, value{}, pPosPairSet(func(m *Module) *[2]int { return &m.KernelSize })},
		{"stride", "stride", pPair, false, -1, pairV(1, 1), pPosPairSet(func(m *Module) *[2]int { return &m.Stride })},
		{"padding", "padding", pPadding, false, -1, pairV(0, 0), func(m *Module, v value) error {
			if v.kind == vStr {
				if v.s != "same" && v.s != "valid" {
					return fmt.Errorf("padding %s is not same/valid", clip.Q(v.s))
				}
				m.PaddingString, m.Padding = v.s, [2]int{}
				return nil
			}
			p, err := toPair(v, false)
			m.Padding = p
			return err
		}},
		{"dilation", "dilation", pPair, false, -1, pairV(1, 1), pPosPairSet(func(m *Module) *[2]int { return &m.Dilation })},
		{"groups", "groups", pInt, false, -1, intV(1), pIntSet(func(m *Module) *int { return &m.Groups }, 1)},
		{"bias", "bias", pBool, false, -1, boolV(true), pBoolSet(func(m *Module) *bool { return &m.Bias })},
		{"padding_mode", "padding_mode", pPaddingMode, false, -1, strV("zeros"), pEnumSet(func(m *Module) *string { return &m.PaddingMode }, "zeros", "reflect", "replicate", "circular")},
	}
	inducingParams = []param{
		{"inducing_cols", "inducing_cols", pInt, true, -1, value{}, pIntSet(func(m *Module) *int { return &m.InducingCols }, 1)},
		{"inducing_rows", "inducing_rows", pInt, true, -1, value{}, pIntSet(func(m *Module) *int { return &m.InducingRows }, 1)},
	}
	priorParams = []param{
		{"prior mean", "prior_mean", pFloatOpt, false, -1, noneV, pFloatPtrSet(func(m *Module) **float64 { return &m.PriorMean }, true)},
		{"prior sd", "prior_sd", pFloatOpt, false, -1, noneV, pFloatPtrSet(func(m *Module) **float64 { return &m.PriorSD }, true)},
	}
	maxPoolParams = []param{
		{"kernel_size", "kernel_size", pPair, true, -1, value{}, pPosPairSet(func(m *Module) *[2]int { return &m.KernelSize })},
		{"stride", "stride", pStridePool, false, -1, noneV, pPosPairSet(func(m *Module) *[2]int { return &m.Stride })},
		{"padding", "padding", pPair, false, -1, pairV(0, 0), pPairSet(func(m *Module) *[2]int { return &m.Padding }, false)},
		{"dilation", "dilation", pPair, false, -1, pairV(1, 1), pPosPairSet(func(m *Module) *[2]int { return &m.Dilation })},
		{"ceil_mode", "ceil_mode", pBool, false, -1, boolV(false), pBoolSet(func(m *Module) *bool { return &m.CeilMode })},
	}
	avgPoolParams = []param{
		{"kernel_size", "kernel_size", pPair, true, -1, value{}, pPosPairSet(func(m *Module) *[2]int { return &m.KernelSize })},
		{"stride", "stride", pStridePool, false, -1, noneV, pPosPairSet(func(m *Module) *[2]int { return &m.Stride })},
		{"padding", "padding", pPair, false, -1, pairV(0, 0), pPairSet(func(m *Module) *[2]int { return &m.Padding }, false)},
		{"ceil_mode", "ceil_mode", pBool, false, -1, boolV(false), pBoolSet(func(m *Module) *bool { return &m.CeilMode })},
		{"count_include_pad", "count_include_pad", pBool, false, -1, boolV(true), pBoolSet(func(m *Module) *bool { return &m.CountIncludePad })},
		{"divisor_override", "divisor_override", pIntOrNone, false, -1, noneV, func(m *Module, v value) error {
			if v.kind == vNone {
				m.DivisorOverride = 0
				return nil
			}
			n, err := toInt(v)
			if err == nil && n < 1 {
				err = fmt.Errorf("divisor_override %d must be positive", n)
			}
			m.DivisorOverride = n
			return err
		}},
	}
	batchNormParams = []param{
		{"num_features", "num_features", pInt, true, 0, value{}, pIntSet(func(m *Module) *int { return &m.NumFeatures }, 1)},
		{"eps", "eps", pFloat, false, -1, floatV(1e-5), func(m *Module, v value) error {
			x, err := toFloat(v)
			if err == nil && x < 0 {
				err = fmt.Errorf("%g is negative (1/√(var + eps) would be NaN)", x)
			}
			m.Eps = x
			return err
		}},
		{"momentum", "momentum", pFloatOrNone, false, -1, floatV(0.1), pFloatPtrSet(func(m *Module) **float64 { return &m.Momentum }, true)},
		{"affine", "affine", pBool, false, -1, boolV(true), pBoolSet(func(m *Module) *bool { return &m.Affine })},
		{"track_running_stats", "track_running_stats", pBool, false, -1, boolV(true), pBoolSet(func(m *Module) *bool { return &m.TrackRunningStats })},
	}
	inplaceParam = param{"inplace", "inplace", pBool, false, -1, boolV(false), pBoolSet(func(m *Module) *bool { return &m.Inplace })}
)

func concat(lists ...[]param) []param {
	var out []param
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// specs maps every supported module type to its parameters, in the order
// PyTorch prints them (which is also the order of the JSON writer).
var specs = map[string][]param{
	"Linear":                      linearParams,
	"InducingLinear":              concat(linearParams, inducingParams),
	"InducingDeterministicLinear": concat(linearParams, inducingParams),
	"FFGLinear":                   concat(linearParams, priorParams),
	"FCGLinear":                   concat(linearParams, priorParams),
	"Conv2d":                      conv2dParams,
	"InducingConv2d":              concat(conv2dParams, inducingParams),
	"InducingDeterministicConv2d": concat(conv2dParams, inducingParams),
	"FFGConv2d":                   concat(conv2dParams, priorParams),
	"FCGConv2d":                   concat(conv2dParams, priorParams),
	"ReLU":                        {inplaceParam},
	"Tanh":                        nil,
	"Sigmoid":                     nil,
	"Identity":                    nil,
	"GELU": {{"approximate", "approximate", pGELUApprox, false, -1, strV("none"),
		pEnumSet(func(m *Module) *string { return &m.Approximate }, "none", "tanh")}},
	"MaxPool2d": maxPoolParams,
	"AvgPool2d": avgPoolParams,
	"AdaptiveAvgPool2d": {{"output_size", "output_size", pPairOrNone, true, -1, value{},
		pPairSet(func(m *Module) *[2]int { return &m.OutputSize }, true)}},
	"Flatten": {
		{"start_dim", "start_dim", pInt, false, -1, intV(1), pIntSet(func(m *Module) *int { return &m.StartDim }, math.MinInt32)},
		{"end_dim", "end_dim", pInt, false, -1, intV(-1), pIntSet(func(m *Module) *int { return &m.EndDim }, math.MinInt32)},
	},
	"BatchNorm1d": batchNormParams,
	"BatchNorm2d": batchNormParams,
	"Dropout": {
		{"p", "p", pFloat, false, -1, floatV(0.5), func(m *Module, v value) error {
			x, err := toFloat(v)
			if err == nil && (x < 0 || x > 1) {
				err = fmt.Errorf("dropout probability %v outside [0, 1]", x)
			}
			m.P = x
			return err
		}},
		inplaceParam,
	},
}

// SupportedTypes returns the module types this package understands.
func SupportedTypes() []string {
	out := make([]string, 0, len(specs))
	for k := range specs {
		out = append(out, k)
	}
	sortStrings(out)
	return out
}

// build fills a Module of type typ from positional and keyword arguments.
// keyOf selects which key names apply (repr or JSON).
func build(name, typ string, positional []value, kw []kwArg, jsonKeys bool) (Module, error) {
	ps, ok := specs[typ]
	if !ok {
		return Module{}, fmt.Errorf("unknown module type %s", clip.Q(typ))
	}
	m := Module{Name: name, Type: typ}
	given := make([]*value, len(ps))
	npos := 0
	for _, p := range ps {
		if p.pos >= 0 {
			npos++
		}
	}
	if len(positional) > npos {
		return Module{}, fmt.Errorf("%s: %d positional arguments, at most %d", typ, len(positional), npos)
	}
	for i := range positional {
		for j, p := range ps {
			if p.pos == i {
				given[j] = &positional[i]
			}
		}
	}
	for i := range kw {
		found := false
		for j, p := range ps {
			key := p.repr
			if jsonKeys {
				key = p.json
			}
			if key == kw[i].key {
				if given[j] != nil {
					return Module{}, fmt.Errorf("%s: argument %s given twice", typ, clip.Q(key))
				}
				given[j] = &kw[i].val
				found = true
				break
			}
		}
		if !found {
			return Module{}, fmt.Errorf("%s: unknown argument %s", typ, clip.Q(kw[i].key))
		}
	}
	var strideGiven bool
	for j, p := range ps {
		v := given[j]
		if v == nil {
			if p.required {
				key := p.repr
				if jsonKeys {
					key = p.json
				}
				return Module{}, fmt.Errorf("%s: missing argument %s", typ, clip.Q(key))
			}
			if p.kind == pStridePool {
				continue // resolved below
			}
			v = &ps[j].def
		} else if p.kind == pStridePool {
			strideGiven = v.kind != vNone
			if !strideGiven {
				continue
			}
		}
		if err := p.set(&m, *v); err != nil {
			key := p.repr
			if jsonKeys {
				key = p.json
			}
			return Module{}, fmt.Errorf("%s: argument %s: %w", typ, clip.Q(key), err)
		}
	}
	if (typ == "MaxPool2d" || typ == "AvgPool2d") && !strideGiven {
		m.Stride = m.KernelSize
	}
	return m, nil
}

type kwArg struct {
	key string
	val value
}
