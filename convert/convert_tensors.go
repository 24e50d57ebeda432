package convert

import (
	"fmt"
	"github.com/edgebnn/edgebnn/convert/internal/clip"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/runtime"
)

// Tensor roles in a model.
const (
	roleParam   = iota // a trainable parameter (counted as in bayesianize)
	roleBuffer         // a buffer the runtime needs (BatchNorm running statistics)
	roleOptBuf         // an optional buffer: kept when present (FFG priors)
	roleDropped        // accepted in a checkpoint and dropped (num_batches_tracked)
)

// tensorSpec is one tensor a model needs (or may have).
type tensorSpec struct {
	Name  string
	Layer string // the layer (module) name; "fa" for the factor-analysis tensors
	Shape []int
	Role  int
	// Z marks z_row and z_col, which pruning may sparsify.
	Z bool
	// Flow is the posterior of a Bernstein layer's flow parameters (bf_weight, bf_bias), whose
	// fp16 storage is decided by the accuracy gate (bernsteinGate); nil for other tensors.
	Flow *runtime.PosteriorSpec
}

func (t tensorSpec) size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// expectedTensors lists every tensor of a Spec in a canonical order (layer order, then a fixed
// order within each layer): the order of the tensor sections in the model file. An ensemble
// (Spec.Members = K > 1) lists member 0's tensors, then member 1's (named runtime.MemberPrefix(1)
// + name), and so on; each keeps its layer's name in Layer.
func expectedTensors(spec *runtime.Spec) []tensorSpec {
	out := memberTensors(spec)
	n := len(out)
	for k := 1; k < spec.Members; k++ {
		for _, t := range out[:n] {
			t.Name = runtime.MemberPrefix(k) + t.Name
			out = append(out, t)
		}
	}
	return out
}

// memberTensors lists the tensors of one network of spec (expectedTensors without members).
func memberTensors(spec *runtime.Spec) []tensorSpec {
	var out []tensorSpec
	add := func(layer, suffix string, role int, shape ...int) {
		name := suffix
		if layer != "" {
			name = layer + "." + suffix
		}
		out = append(out, tensorSpec{Name: name, Layer: layer, Shape: shape, Role: role,
			Z: suffix == "z_row" || suffix == "z_col"})
	}
	if spec.FA != nil {
		out = append(out,
			tensorSpec{Name: "fa.mean", Layer: "fa", Shape: []int{spec.FA.Dim}, Role: roleParam},
			tensorSpec{Name: "fa.factors", Layer: "fa", Shape: []int{spec.FA.Dim, spec.FA.Rank}, Role: roleParam},
			tensorSpec{Name: "fa.psi", Layer: "fa", Shape: []int{spec.FA.Dim}, Role: roleParam})
	}
	// addInducing adds an inducing posterior's tensors (MATH.md §1) for a dOut × dIn weight;
	// a global-U layer (q_inducing global) has no q(U) tensors of its own.
	addInducing := func(name string, dOut, dIn int, p *runtime.PosteriorSpec) {
		r, c := p.InducingRows, p.InducingCols
		add(name, "z_row", roleParam, r, dOut)
		add(name, "z_col", roleParam, c, dIn)
		add(name, "_d_row", roleParam, r)
		add(name, "_d_col", roleParam, c)
		add(name, "_lamda", roleParam)
		d := r * c
		switch p.QInducing {
		case runtime.QGlobal:
		case runtime.QFull:
			add(name, "inducing_mean", roleParam, d)
			add(name, "_inducing_scale_tril", roleParam, d*(d+1)/2)
		case runtime.QMatrix:
			add(name, "inducing_mean", roleParam, r, c)
			add(name, "_inducing_row_scale_tril", roleParam, r*(r+1)/2)
			add(name, "_inducing_col_scale_tril", roleParam, c*(c+1)/2)
		case runtime.QEnsemble:
			add(name, "inducing_mean", roleParam, p.EnsembleSize, r, c)
		default:
			add(name, "inducing_mean", roleParam, r, c)
			add(name, "_inducing_sd", roleParam, r, c)
		}
	}
	if spec.GlobalU != nil {
		// The global inducing posterior (paper 003 appendix H): its "weight" is the stacked
		// U_{1:L}, ΣM_out × M_in.
		layers, _, rows := spec.GlobalULayers()
		if len(layers) > 0 {
			addInducing(runtime.GlobalUName, rows, layers[0].Posterior.InducingCols, spec.GlobalU)
		}
	}
	var walk func([]runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for i := range ls {
			l := &ls[i]
			switch l.Op {
			case runtime.OpResidual:
				walk(l.Body)
				walk(l.Shortcut)
			case runtime.OpBatchNorm:
				if l.Affine {
					add(l.Name, "weight", roleParam, l.In)
					add(l.Name, "bias", roleParam, l.In)
				}
				add(l.Name, "running_mean", roleBuffer, l.In)
				add(l.Name, "running_var", roleBuffer, l.In)
				add(l.Name, "num_batches_tracked", roleDropped)
			case runtime.OpLinear, runtime.OpConv2d:
				wshape := []int{l.Out, l.In}
				k := l.In
				if l.Op == runtime.OpConv2d {
					wshape = []int{l.Out, l.In, l.Kernel[0], l.Kernel[1]}
					k = l.In * l.Kernel[0] * l.Kernel[1]
				}
				dIn := k
				if l.Bias {
					dIn++
				}
				p := l.Posterior
				switch {
				case p == nil || p.Kind == runtime.KindDeterministic:
					add(l.Name, "weight", roleParam, wshape...)
					if l.Bias {
						add(l.Name, "bias", roleParam, l.Out)
					}
				case p.Kind == runtime.KindInducing:
					addInducing(l.Name, l.Out, dIn, p)
				case p.Kind == runtime.KindFFG && p.Pruned:
					// The kept weights only (their count is in the index blob, not the spec: no
					// shape); no prior buffers.
					add(l.Name, "weight_mean_kept", roleParam)
					add(l.Name, "_weight_sd_kept", roleParam)
					if l.Bias {
						add(l.Name, "bias_mean", roleParam, l.Out)
						add(l.Name, "_bias_sd", roleParam, l.Out)
					}
				case p.Kind == runtime.KindFFG:
					add(l.Name, "weight_mean", roleParam, wshape...)
					add(l.Name, "_weight_sd", roleParam, wshape...)
					if l.Bias {
						add(l.Name, "bias_mean", roleParam, l.Out)
						add(l.Name, "_bias_sd", roleParam, l.Out)
					}
					add(l.Name, "prior_weight_mean", roleOptBuf, wshape...)
					add(l.Name, "prior_weight_sd", roleOptBuf, wshape...)
					if l.Bias {
						add(l.Name, "prior_bias_mean", roleOptBuf, l.Out)
						add(l.Name, "prior_bias_sd", roleOptBuf, l.Out)
					}
				case p.Kind == runtime.KindFCG:
					// bayesianize's FCGMixin: one Gaussian over (weight, bias); its prior buffers
					// are rebuilt from the spec.
					D := l.Out * dIn
					add(l.Name, "mean", roleParam, D)
					add(l.Name, "_scale_diag", roleParam, D)
					add(l.Name, "_scale_tril", roleParam, D, D)
					add(l.Name, "prior_mean", roleDropped)
					add(l.Name, "prior_scale_tril", roleDropped)
				case p.Kind == runtime.KindBernstein:
					// One Bernstein flow's raw parameters (M+5) per weight and bias.
					np := p.Degree + 5
					add(l.Name, "bf_weight", roleParam, append(append([]int(nil), wshape...), np)...)
					out[len(out)-1].Flow = p
					if l.Bias {
						add(l.Name, "bf_bias", roleParam, l.Out, np)
						out[len(out)-1].Flow = p
					}
				}
			}
		}
	}
	walk(spec.Layers)
	return out
}

// sameShape compares shapes, treating a scalar () and a one-element vector (1) alike (PyTorch
// 0-d tensors are often exported to safetensors as shape [1]).
func sameShape(got, want []int) bool {
	if len(got) <= 1 && len(want) <= 1 {
		g, w := 1, 1
		if len(got) == 1 {
			g = got[0]
		}
		if len(want) == 1 {
			w = want[0]
		}
		return g == w
	}
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// layerInfo is the parameter accounting of one layer (bayesianize's counting).
type layerInfo struct {
	Name string
	Kind string // deterministic, inducing, ffg, fa, bernstein, batchnorm
	// Parameters counts the layer's state_dict parameters (not buffers); entries of pruned Z
	// tensors count only when non-zero.
	Parameters int64
	// Deterministic is the parameter count of the same layer with plain weights and biases
	// (BatchNorm: its affine weight and bias).
	Deterministic int64
	// Z and ZPruned count Z_r and Z_c entries and how many are zero.
	Z, ZZero int64
}

// layerInfos lists the parametric layers of spec (Linear, Conv2d, BatchNorm) in order, with
// deterministic counts filled in.
func layerInfos(spec *runtime.Spec) []layerInfo {
	var out []layerInfo
	var walk func([]runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for i := range ls {
			l := &ls[i]
			switch l.Op {
			case runtime.OpResidual:
				walk(l.Body)
				walk(l.Shortcut)
			case runtime.OpBatchNorm:
				li := layerInfo{Name: l.Name, Kind: "batchnorm"}
				if l.Affine {
					li.Deterministic = 2 * int64(l.In)
				}
				out = append(out, li)
			case runtime.OpLinear, runtime.OpConv2d:
				k := int64(l.In)
				if l.Op == runtime.OpConv2d {
					k *= int64(l.Kernel[0]) * int64(l.Kernel[1])
				}
				det := int64(l.Out) * k
				if l.Bias {
					det += int64(l.Out)
				}
				kind := runtime.KindDeterministic
				if l.Posterior != nil {
					kind = l.Posterior.Kind
				}
				out = append(out, layerInfo{Name: l.Name, Kind: kind, Deterministic: det})
			}
		}
	}
	walk(spec.Layers)
	if spec.FA != nil {
		out = append(out, layerInfo{Name: "fa", Kind: runtime.KindFA})
	}
	if spec.GlobalU != nil {
		out = append(out, layerInfo{Name: runtime.GlobalUName, Kind: "global_inducing"})
	}
	return out
}

// countFunc returns, for a tensor, its element count and number of zero entries.
type countFunc func(t tensorSpec) (n, zeros int64, err error)

// countParameters fills Parameters, Z and ZZero of infos from the tensors.
func countParameters(spec *runtime.Spec, infos []layerInfo, count countFunc) error {
	idx := map[string]int{}
	for i := range infos {
		idx[infos[i].Name] = i
	}
	for _, t := range expectedTensors(spec) {
		if t.Role != roleParam {
			continue
		}
		i, ok := idx[t.Layer]
		if !ok {
			return fmt.Errorf("convert: tensor %s belongs to no parametric layer", clip.Q(t.Name))
		}
		n, zeros, err := count(t)
		if err != nil {
			return err
		}
		li := &infos[i]
		if t.Z {
			li.Z += n
			li.ZZero += zeros
			li.Parameters += n - zeros
		} else {
			li.Parameters += n
		}
	}
	return nil
}

// memberOf splits an ensemble member's tensor name ("member2/fc.weight") into the member index
// and the plain name; other names are member 0's.
func memberOf(name string) (int, string) {
	rest, ok := strings.CutPrefix(name, "member")
	if !ok {
		return 0, name
	}
	i := strings.IndexByte(rest, '/')
	if i < 1 {
		return 0, name
	}
	k, err := strconv.Atoi(rest[:i])
	if err != nil || k < 1 || runtime.MemberPrefix(k) != name[:len("member")+i+1] {
		return 0, name
	}
	return k, rest[i+1:]
}

// layerOf returns the layer a tensor name belongs to, given the known layer names (ensemble
// members' tensors belong to their layer).
func layerOf(name string, layers map[string]bool) string {
	_, name = memberOf(name)
	for i := len(name) - 1; i > 0; i-- {
		if name[i] == '.' && layers[name[:i]] {
			return name[:i]
		}
	}
	if strings.HasPrefix(name, "fa.") {
		return "fa"
	}
	if strings.HasPrefix(name, runtime.GlobalUName+".") {
		return runtime.GlobalUName
	}
	return ""
}
