package runtime

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/strictjson"
)

// SpecVersion is the version of the model description schema this package reads and writes.
const SpecVersion = 1

// Task is what a model's output means.
type Task string

// The tasks a model can have.
const (
	// Classification outputs logits; the likelihood is categorical (softmax).
	Classification Task = "classification"
	// Regression outputs the mean of a Gaussian with fixed noise variance Spec.NoiseVar.
	Regression Task = "regression"
)

// Op names a layer operation in a Spec.
type Op string

// The layer operations the runtime executes.
const (
	OpLinear            Op = "linear"
	OpConv2d            Op = "conv2d"
	OpReLU              Op = "relu"
	OpTanh              Op = "tanh"
	OpSigmoid           Op = "sigmoid"
	OpGELU              Op = "gelu"
	OpMaxPool2d         Op = "maxpool2d"
	OpAvgPool2d         Op = "avgpool2d"
	OpAdaptiveAvgPool2d Op = "adaptiveavgpool2d"
	OpFlatten           Op = "flatten"
	OpBatchNorm         Op = "batchnorm"
	OpDropout           Op = "dropout"
	OpIdentity          Op = "identity"
	// OpResidual computes body(x) + shortcut(x); an empty shortcut is the identity.
	OpResidual Op = "residual"
)

// Posterior kinds of a parametric layer.
const (
	// KindDeterministic: tensors <name>.weight and <name>.bias.
	KindDeterministic = "deterministic"
	// KindInducing: bayesianize inducing weights (MATH.md §1): <name>.z_row, .z_col, ._d_row,
	// ._d_col, ._lamda, .inducing_mean and the q(U) scale tensors.
	KindInducing = "inducing"
	// KindFFG: bayesianize's mean-field Gaussian: <name>.weight_mean, ._weight_sd, .bias_mean,
	// ._bias_sd (sd = softplus, clamped at MaxSD).
	KindFFG = "ffg"
	// KindFA: a slice of the network-wide factor-analysis posterior (Spec.FA).
	KindFA = "fa"
	// KindBernstein: mean-field Bernstein-flow VI (train/bfvi, paper 002), one 1-D flow of
	// degree M = PosteriorSpec.Degree per weight and bias: <name>.bf_weight with the weight's
	// shape followed by M+5 (Linear [out, in, M+5], Conv2d [out, in, kh, kw, M+5]) and, with a
	// bias, <name>.bf_bias [out, M+5]. The last axis holds the flow's raw parameters
	// (a₁′, b₁, ϑ₀, δ₁, …, δ_M, a₂′, b₂) in train/bfvi's order and parameterisation. The runtime
	// samples from a quantile table of PosteriorSpec.TableSize points per weight (bernstein.go).
	KindBernstein = "bernstein"
	// KindFCG: bayesianize's full-covariance Gaussian (FCGMixin, FCG-W of paper 003), one
	// multivariate normal N(μ, L Lᵀ) jointly over the layer's D parameters θ (the weight
	// row-major, then the bias): <name>.mean [D], <name>._scale_diag [D] (L's diagonal is its
	// softplus) and <name>._scale_tril [D, D] (L's strict lower triangle; the diagonal and upper
	// triangle are ignored, as bayesianize's torch.tril(·, −1)). The prior N(0, diag s²) has
	// s = PriorSD for weights and PriorBiasSD for biases. D is at most MaxFCGDim.
	KindFCG = "fcg"
)

// q(U) families of an inducing layer.
const (
	QDiagonal = "diagonal"
	QFull     = "full"
	QMatrix   = "matrix"
	QEnsemble = "ensemble"
	// QGlobal: the layer's U is its block of the network-wide inducing weights U_{1:L}, drawn
	// from the global inducing posterior (Spec.GlobalU, paper 003 appendix H); the layer stores
	// no q(U) tensors and must have whitened_u.
	QGlobal = "global"
)

// GlobalUName is the pseudo-layer name of the global inducing posterior's tensors
// ("_global_inducing_module.z_row", "_global_inducing_module.inducing_mean", …): the attribute
// bayesianize's register_global_inducing_weights_ adds to the network, so the names are those of
// its state_dict.
const GlobalUName = "_global_inducing_module"

// Spec is the complete description of a model apart from its tensors: the architecture, each
// layer's posterior and hyperparameters, and the likelihood. The converter stores it as JSON in the
// model file; New builds a Model from a Spec and a TensorSource.
type Spec struct {
	Version int  `json:"version"`
	Task    Task `json:"task"`
	// InputShape is the shape of one input: [features] or [channels, height, width].
	InputShape []int `json:"input_shape"`
	// NoiseVar is the Gaussian likelihood's noise variance σ_y² (regression only).
	NoiseVar float64     `json:"noise_var,omitempty"`
	Layers   []LayerSpec `json:"layers"`
	// FA describes the network-wide factor-analysis posterior, when layers have kind "fa".
	FA *FASpec `json:"fa,omitempty"`
	// GlobalU is the global inducing posterior of paper 003 appendix H (docs/GLOBALU.md), when
	// inducing layers have q_inducing "global": the layers' whitened inducing weights, stacked
	// along their rows in layer order (WalkLayers) into U_{1:L} (ΣM_out × M_in, every such
	// layer has the same inducing_cols M_in), are the "weight" of an inducing posterior with
	// σ = 1 whose own inducing matrix G is InducingRows × InducingCols. Its kind must be
	// inducing, prior_sd 1 and q_inducing one of diagonal, full, matrix or ensemble; its
	// tensors are named GlobalUName + "." + the per-layer names (z_row is
	// InducingRows × ΣM_out, z_col InducingCols × M_in).
	GlobalU *PosteriorSpec `json:"global_u,omitempty"`
	// Members is the number K of networks of an ensemble; 0 or 1 is a single network. With K > 1
	// every tensor of the model has K copies: member 0's under the plain names, member k's under
	// MemberPrefix(k) + name ("member2/fc.weight"). Sample s of a prediction runs member s mod K.
	// When every layer is deterministic this is Ensemble-W (a deep ensemble); when any layer has
	// a posterior or is an MC dropout layer, or the spec has an FA section, it is a mixture of K
	// posteriors (MultiSWAG-style, Mixture): member k's posterior is drawn from for samples k, k+K, k+2K, ….
	Members int `json:"members,omitempty"`
	// Info is carried along untouched (provenance, conversion reports).
	Info json.RawMessage `json:"info,omitempty"`
}

// LayerSpec describes one layer. Only the fields of its Op are used.
type LayerSpec struct {
	Name string `json:"name"`
	Op   Op     `json:"op"`
	// Linear: In/Out features. Conv2d: In/Out channels.
	In   int  `json:"in,omitempty"`
	Out  int  `json:"out,omitempty"`
	Bias bool `json:"bias,omitempty"`
	// Conv2d and pooling geometry (height, width).
	Kernel   [2]int `json:"kernel,omitempty"`
	Stride   [2]int `json:"stride,omitempty"`
	Padding  [2]int `json:"padding,omitempty"`
	Dilation [2]int `json:"dilation,omitempty"`
	// CeilMode is PyTorch's pooling ceil_mode.
	CeilMode bool `json:"ceil_mode,omitempty"`
	// CountIncludePad is AvgPool2d's count_include_pad (PyTorch's default is true).
	CountIncludePad bool `json:"count_include_pad,omitempty"`
	// OutputSize is AdaptiveAvgPool2d's output size.
	OutputSize [2]int `json:"output_size,omitempty"`
	// Eps is BatchNorm's epsilon; its tensors are <name>.running_mean, .running_var and, when
	// Affine, .weight and .bias.
	Eps    float64 `json:"eps,omitempty"`
	Affine bool    `json:"affine,omitempty"`
	// Residual blocks.
	Body     []LayerSpec `json:"body,omitempty"`
	Shortcut []LayerSpec `json:"shortcut,omitempty"`
	// Posterior of a Linear or Conv2d layer; nil means deterministic.
	Posterior *PosteriorSpec `json:"posterior,omitempty"`
	// P is a dropout layer's rate, 0 ≤ P < 1: each activation is dropped with probability P and
	// the kept ones are scaled by 1/(1−P) (PyTorch's inverted dropout). Absent (0) in files that
	// predate it.
	P float64 `json:"p,omitempty"`
	// MC makes a dropout layer sample at prediction time (MC dropout, Gal & Ghahramani): every
	// sample of a prediction draws its own keep mask, so the layer makes the model stochastic.
	// Without MC a dropout layer is the identity at prediction time, whatever P (PyTorch's
	// eval mode).
	MC bool `json:"mc,omitempty"`
}

// PosteriorSpec holds a parametric layer's posterior kind and the hyperparameters that are not
// stored in tensors (bayesianize keeps them in its inference config).
type PosteriorSpec struct {
	Kind string `json:"kind"`
	// Inducing weights.
	InducingRows int `json:"inducing_rows,omitempty"`
	InducingCols int `json:"inducing_cols,omitempty"`
	// PriorSD is the effective prior standard deviation σ (after sqrt width scaling).
	PriorSD      float64  `json:"prior_sd,omitempty"`
	MaxLamda     *float64 `json:"max_lamda,omitempty"`
	MaxSDU       *float64 `json:"max_sd_u,omitempty"`
	QInducing    string   `json:"q_inducing,omitempty"`
	WhitenedU    bool     `json:"whitened_u,omitempty"`
	EnsembleSize int      `json:"ensemble_size,omitempty"`
	// FFG.
	MaxSD *float64 `json:"max_sd,omitempty"`
	// Pruned marks an FFG layer whose weights were pruned (edgebnn convert --prune-snr): only the
	// kept weights are stored, as <name>.weight_mean_kept and <name>._weight_sd_kept (one value
	// per kept weight, in row-major order) with their positions in the blob <name>.weight_keep
	// (EncodeKeptIndex); every other weight is exactly zero (mean and standard deviation). The
	// biases stay dense. Readers that predate the field refuse such a file (unknown field).
	Pruned bool `json:"pruned,omitempty"`
	// FCG and FFG: the biases' prior standard deviation (0: PriorSD, which is the weights').
	PriorBiasSD float64 `json:"prior_bias_sd,omitempty"`
	// Bernstein: the flows' degree M (1 to MaxBernsteinDegree) and the runtime's quantile-table
	// size G per weight (0: DefaultBernsteinTable; 2 to MaxBernsteinTable). The table holds
	// out·in·G float32 values and bounds the Kolmogorov distance of the samples from the exact
	// flow by 1/(G−1) (BernsteinKSBound).
	Degree    int `json:"degree,omitempty"`
	TableSize int `json:"table_size,omitempty"`
}

// FASpec describes a factor-analysis posterior q(θ) = N(c, F Fᵀ + diag ψ) over the flattened
// parameter vector θ of every layer whose posterior kind is "fa", in layer order, each layer's
// weight (PyTorch layout, row-major) followed by its bias. Tensors: fa.mean (D), fa.factors (D×K,
// row-major), fa.psi (D, variances).
type FASpec struct {
	Dim  int `json:"dim"`
	Rank int `json:"rank"`
}

// MaxLayers is the most layers a Spec may have, those inside residual blocks included.
const MaxLayers = 4096

// Spec limits: a hostile file must not make the runtime allocate without bound.
const (
	maxLayers  = MaxLayers
	maxDim     = 1 << 26
	maxNesting = 16
	// maxNameBytes bounds a layer's name (PyTorch's are dotted module paths, tens of bytes):
	// error messages quote it, several times over.
	maxNameBytes = 1024
	// maxSpecTokens and maxSpecComposites bound the JSON ParseSpec decodes, checked in a
	// streaming pass before it is decoded: "{}," is 3 bytes of JSON and a 200-byte LayerSpec,
	// so a few-kilobyte compressed meta section had decoded to gigabytes before the layer
	// count was checked. The info value is not counted (it stays raw bytes, Spec.Info): a
	// 4096-layer residual network's description is about 143 k values and 26 k objects and
	// arrays (every layer writes its four [2]int geometry arrays and output_size).
	maxSpecTokens     = 1 << 20
	maxSpecComposites = 1 << 16
	// MaxMembers is the largest Spec.Members the runtime accepts.
	MaxMembers = 1024
)

// known reports whether op is one of the runtime's layer operations.
func (op Op) known() bool {
	switch op {
	case OpLinear, OpConv2d, OpReLU, OpTanh, OpSigmoid, OpGELU, OpMaxPool2d, OpAvgPool2d,
		OpAdaptiveAvgPool2d, OpFlatten, OpBatchNorm, OpDropout, OpIdentity, OpResidual:
		return true
	}
	return false
}

// checkSpecSize counts the JSON values of data outside its top-level "info" (memory bounded by
// the nesting, not the length) and fails once they exceed what any valid Spec holds.
func checkSpecSize(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	depth, tokens, composites := 0, 0, 0
	keyNext := false // at depth 1: the next token is a key
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil // io.EOF, or a syntax error that Decode reports with its position
		}
		if key, ok := tok.(string); ok && depth == 1 && keyNext {
			keyNext = false
			if key == "info" {
				var raw json.RawMessage // kept as bytes by Decode too: no amplification
				if dec.Decode(&raw) != nil {
					return nil
				}
				keyNext = true
			}
			continue
		}
		tokens++
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				depth++
				composites++
				keyNext = depth == 1 && d == '{'
			default:
				depth--
				keyNext = depth == 1
			}
		} else if depth == 1 {
			keyNext = true // a scalar value of a top-level key
		}
		if tokens > maxSpecTokens || composites > maxSpecComposites {
			return fmt.Errorf("spec: the model description holds more than %d JSON values or %d objects and arrays by byte %d (a valid one has at most %d layers)",
				maxSpecTokens, maxSpecComposites, dec.InputOffset(), maxLayers)
		}
	}
}

// LastLinear returns the network's last top-level Linear layer that no Conv2d or residual block
// follows — the layer a "last-layer" posterior (a Bernstein last layer) goes on — or nil when
// there is none.
func (s *Spec) LastLinear() *LayerSpec {
	for i := len(s.Layers) - 1; i >= 0; i-- {
		switch l := &s.Layers[i]; l.Op {
		case OpConv2d, OpResidual:
			return nil
		case OpLinear:
			return l
		}
	}
	return nil
}

// Mixture reports whether the spec is a mixture of posteriors: Members > 1 and some layer has a
// posterior other than deterministic or is an MC dropout layer (a dropout-mask posterior), or
// the spec has an FA section.
func (s *Spec) Mixture() bool {
	if s.Members < 2 {
		return false
	}
	if s.FA != nil {
		return true
	}
	found := false
	WalkLayers(s.Layers, func(l *LayerSpec) {
		if p := l.Posterior; (p != nil && p.Kind != KindDeterministic) || l.MC {
			found = true
		}
	})
	return found
}

// WalkLayers calls fn on every layer of ls in network order, a residual block before its body's
// layers and those before its shortcut's.
func WalkLayers(ls []LayerSpec, fn func(*LayerSpec)) {
	for i := range ls {
		fn(&ls[i])
		WalkLayers(ls[i].Body, fn)
		WalkLayers(ls[i].Shortcut, fn)
	}
}

// MemberPrefix is the prefix of member k's tensor names in an ensemble model (Spec.Members):
// "" for member 0, whose tensors have the plain names, and "member<k>/" for k ≥ 1.
func MemberPrefix(k int) string {
	if k == 0 {
		return ""
	}
	return "member" + strconv.Itoa(k) + "/"
}

// Validate checks the Spec's own consistency (shapes are checked again against the tensors by New).
func (s *Spec) Validate() error {
	if s.Version != SpecVersion {
		return fmt.Errorf("spec: version %d is not supported (want %d)", s.Version, SpecVersion)
	}
	switch s.Task {
	case Classification:
	case Regression:
		// A normal float32: the predictive variance adds it in float32, and the mixture NLL
		// divides by it (1e-320 gave +Inf, 1e300 an overflow blamed on the inputs).
		if nv := float32(s.NoiseVar); !(s.NoiseVar > 0) || !(nv >= 0x1p-126) || math.IsInf(float64(nv), 0) {
			return fmt.Errorf("spec: regression needs a noise_var that is a positive, normal float32 (%g to %g), got %g", 0x1p-126, math.MaxFloat32, s.NoiseVar)
		}
	default:
		return fmt.Errorf("spec: task %s is not classification or regression", clip.Q(string(s.Task)))
	}
	if len(s.InputShape) != 1 && len(s.InputShape) != 3 {
		return fmt.Errorf("spec: input_shape %v must be [features] or [channels, height, width]", s.InputShape)
	}
	n := 1
	for _, d := range s.InputShape {
		if d < 1 || d > maxDim || n > maxDim/d {
			return fmt.Errorf("spec: input_shape %v has a dimension out of range", s.InputShape)
		}
		n *= d
	}
	if len(s.Layers) == 0 {
		return fmt.Errorf("spec: no layers")
	}
	if s.Members < 0 || s.Members > MaxMembers {
		return fmt.Errorf("spec: members %d out of range (0 to %d)", s.Members, MaxMembers)
	}
	count := 0
	var walk func(ls []LayerSpec, depth int) error
	walk = func(ls []LayerSpec, depth int) error {
		if depth > maxNesting {
			return fmt.Errorf("spec: residual blocks nested deeper than %d", maxNesting)
		}
		for i := range ls {
			count++
			if count > maxLayers {
				return fmt.Errorf("spec: more than %d layers", maxLayers)
			}
			l := &ls[i]
			if len(l.Name) > maxNameBytes {
				return fmt.Errorf("spec: layer %d: name %s is longer than %d bytes", count-1, clip.Q(l.Name), maxNameBytes)
			}
			if !l.Op.known() {
				return fmt.Errorf("spec: layer %q: unknown op %s", l.Name, clip.Q(string(l.Op)))
			}
			if l.Op == OpResidual {
				if err := walk(l.Body, depth+1); err != nil {
					return err
				}
				if err := walk(l.Shortcut, depth+1); err != nil {
					return err
				}
			}
			if l.Op == OpDropout {
				if !(l.P >= 0 && l.P < 1) {
					return fmt.Errorf("spec: layer %q: dropout rate p %v outside [0, 1)", l.Name, l.P)
				}
			} else if l.P != 0 || l.MC {
				return fmt.Errorf("spec: layer %q: op %s has no dropout rate p or mc (dropout layers only)", l.Name, l.Op)
			}
			if l.Posterior != nil && l.Op != OpLinear && l.Op != OpConv2d {
				return fmt.Errorf("spec: layer %q: op %s cannot have a posterior", l.Name, l.Op)
			}
			if p := l.Posterior; p != nil && p.Pruned && p.Kind != KindFFG {
				return fmt.Errorf("spec: layer %q: pruned applies to ffg posteriors, not %s", l.Name, p.Kind)
			}
			if p := l.Posterior; p != nil {
				// The caps are minima taken with a positive scale: negative, the scale would be
				// negative (log of it NaN in the KL, samples with their sign flipped).
				for _, c := range []struct {
					name string
					v    *float64
				}{{"max_lamda", p.MaxLamda}, {"max_sd_u", p.MaxSDU}, {"max_sd", p.MaxSD}} {
					if c.v != nil && (!(*c.v >= 0) || math.IsInf(*c.v, 0)) {
						return fmt.Errorf("spec: layer %q: %s %g must be non-negative and finite", l.Name, c.name, *c.v)
					}
				}
			}
			if p := l.Posterior; p != nil && p.Kind == KindFFG {
				if !(p.PriorSD >= 0) || math.IsInf(p.PriorSD, 0) || !(p.PriorBiasSD >= 0) || math.IsInf(p.PriorBiasSD, 0) {
					return fmt.Errorf("spec: layer %q: ffg prior_sd %g and prior_bias_sd %g must be non-negative (0: the default) and finite", l.Name, p.PriorSD, p.PriorBiasSD)
				}
			}
			if p := l.Posterior; p != nil && p.Kind == KindBernstein {
				if p.Degree < 1 || p.Degree > MaxBernsteinDegree {
					return fmt.Errorf("spec: layer %q: bernstein degree %d out of range [1, %d]", l.Name, p.Degree, MaxBernsteinDegree)
				}
				if p.TableSize != 0 && (p.TableSize < 2 || p.TableSize > MaxBernsteinTable) {
					return fmt.Errorf("spec: layer %q: bernstein table_size %d out of range [2, %d]", l.Name, p.TableSize, MaxBernsteinTable)
				}
			}
			if p := l.Posterior; p != nil && p.Kind == KindInducing && p.QInducing == QGlobal {
				if s.GlobalU == nil {
					return fmt.Errorf("spec: layer %q has q_inducing global but the spec has no global_u section", l.Name)
				}
				if !p.WhitenedU {
					return fmt.Errorf("spec: layer %q: q_inducing global needs whitened_u (appendix H stacks whitened inducing weights)", l.Name)
				}
			}
			if p := l.Posterior; p != nil && p.Kind == KindFCG {
				if err := checkFCG(l); err != nil {
					return err
				}
			}
			if p := l.Posterior; p != nil && p.Kind == KindFA && s.FA == nil {
				return fmt.Errorf("spec: layer %q has an fa posterior but the spec has no fa section", l.Name)
			}
		}
		return nil
	}
	if err := walk(s.Layers, 0); err != nil {
		return err
	}
	if s.GlobalU != nil {
		if err := s.validateGlobalU(); err != nil {
			return err
		}
	}
	if s.FA != nil {
		if s.FA.Dim < 1 || s.FA.Dim > maxDim || s.FA.Rank < 1 || s.FA.Rank > 4096 {
			return fmt.Errorf("spec: fa dim %d / rank %d out of range", s.FA.Dim, s.FA.Rank)
		}
	}
	return nil
}

// GlobalULayers returns the layers whose U is drawn from the global inducing posterior
// (q_inducing global), in WalkLayers order, and the row offset of each one's block in U_{1:L};
// rows is ΣM_out.
func (s *Spec) GlobalULayers() (layers []*LayerSpec, offsets []int, rows int) {
	WalkLayers(s.Layers, func(l *LayerSpec) {
		if p := l.Posterior; p != nil && p.Kind == KindInducing && p.QInducing == QGlobal {
			layers = append(layers, l)
			offsets = append(offsets, rows)
			rows += p.InducingRows
		}
	})
	return layers, offsets, rows
}

// UseGlobalU makes every inducing layer of s a global-U layer (q_inducing global) of the global
// inducing posterior g (paper 003 appendix H; g becomes s.GlobalU, with PriorSD 1): the
// layers' own q(U) settings are dropped. Every inducing layer must have whitened_u and the
// same inducing_cols; the result is validated. The layers' posteriors are copied, not shared.
func (s *Spec) UseGlobalU(g PosteriorSpec) error {
	var err error
	n := 0
	WalkLayers(s.Layers, func(l *LayerSpec) {
		p := l.Posterior
		if err != nil || p == nil || p.Kind != KindInducing {
			return
		}
		switch {
		case !p.WhitenedU:
			err = fmt.Errorf("spec: global inducing: layer %q has whitened_u false; appendix H stacks whitened inducing weights (set whitened_u)", l.Name)
			return
		case p.QInducing == QGlobal:
			err = fmt.Errorf("spec: global inducing: layer %q already has q_inducing global", l.Name)
			return
		}
		q := *p
		q.QInducing, q.EnsembleSize = QGlobal, 0
		l.Posterior = &q
		n++
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("spec: global inducing: the network has no inducing layer")
	}
	g.Kind, g.PriorSD = KindInducing, 1
	s.GlobalU = &g
	return s.Validate()
}

// validateGlobalU checks the global_u section against the layers that use it.
func (s *Spec) validateGlobalU() error {
	g := s.GlobalU
	errf := func(format string, args ...any) error {
		return fmt.Errorf("spec: global_u: %s", fmt.Sprintf(format, args...))
	}
	if g.Kind != KindInducing {
		return errf("kind %q, want inducing", g.Kind)
	}
	if g.InducingRows < 1 || g.InducingCols < 1 || g.InducingRows > 4096 || g.InducingCols > 4096 {
		return errf("inducing_rows %d / inducing_cols %d out of range", g.InducingRows, g.InducingCols)
	}
	if g.PriorSD != 1 {
		return errf("prior_sd %g, want 1 (the stacked whitened inducing weights have prior N(0, I))", g.PriorSD)
	}
	switch g.QInducing {
	case QDiagonal, QFull, QMatrix, QEnsemble:
	default:
		return errf("q_inducing %q is not diagonal, full, matrix or ensemble", g.QInducing)
	}
	layers, _, rows := s.GlobalULayers()
	if len(layers) == 0 {
		return errf("no layer has q_inducing global")
	}
	mi := layers[0].Posterior.InducingCols
	for _, l := range layers {
		p := l.Posterior
		if p.InducingCols != mi {
			return errf("layer %q has inducing_cols %d but layer %q has %d; the layers' U are stacked along their rows, so all need the same inducing_cols",
				l.Name, p.InducingCols, layers[0].Name, mi)
		}
		if p.InducingRows < 1 || p.InducingRows > 4096 {
			return errf("layer %q: inducing_rows %d out of range", l.Name, p.InducingRows)
		}
	}
	if rows > 1<<16 {
		return errf("the stacked inducing weights have %d rows (limit %d)", rows, 1<<16)
	}
	return nil
}

// ParseSpec decodes and validates a JSON model description. Unknown fields and anything after
// the object are errors, and so is JSON too large for any valid description (maxSpecTokens),
// found before it is decoded.
func ParseSpec(data []byte) (*Spec, error) {
	if err := checkSpecSize(data); err != nil {
		return nil, err
	}
	var s Spec
	if err := strictjson.Decode(data, &s); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Clone returns a deep copy of s: no slice, pointer or JSON text of the copy is shared with s.
func (s Spec) Clone() Spec {
	s.InputShape = slices.Clone(s.InputShape)
	s.Layers = cloneLayers(s.Layers)
	if s.FA != nil {
		fa := *s.FA
		s.FA = &fa
	}
	s.GlobalU = s.GlobalU.clone()
	s.Info = slices.Clone(s.Info)
	return s
}

// cloneLayers deep-copies layer specs (residual blocks' bodies and shortcuts, posteriors).
func cloneLayers(ls []LayerSpec) []LayerSpec {
	ls = slices.Clone(ls)
	for i := range ls {
		ls[i].Body = cloneLayers(ls[i].Body)
		ls[i].Shortcut = cloneLayers(ls[i].Shortcut)
		ls[i].Posterior = ls[i].Posterior.clone()
	}
	return ls
}

// clone deep-copies p (nil for nil).
func (p *PosteriorSpec) clone() *PosteriorSpec {
	if p == nil {
		return nil
	}
	c := *p
	c.MaxLamda, c.MaxSDU, c.MaxSD = clonePtr(p.MaxLamda), clonePtr(p.MaxSDU), clonePtr(p.MaxSD)
	return &c
}

// clonePtr returns a pointer to a copy of *v (nil for nil).
func clonePtr[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
