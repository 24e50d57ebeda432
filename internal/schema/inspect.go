package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/runtime"
)

// Section describes one section of a model file.
type Section struct {
	Name        string `json:"name"`
	Kind        string `json:"kind"`
	Encoding    string `json:"encoding"`
	Compression string `json:"compression"`
	Shape       []int  `json:"shape,omitempty"`
	NNZ         int64  `json:"nnz,omitempty"`
	Offset      int64  `json:"offset"`
	StoredBytes int64  `json:"stored_bytes"`
	RawBytes    int64  `json:"raw_bytes"`
	CRC         string `json:"crc"`
}

// InspectLayer is one parametric layer of an inspected model.
type InspectLayer struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Parameters counts the layer's parameters as bayesianize does (every stored entry: a Z
	// pruned to a sparse encoding counts its stored values only, a dense Z all of its entries;
	// all members of an ensemble); Deterministic the plain layer's weights and biases (BatchNorm:
	// affine weight and bias) of one network. Bytes include every member's tensors.
	Parameters    int64 `json:"parameters"`
	Deterministic int64 `json:"deterministic_parameters"`
	// Nonzero counts the parameters whose value is not exactly zero (pruned entries and exact
	// zeros of dense tensors left out).
	Nonzero int64 `json:"nonzero_parameters"`
	// Bytes are the stored bytes of the layer's tensors.
	Bytes int64 `json:"bytes"`
	// ZPruned is the share of the layer's Z entries removed by pruning (not stored).
	ZPruned float64 `json:"z_pruned,omitempty"`
	// KL is the layer's KL divergence from its prior (runtime.Model.Layers).
	KL float64 `json:"kl"`
}

// InspectDropout is one dropout layer of an inspected model with a rate (runtime.LayerSpec.P
// and MC): sampled at prediction time when MC (MC dropout), else the identity there.
type InspectDropout struct {
	Name string  `json:"name"`
	P    float64 `json:"p"`
	MC   bool    `json:"mc"`
}

// Inspection describes a model file.
type Inspection struct {
	Path      string `json:"path"`
	Version   string `json:"version"`
	FileBytes int64  `json:"file_bytes"`
	// Verified is true when every checksum was checked (and matched).
	Verified                bool         `json:"verified"`
	Task                    runtime.Task `json:"task,omitempty"`
	InputShape              []int        `json:"input_shape,omitempty"`
	Parameters              int64        `json:"parameters"`
	DeterministicParameters int64        `json:"deterministic_parameters"`
	// NonzeroParameters counts the parameters whose value is not exactly zero: Parameters is
	// what is stored (bayesianize's and plan's count), this what is nonzero among it.
	NonzeroParameters int64 `json:"nonzero_parameters"`
	// Members is the number K of networks of an Ensemble-W model or of posteriors of a mixture
	// (runtime.Spec.Members; 0 for a single network); Parameters then counts all of them and
	// MemberParameters = Parameters / K one member.
	Members          int   `json:"members,omitempty"`
	MemberParameters int64 `json:"member_parameters,omitempty"`
	// Mixture is true when the members are posteriors (a mixture of posteriors,
	// runtime.Spec.Mixture) rather than deterministic networks.
	Mixture                bool           `json:"mixture,omitempty"`
	DeterministicFP32Bytes int64          `json:"deterministic_fp32_bytes"`
	Ratio                  float64        `json:"ratio"`
	KL                     float64        `json:"kl"`
	Layers                 []InspectLayer `json:"layers"`
	// Dropout lists the dropout layers with a rate, residual blocks included, in order.
	Dropout  []InspectDropout `json:"dropout,omitempty"`
	Sections []Section        `json:"sections"`
	Info     json.RawMessage  `json:"info,omitempty"`
	// Preprocess is the model's input transformation (runtime.PreprocessBlob), if it has one.
	Preprocess *runtime.Preprocess `json:"preprocess,omitempty"`
	// Policy is the model's decision policy (its "policy" section), if it has one.
	Policy *runtime.Policy `json:"policy,omitempty"`
}

// Inspect opens a model file and describes it. With verify it first checks every checksum
// (format.File.Verify) and fails on corruption. When the file opens but is not a valid model,
// the returned Inspection holds what could be read (header and sections) and the error says
// what is wrong.
func Inspect(path string, verify bool) (*Inspection, error) {
	in, err := inspect(path, verify)
	return in, clip.Error(err)
}

func inspect(path string, verify bool) (*Inspection, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	major, minor := f.Version()
	in := &Inspection{Path: path, Version: fmt.Sprintf("%d.%d", major, minor), FileBytes: f.Size()}
	for _, s := range f.Sections() {
		in.Sections = append(in.Sections, Section{Name: s.Name, Kind: s.Kind.String(), Encoding: s.Encoding.String(),
			Compression: s.Compression.String(), Shape: s.Shape, NNZ: s.NNZ, Offset: s.Offset,
			StoredBytes: s.StoredSize, RawBytes: s.RawSize, CRC: fmt.Sprintf("%08x", s.CRC)})
	}
	if verify {
		if err := f.Verify(); err != nil {
			return in, err
		}
		in.Verified = true
	}
	meta, err := f.Blob(runtime.MetaBlob)
	if err != nil {
		return in, fmt.Errorf("reading the model description: %w", err)
	}
	spec, err := runtime.ParseSpec(meta)
	if err != nil {
		return in, fmt.Errorf("%s: %w", path, err)
	}
	in.Task, in.InputShape, in.Info = spec.Task, spec.InputShape, spec.Info
	in.Dropout = dropoutLayers(spec.Layers, in.Dropout)
	if b, err := f.Blob(runtime.PolicyBlob); err == nil {
		if in.Policy, err = runtime.ParsePolicy(b, spec.Task); err != nil {
			return in, fmt.Errorf("%s: section %q: %w", path, runtime.PolicyBlob, err)
		}
	} else if !errors.Is(err, format.ErrNotFound) {
		return in, fmt.Errorf("reading the policy: %w", err)
	}
	infos := LayerInfos(spec)
	sections := map[string]format.SectionInfo{}
	for _, s := range f.Sections() {
		sections[s.Name] = s
	}
	err = CountParameters(spec, infos, func(t Tensor) (int64, int64, error) {
		s, ok := sections[t.Name]
		if !ok || s.Kind != format.KindTensor {
			return 0, 0, fmt.Errorf("%s: tensor %s is missing", path, clip.Q(t.Name))
		}
		n := int64(1)
		for _, d := range s.Shape {
			n *= int64(d)
		}
		if !t.Z {
			return n, 0, nil
		}
		// A Z stored sparsely (convert --prune) has its pruned entries removed: the parameters
		// are the stored values. A dense Z counts every entry, as bayesianize and plan do, even
		// if some happen to be exactly zero.
		if s.Encoding.IsSparse() {
			return n, n - s.NNZ, nil
		}
		return n, 0, nil
	})
	if err != nil {
		return in, err
	}
	names := map[string]bool{}
	for _, li := range infos {
		names[li.Name] = true
	}
	bytesOf := map[string]int64{}
	for _, s := range f.Sections() {
		if s.Kind == format.KindTensor || strings.HasSuffix(s.Name, ".weight_keep") {
			bytesOf[LayerOf(s.Name, names)] += s.StoredSize
		}
	}
	for _, li := range infos {
		l := InspectLayer{Name: li.Name, Kind: li.Kind, Parameters: li.Parameters, Deterministic: li.Deterministic,
			Bytes: bytesOf[li.Name]}
		if li.Z > 0 {
			l.ZPruned = float64(li.ZZero) / float64(li.Z)
		}
		in.Layers = append(in.Layers, l)
		in.Parameters += li.Parameters
		in.DeterministicParameters += li.Deterministic
	}
	if spec.Members > 1 {
		in.Members = spec.Members
		in.MemberParameters = in.Parameters / int64(spec.Members)
		in.Mixture = spec.Mixture()
	}
	in.DeterministicFP32Bytes = 4 * in.DeterministicParameters
	if in.DeterministicFP32Bytes > 0 {
		in.Ratio = float64(in.FileBytes) / float64(in.DeterministicFP32Bytes)
	}
	m, err := runtime.FromFile(f)
	if err != nil {
		return in, fmt.Errorf("%s: %w", path, err)
	}
	in.Preprocess = m.Preprocessing()
	nonzero := map[string]int64{}
	for _, t := range Expected(spec) {
		if t.Role != RoleParam {
			continue
		}
		ft, err := f.Tensor(t.Name)
		if err != nil {
			return in, fmt.Errorf("%s: %w", path, err)
		}
		v, err := ft.Float32s()
		if err != nil {
			return in, fmt.Errorf("%s: %w", path, err)
		}
		for _, x := range v {
			if x != 0 {
				nonzero[t.Layer]++
			}
		}
	}
	for i := range in.Layers {
		in.Layers[i].Nonzero = nonzero[in.Layers[i].Name]
		in.NonzeroParameters += in.Layers[i].Nonzero
	}
	kl := map[string]float64{}
	for _, li := range m.Layers() {
		kl[li.Name] = li.KL
		in.KL += li.KL
	}
	if g := m.GlobalKL(); g != 0 {
		kl[runtime.GlobalUName] = g
		in.KL += g
	}
	for i := range in.Layers {
		in.Layers[i].KL = kl[in.Layers[i].Name]
	}
	return in, nil
}

// dropoutLayers appends the dropout layers of ls with a rate or MC (residual blocks walked
// body first) to out.
func dropoutLayers(ls []runtime.LayerSpec, out []InspectDropout) []InspectDropout {
	for i := range ls {
		if l := &ls[i]; l.Op == runtime.OpDropout && (l.P != 0 || l.MC) {
			out = append(out, InspectDropout{Name: l.Name, P: l.P, MC: l.MC})
		}
		out = dropoutLayers(ls[i].Body, out)
		out = dropoutLayers(ls[i].Shortcut, out)
	}
	return out
}

// ErrCorrupt reports whether err is a checksum failure of a model file.
func ErrCorrupt(err error) bool { return errors.Is(err, format.ErrChecksum) }

// BernsteinGate is the fp16 accuracy gate's verdict on one tensor of Bernstein-flow parameters
// (<layer>.bf_weight or <layer>.bf_bias) of a model converted with --dtype f16.
//
// The runtime samples each weight from a quantile table of G points built from the stored
// parameters, and guarantees a Kolmogorov distance of at most Bound = 1/(G−1) from the flow the
// parameters define. Rounding the parameters to fp16 changes the flow itself, so the gate
// measures, for every flow of the tensor, an upper bound of the Kolmogorov distance between the
// runtime's samples from the fp16 parameters (linear interpolation in their quantile table) and
// the exact float32 flow, and stores the tensor in fp16 only if every flow stays strictly
// increasing after rounding (a₁, a₂ and every coefficient step ϑ_i − ϑ_{i−1} positive) and that
// distance is within Bound: the documented bound then holds against the trained flows.
type BernsteinGate struct {
	Name  string `json:"name"`
	Flows int    `json:"flows"`
	// F16 reports whether the tensor passed and is stored in fp16.
	F16 bool `json:"f16"`
	// Bound is the runtime's Kolmogorov bound 1/(G−1) for its table size G.
	Bound float64 `json:"ks_bound"`
	// KS is the largest upper bound, over the flows checked, of the Kolmogorov distance between
	// the runtime's samples from the fp16 parameters and the exact float32 flow (the check stops
	// at the first flow that fails).
	KS float64 `json:"ks_f16"`
	// Monotone is false when rounding made a flow not strictly increasing.
	Monotone bool `json:"monotone"`
	// Reason says why the tensor stays float32 (empty when F16).
	Reason string `json:"reason,omitempty"`
}
