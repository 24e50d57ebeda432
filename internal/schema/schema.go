// Package schema declares the tensors a model file stores for each layer of a runtime.Spec (per
// posterior kind, in the file's order), counts parameters as bayesianize does, and describes
// model files (Inspect). The converter writes files from it and inspect reads them with it; it
// imports only runtime, format and the standard library, so the board binary links it without
// the converter.
package schema

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/runtime"
)

// Tensor roles in a model.
const (
	RoleParam   = iota // a trainable parameter (counted as in bayesianize)
	RoleBuffer         // a buffer the runtime needs (BatchNorm running statistics)
	RoleOptBuf         // an optional buffer: kept when present (FFG priors)
	RoleDropped        // accepted in a checkpoint and dropped (num_batches_tracked)
)

// Tensor is one tensor a model needs (or may have).
type Tensor struct {
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

func (t Tensor) Size() int {
	n := 1
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// Expected lists every tensor of a Spec in a canonical order (layer order, then a fixed
// order within each layer): the order of the tensor sections in the model file. An ensemble
// (Spec.Members = K > 1) lists member 0's tensors, then member 1's (named runtime.MemberPrefix(1)
// + name), and so on; each keeps its layer's name in Layer.
func Expected(spec *runtime.Spec) []Tensor {
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

// memberTensors lists the tensors of one network of spec (Expected without members).
func memberTensors(spec *runtime.Spec) []Tensor {
	var out []Tensor
	add := func(layer, suffix string, role int, shape ...int) {
		name := suffix
		if layer != "" {
			name = layer + "." + suffix
		}
		out = append(out, Tensor{Name: name, Layer: layer, Shape: shape, Role: role,
			Z: suffix == "z_row" || suffix == "z_col"})
	}
	if spec.FA != nil {
		out = append(out,
			Tensor{Name: "fa.mean", Layer: "fa", Shape: []int{spec.FA.Dim}, Role: RoleParam},
			Tensor{Name: "fa.factors", Layer: "fa", Shape: []int{spec.FA.Dim, spec.FA.Rank}, Role: RoleParam},
			Tensor{Name: "fa.psi", Layer: "fa", Shape: []int{spec.FA.Dim}, Role: RoleParam})
	}
	// addInducing adds an inducing posterior's tensors (MATH.md §1) for a dOut × dIn weight;
	// a global-U layer (q_inducing global) has no q(U) tensors of its own.
	addInducing := func(name string, dOut, dIn int, p *runtime.PosteriorSpec) {
		r, c := p.InducingRows, p.InducingCols
		add(name, "z_row", RoleParam, r, dOut)
		add(name, "z_col", RoleParam, c, dIn)
		add(name, "_d_row", RoleParam, r)
		add(name, "_d_col", RoleParam, c)
		add(name, "_lamda", RoleParam)
		d := r * c
		switch p.QInducing {
		case runtime.QGlobal:
		case runtime.QFull:
			add(name, "inducing_mean", RoleParam, d)
			add(name, "_inducing_scale_tril", RoleParam, d*(d+1)/2)
		case runtime.QMatrix:
			add(name, "inducing_mean", RoleParam, r, c)
			add(name, "_inducing_row_scale_tril", RoleParam, r*(r+1)/2)
			add(name, "_inducing_col_scale_tril", RoleParam, c*(c+1)/2)
		case runtime.QEnsemble:
			add(name, "inducing_mean", RoleParam, p.EnsembleSize, r, c)
		default:
			add(name, "inducing_mean", RoleParam, r, c)
			add(name, "_inducing_sd", RoleParam, r, c)
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
					add(l.Name, "weight", RoleParam, l.In)
					add(l.Name, "bias", RoleParam, l.In)
				}
				add(l.Name, "running_mean", RoleBuffer, l.In)
				add(l.Name, "running_var", RoleBuffer, l.In)
				add(l.Name, "num_batches_tracked", RoleDropped)
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
					add(l.Name, "weight", RoleParam, wshape...)
					if l.Bias {
						add(l.Name, "bias", RoleParam, l.Out)
					}
				case p.Kind == runtime.KindInducing:
					addInducing(l.Name, l.Out, dIn, p)
				case p.Kind == runtime.KindFFG && p.Pruned:
					// The kept weights only (their count is in the index blob, not the spec: no
					// shape); no prior buffers.
					add(l.Name, "weight_mean_kept", RoleParam)
					add(l.Name, "_weight_sd_kept", RoleParam)
					if l.Bias {
						add(l.Name, "bias_mean", RoleParam, l.Out)
						add(l.Name, "_bias_sd", RoleParam, l.Out)
					}
				case p.Kind == runtime.KindFFG:
					add(l.Name, "weight_mean", RoleParam, wshape...)
					add(l.Name, "_weight_sd", RoleParam, wshape...)
					if l.Bias {
						add(l.Name, "bias_mean", RoleParam, l.Out)
						add(l.Name, "_bias_sd", RoleParam, l.Out)
					}
					add(l.Name, "prior_weight_mean", RoleOptBuf, wshape...)
					add(l.Name, "prior_weight_sd", RoleOptBuf, wshape...)
					if l.Bias {
						add(l.Name, "prior_bias_mean", RoleOptBuf, l.Out)
						add(l.Name, "prior_bias_sd", RoleOptBuf, l.Out)
					}
				case p.Kind == runtime.KindFCG:
					// bayesianize's FCGMixin: one Gaussian over (weight, bias); its prior buffers
					// are rebuilt from the spec.
					D := l.Out * dIn
					add(l.Name, "mean", RoleParam, D)
					add(l.Name, "_scale_diag", RoleParam, D)
					add(l.Name, "_scale_tril", RoleParam, D, D)
					add(l.Name, "prior_mean", RoleDropped)
					add(l.Name, "prior_scale_tril", RoleDropped)
				case p.Kind == runtime.KindBernstein:
					// One Bernstein flow's raw parameters (M+5) per weight and bias.
					np := p.Degree + 5
					add(l.Name, "bf_weight", RoleParam, append(append([]int(nil), wshape...), np)...)
					out[len(out)-1].Flow = p
					if l.Bias {
						add(l.Name, "bf_bias", RoleParam, l.Out, np)
						out[len(out)-1].Flow = p
					}
				}
			}
		}
	}
	walk(spec.Layers)
	return out
}

// SameShape compares shapes, treating a scalar () and a one-element vector (1) alike (PyTorch
// 0-d tensors are often exported to safetensors as shape [1]).
func SameShape(got, want []int) bool {
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

// LayerInfo is the parameter accounting of one layer (bayesianize's counting).
type LayerInfo struct {
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

// LayerInfos lists the parametric layers of spec (Linear, Conv2d, BatchNorm) in order, with
// deterministic counts filled in.
func LayerInfos(spec *runtime.Spec) []LayerInfo {
	var out []LayerInfo
	var walk func([]runtime.LayerSpec)
	walk = func(ls []runtime.LayerSpec) {
		for i := range ls {
			l := &ls[i]
			switch l.Op {
			case runtime.OpResidual:
				walk(l.Body)
				walk(l.Shortcut)
			case runtime.OpBatchNorm:
				li := LayerInfo{Name: l.Name, Kind: "batchnorm"}
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
				out = append(out, LayerInfo{Name: l.Name, Kind: kind, Deterministic: det})
			}
		}
	}
	walk(spec.Layers)
	if spec.FA != nil {
		out = append(out, LayerInfo{Name: "fa", Kind: runtime.KindFA})
	}
	if spec.GlobalU != nil {
		out = append(out, LayerInfo{Name: runtime.GlobalUName, Kind: "global_inducing"})
	}
	return out
}

// CountFunc returns, for a tensor, its element count and number of zero entries.
type CountFunc func(t Tensor) (n, zeros int64, err error)

// CountParameters fills Parameters, Z and ZZero of infos from the tensors.
func CountParameters(spec *runtime.Spec, infos []LayerInfo, count CountFunc) error {
	idx := map[string]int{}
	for i := range infos {
		idx[infos[i].Name] = i
	}
	for _, t := range Expected(spec) {
		if t.Role != RoleParam {
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

// LayerOf returns the layer a tensor name belongs to, given the known layer names (ensemble
// members' tensors belong to their layer).
func LayerOf(name string, layers map[string]bool) string {
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
