package runtime

// The tensor schema: what each layer of a Spec stores, declared once as data. The loaders here
// fetch a layer's tensors by walking its declaration (builder.layerTensors); the converter and
// inspect list a whole file's tensors from it (internal/schema); the trainer makes its layers'
// parameters from it (train/bnn). Adding a posterior kind starts with its case in LayerTensors.

// TensorRole says what a declared tensor is for.
type TensorRole uint8

const (
	// TensorParam is a trainable parameter (counted as bayesianize counts parameters).
	TensorParam TensorRole = iota
	// TensorBuffer is a buffer the runtime needs (BatchNorm's running statistics).
	TensorBuffer
	// TensorOptional is a buffer used when present and rebuilt from the Spec when absent (an
	// ffg layer's prior).
	TensorOptional
	// TensorDropped is accepted in a checkpoint and not used (num_batches_tracked, an fcg layer's
	// prior buffers, which the Spec determines).
	TensorDropped
)

// TensorDecl declares one tensor of a layer.
type TensorDecl struct {
	// Name is the tensor's name within its layer ("weight_mean"); the model file names it
	// "<layer>.<Name>" (an ensemble member's with MemberPrefix in front).
	Name string
	// Shape is the tensor's shape (empty for a scalar); nil when Kept.
	Shape []int
	Role  TensorRole
	// Kept marks a pruned ffg layer's kept values (weight_mean_kept, _weight_sd_kept): a vector
	// whose length is the count of the layer's kept-weight index, not known from the Spec.
	Kept bool
}

// Z reports whether the tensor is an inducing layer's z_row or z_col, which pruning may
// sparsify.
func (d TensorDecl) Z() bool { return d.Name == "z_row" || d.Name == "z_col" }

// FALayer is the layer name under which a factor-analysis posterior's tensors are declared
// (FATensors): its tensors are fa.mean, fa.factors and fa.psi.
const FALayer = "fa"

// LayerTensors declares the tensors layer l stores, in the model file's order: a Linear or
// Conv2d layer's weights for its posterior kind (Posterior nil: deterministic), a BatchNorm
// layer's affine parameters and running statistics; nil for a layer without tensors (and for a
// layer of an fa posterior, whose values are in FATensors).
func LayerTensors(l *LayerSpec) []TensorDecl {
	var out []TensorDecl
	add := func(name string, role TensorRole, shape ...int) {
		out = append(out, TensorDecl{Name: name, Shape: shape, Role: role})
	}
	switch l.Op {
	case OpBatchNorm:
		if l.Affine {
			add("weight", TensorParam, l.In)
			add("bias", TensorParam, l.In)
		}
		add("running_mean", TensorBuffer, l.In)
		add("running_var", TensorBuffer, l.In)
		add("num_batches_tracked", TensorDropped, []int{}...)
		return out
	case OpLinear, OpConv2d:
	default:
		return nil
	}
	wshape := []int{l.Out, l.In}
	k := l.In
	if l.Op == OpConv2d {
		wshape = []int{l.Out, l.In, l.Kernel[0], l.Kernel[1]}
		k = dimProd(dimProd(l.In, l.Kernel[0]), l.Kernel[1])
	}
	dIn := k
	if l.Bias {
		dIn++
	}
	p := l.Posterior
	switch {
	case p == nil || p.Kind == KindDeterministic:
		add("weight", TensorParam, wshape...)
		if l.Bias {
			add("bias", TensorParam, l.Out)
		}
	case p.Kind == KindInducing:
		return InducingTensors(l.Out, dIn, p)
	case p.Kind == KindFFG && p.Pruned:
		// The kept weights only (their count is in the kept-weight index, not the spec); no
		// prior buffers.
		out = append(out, TensorDecl{Name: "weight_mean_kept", Kept: true},
			TensorDecl{Name: "_weight_sd_kept", Kept: true})
		if l.Bias {
			add("bias_mean", TensorParam, l.Out)
			add("_bias_sd", TensorParam, l.Out)
		}
	case p.Kind == KindFFG:
		add("weight_mean", TensorParam, wshape...)
		add("_weight_sd", TensorParam, wshape...)
		if l.Bias {
			add("bias_mean", TensorParam, l.Out)
			add("_bias_sd", TensorParam, l.Out)
		}
		add("prior_weight_mean", TensorOptional, wshape...)
		add("prior_weight_sd", TensorOptional, wshape...)
		if l.Bias {
			add("prior_bias_mean", TensorOptional, l.Out)
			add("prior_bias_sd", TensorOptional, l.Out)
		}
	case p.Kind == KindFCG:
		// bayesianize's FCGMixin: one Gaussian over (weight, bias); its prior buffers are
		// rebuilt from the spec.
		D := dimProd(l.Out, dIn)
		add("mean", TensorParam, D)
		add("_scale_diag", TensorParam, D)
		add("_scale_tril", TensorParam, D, D)
		add("prior_mean", TensorDropped, D)
		add("prior_scale_tril", TensorDropped, D, D)
	case p.Kind == KindBernstein:
		// One Bernstein flow's raw parameters (M + 5) per weight and bias.
		np := p.Degree + 5
		add("bf_weight", TensorParam, append(wshape, np)...)
		if l.Bias {
			add("bf_bias", TensorParam, l.Out, np)
		}
	}
	return out
}

// InducingTensors declares an inducing posterior's tensors (MATH.md §1) for a dOut × dIn weight
// matrix (the bias column included): Z_r, Z_c, D_r, D_c, λ and q(U)'s parameters for its
// q_inducing. A layer conditioned on the global U (q_inducing global) has no q(U) tensors of its
// own; the global posterior itself (GlobalUName) declares them for the stacked U_{1:L}.
func InducingTensors(dOut, dIn int, p *PosteriorSpec) []TensorDecl {
	r, c := p.InducingRows, p.InducingCols
	out := []TensorDecl{
		{Name: "z_row", Shape: []int{r, dOut}},
		{Name: "z_col", Shape: []int{c, dIn}},
		{Name: "_d_row", Shape: []int{r}},
		{Name: "_d_col", Shape: []int{c}},
		{Name: "_lamda", Shape: []int{}},
	}
	add := func(name string, shape ...int) {
		out = append(out, TensorDecl{Name: name, Shape: shape})
	}
	d := dimProd(r, c)
	switch p.QInducing {
	case QGlobal:
	case QFull:
		add("inducing_mean", d)
		add("_inducing_scale_tril", triangular(d))
	case QMatrix:
		add("inducing_mean", r, c)
		add("_inducing_row_scale_tril", triangular(r))
		add("_inducing_col_scale_tril", triangular(c))
	case QEnsemble:
		add("inducing_mean", p.EnsembleSize, r, c)
	default:
		add("inducing_mean", r, c)
		add("_inducing_sd", r, c)
	}
	return out
}

// FATensors declares a factor-analysis posterior's tensors (MATH.md §2), layer FALayer: the mean
// c, the factors F (D × K) and the diagonal ψ.
func FATensors(s *FASpec) []TensorDecl {
	return []TensorDecl{
		{Name: "mean", Shape: []int{s.Dim}},
		{Name: "factors", Shape: []int{s.Dim, s.Rank}},
		{Name: "psi", Shape: []int{s.Dim}},
	}
}

// GlobalUTensors declares the global inducing posterior's tensors (paper 003 appendix H; layer
// GlobalUName): an inducing posterior whose "weight" is the stacked U_{1:L}, ΣM_out × M_in. Nil
// when spec has no global U or no layer conditioned on it.
func GlobalUTensors(spec *Spec) []TensorDecl {
	if spec.GlobalU == nil {
		return nil
	}
	layers, _, rows := spec.GlobalULayers()
	if len(layers) == 0 {
		return nil
	}
	return InducingTensors(rows, layers[0].Posterior.InducingCols, spec.GlobalU)
}

// oversize stands, in a declared shape, for a dimension beyond every tensor limit (maxTensor):
// products of a spec's dimensions saturate at it instead of wrapping around, which on a 32-bit
// platform could turn an absurd size into a small one that a tensor matches (a full q(U) with
// d = 65536 has d(d+1)/2 = 2^31 + 32768 values, 32768 in 32-bit int).
const oversize = 1 << 30

// dimProd is a·b for a declared shape, at most oversize; −1 when either is negative.
func dimProd(a, b int) int {
	switch {
	case a < 0 || b < 0:
		return -1
	case a != 0 && b > oversize/a:
		return oversize
	}
	return min(a*b, oversize)
}

// triangular is n(n+1)/2, the values of a packed n × n triangle, for a declared shape (at most
// oversize; −1 when n is negative).
func triangular(n int) int {
	if n < 0 {
		return -1
	}
	n = min(n, oversize)
	return int(min(int64(n)*int64(n+1)/2, oversize))
}
