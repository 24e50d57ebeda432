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

// Tensor roles in a model (runtime.TensorRole).
const (
	RoleParam   = runtime.TensorParam    // a trainable parameter (counted as in bayesianize)
	RoleBuffer  = runtime.TensorBuffer   // a buffer the runtime needs (BatchNorm running statistics)
	RoleOptBuf  = runtime.TensorOptional // an optional buffer: kept when present (FFG priors)
	RoleDropped = runtime.TensorDropped  // accepted in a checkpoint and dropped (num_batches_tracked)
)

// Tensor is one tensor a model file needs (or may have): a runtime.TensorDecl under its full
// name.
type Tensor struct {
	Name  string
	Layer string // the layer (module) name; "fa" for the factor-analysis tensors
	Shape []int  // nil for a pruned layer's kept values (their count is in the index blob)
	Role  runtime.TensorRole
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

// Field is the tensor's name within its layer ("weight_mean" for "member2/fc.weight_mean").
func (t Tensor) Field() string {
	_, name := memberOf(t.Name)
	return strings.TrimPrefix(name, t.Layer+".")
}

// PriorOmitter returns a writer's test for the tensors of spec: whether the tensor called name
// (a member's too), with values v, is an optional prior buffer that holds exactly the prior the
// runtime rebuilds from the spec when it is absent (runtime.OmitPrior), so a model file may
// leave it out.
func PriorOmitter(spec *runtime.Spec) func(name string, v []float32) bool {
	layers := map[string]*runtime.LayerSpec{}
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		if l.Op != runtime.OpResidual {
			layers[l.Name] = l
		}
	})
	opt := map[string]Tensor{}
	for _, t := range Expected(spec) {
		if t.Role == RoleOptBuf {
			opt[t.Name] = t
		}
	}
	return func(name string, v []float32) bool {
		t, ok := opt[name]
		return ok && layers[t.Layer] != nil && runtime.OmitPrior(layers[t.Layer], t.Field(), v)
	}
}

// Expected lists every tensor of a Spec in a canonical order (layer order, then the order of
// runtime.LayerTensors within each layer): the order of the tensor sections in the model file.
// An ensemble (Spec.Members = K > 1) lists member 0's tensors, then member 1's (named
// runtime.MemberPrefix(1) + name), and so on; each keeps its layer's name in Layer.
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

// memberTensors lists the tensors of one network of spec (Expected without members), as the
// runtime declares them: the fa posterior's, the global U's, then each layer's.
func memberTensors(spec *runtime.Spec) []Tensor {
	var out []Tensor
	add := func(layer string, decls []runtime.TensorDecl, flow *runtime.PosteriorSpec) {
		for _, d := range decls {
			name := d.Name
			if layer != "" {
				name = layer + "." + d.Name
			}
			out = append(out, Tensor{Name: name, Layer: layer, Shape: d.Shape, Role: d.Role, Z: d.Z(), Flow: flow})
		}
	}
	if spec.FA != nil {
		add(runtime.FALayer, runtime.FATensors(spec.FA), nil)
	}
	add(runtime.GlobalUName, runtime.GlobalUTensors(spec), nil)
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		var flow *runtime.PosteriorSpec
		if l.Posterior != nil && l.Posterior.Kind == runtime.KindBernstein {
			flow = l.Posterior
		}
		add(l.Name, runtime.LayerTensors(l), flow)
	})
	return out
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
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		var kind string
		switch l.Op {
		case runtime.OpBatchNorm:
			kind = "batchnorm"
		case runtime.OpLinear, runtime.OpConv2d:
			kind = runtime.KindDeterministic
			if l.Posterior != nil {
				kind = l.Posterior.Kind
			}
		default:
			return
		}
		// The same layer with plain weights and biases.
		plain := *l
		plain.Posterior = nil
		var det int64
		for _, d := range runtime.LayerTensors(&plain) {
			if d.Role == RoleParam {
				det += int64(Tensor{Shape: d.Shape}.Size())
			}
		}
		out = append(out, LayerInfo{Name: l.Name, Kind: kind, Deterministic: det})
	})
	if spec.FA != nil {
		out = append(out, LayerInfo{Name: runtime.FALayer, Kind: runtime.KindFA})
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
