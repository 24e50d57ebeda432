// Package convert turns trained Bayesian networks into edgebnn model files.
//
// Convert reads a checkpoint — a bayesianize state_dict (.pt written by torch.save, or
// .safetensors) together with bayesianize's inference config and the architecture, or an
// edgebnn model file, which carries its own architecture — checks that every tensor the
// architecture needs is present with the right shape and that every tensor of the checkpoint is
// used, optionally prunes the inducing projections Z (package prune) and stores tensors as fp16
// (package quant), and writes the model file (package format) atomically, with the model
// description (runtime.Spec) and a provenance and conversion report in its "meta" blob.
//
// The output depends only on the tensors' names, shapes and values and on the options: the .pt
// and .safetensors exports of one state_dict give byte-identical files.
//
// Inspect describes a model file (parameter counts as bayesianize counts them, per-layer KL,
// sections) and Plan sizes a model for a board before it is trained.
package convert

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/outfile"
	"github.com/edgebnn/edgebnn/internal/schema"
	"github.com/edgebnn/edgebnn/internal/strictjson"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/statedict"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/prune"
	"github.com/edgebnn/edgebnn/quant"
	"github.com/edgebnn/edgebnn/runtime"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// Version identifies the converter in the provenance it records.
const Version = "edgebnn-convert/1"

// Options configure Convert. Checkpoint and Out are required.
type Options struct {
	// Checkpoint is a bayesianize state_dict (.pt, .pth, .safetensors) or an edgebnn model file.
	Checkpoint string
	// Config is bayesianize's inference-config JSON; needed for a state_dict with Bayesian layers.
	Config string
	// Arch is the architecture of a state_dict: a built-in name (resnet18, resnet34, resnet50:
	// bayesianize's make_network(name, kernel_size=3, remove_maxpool=True)), a JSON
	// architecture file (convert/torcharch's format with "Residual" blocks, as
	// convert/resnet.ParseJSON reads it and edgebnn train --arch takes it) or a printed
	// nn.Sequential (model.txt).
	Arch string
	// Out is the model file to write. It must not be the checkpoint.
	Out string
	// Members are further edgebnn model files or training checkpoints combined with Checkpoint
	// (member 0, also an edgebnn file) into one model of 1 + len(Members) members
	// (runtime.Spec.Members): a mixture of posteriors when they are Bayesian (MultiSWAG-style;
	// sample s draws from member s mod M), a deep ensemble (Ensemble-W) when they are
	// deterministic. Every member must have the same architecture, posteriors and
	// preprocessing, and be a single network.
	Members []string
	// DType is "f32" (default) or "f16" (see quant.KeepF32 for the tensors that stay f32).
	DType string
	// F16Policy selects which tensors stay float32 with DType f16: "default" (quant.KeepF32)
	// or "compact" (quant.KeepF32Compact, which also stores the q(U) statistics as fp16).
	F16Policy string
	// Prune is the fraction of Z entries to remove (0 = none); PrunePerLayer applies it to each
	// layer instead of globally.
	Prune         float64
	PrunePerLayer bool
	// SNRKeep, when positive (at most 1), prunes the weights of the FFG (mean-field Gaussian)
	// layers: the fraction SNRKeep of all their weights with the largest |μ|/σ is kept, the others
	// become exactly zero (prune.SNR), and the file stores only the kept weights
	// (runtime.PosteriorSpec.Pruned). Biases are kept.
	SNRKeep float64
	// Compress is "none" (default) or "zstd".
	Compress string
	// Classes is the number of outputs of a built-in ResNet (0: read it from the checkpoint).
	Classes int
	// GlobalInducing gives the keyword arguments of bayesianize's
	// register_global_inducing_weights_ call that a state_dict does not hold, for a state_dict
	// with global inducing weights (`_global_inducing_module.*` tensors; paper 003 appendix H):
	// whitened_u (default true), max_lamda and max_sd_u (default none). G's size and q(G)'s
	// family are read from the tensors. Nil: bayesianize's defaults.
	GlobalInducing *GlobalInducingArgs
	// InputShape overrides the input shape ([features] or [C, H, W]); by default it is inferred
	// (built-in ResNets: [C, 32, 32] with C from conv1; other networks from the first layer with
	// weights and the first Linear's in_features — not possible after an AdaptiveAvgPool2d, which
	// is then an error asking for it).
	InputShape []int
	// AllowClamp clamps values beyond the fp16 range to ±65504 instead of failing.
	AllowClamp bool
	// Limits bounds the resources reading a state_dict may take (zero fields: the readers'
	// defaults, torchpt.DefaultLimits and safetensors.DefaultLimits).
	Limits statedict.Limits
	// MaxMemory bounds the bytes the tensors of Checkpoint and Members may take together when
	// combining members (CheckMembers; 0: runtime.DefaultMaxMemory, the machine's memory;
	// negative: no limit).
	MaxMemory int64
	// Validate is a safetensors file with "inputs" (N × features) and "labels" (N); when set,
	// the unpruned f32 model and the written file are evaluated on it.
	Validate string
	// ValidateSamples is the number of Monte Carlo samples for validation (default 64).
	ValidateSamples int
	// Seed is the random seed of validation predictions.
	Seed uint64
	// Preprocess is the input transformation to store in the model (runtime.PreprocessBlob). nil
	// keeps the one an edgebnn checkpoint records (edgebnn train writes it), if any. It is
	// validated against the model's input shape, task and outputs. A checkpoint's decision
	// policy is not carried over: recalibrate the converted model (edgebnn calibrate).
	Preprocess *runtime.Preprocess

	// loadLimits are the runtime's load limits the model, and each member as it is added, is
	// checked against (runtime.NewLoadBudget: zero fields are the runtime's, and a field can
	// only lower its limit). Tests lower them to reach them with small members.
	loadLimits runtime.LoadLimits
}

// LayerReport describes one parametric layer of the converted model.
type LayerReport struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Parameters counts the layer's parameters as bayesianize does, after pruning (non-zero Z
	// entries only); Deterministic the plain layer's weights and biases.
	Parameters    int64 `json:"parameters"`
	Deterministic int64 `json:"deterministic_parameters"`
	// Bytes are the stored bytes of the layer's tensors in the file (without padding).
	Bytes int64 `json:"bytes"`
	// PrunedFraction is the share of the layer's Z entries set to zero.
	PrunedFraction float64 `json:"pruned_fraction"`
	// F16MaxAbsErr and F16MaxRelErr are the largest fp16 rounding errors over the layer's fp16
	// tensors (zero when nothing was converted).
	F16MaxAbsErr float64 `json:"f16_max_abs_err"`
	F16MaxRelErr float64 `json:"f16_max_rel_err"`
}

// Sizes is what Convert and Plan report of a model's size.
type Sizes struct {
	// Parameters and DeterministicParameters total the layers. For an ensemble or a mixture
	// (Members > 1) Parameters counts every member and DeterministicParameters one network.
	Parameters              int64 `json:"parameters"`
	DeterministicParameters int64 `json:"deterministic_parameters"`
	// Members is the number of networks of an Ensemble-W model or of posteriors of a mixture
	// (runtime.Spec.Members); 0 for a single network.
	Members int `json:"members,omitempty"`
	// FileBytes is the model file's size; DeterministicFP32Bytes = 4 × DeterministicParameters;
	// Ratio = FileBytes / DeterministicFP32Bytes.
	FileBytes              int64   `json:"file_bytes"`
	DeterministicFP32Bytes int64   `json:"deterministic_fp32_bytes"`
	Ratio                  float64 `json:"ratio"`
}

// Report is the outcome of Convert.
type Report struct {
	Out    string        `json:"out"`
	Layers []LayerReport `json:"layers"`
	Sizes
	// SourceSHA256 is the provenance hash of the source tensors (see Info).
	SourceSHA256 string        `json:"source_sha256"`
	Prune        *prune.Report `json:"prune,omitempty"`
	// PruneSNR is present when FFG weights were pruned by signal-to-noise ratio (Options.SNRKeep).
	PruneSNR *prune.SNRReport `json:"prune_snr,omitempty"`
	Quant    []quant.Report   `json:"quant,omitempty"`
	// Bernstein holds the fp16 gate's verdict on every Bernstein-flow tensor of an f16
	// conversion (see BernsteinGate).
	Bernstein []BernsteinGate `json:"bernstein,omitempty"`
	// Validation is set when Options.Validate was given.
	Validation *Validation `json:"validation,omitempty"`
	// Spec is the model description written into the file.
	Spec *runtime.Spec `json:"-"`
}

// Info is the JSON stored in runtime.Spec.Info by the converter (docs/FORMAT.md, "Model
// metadata").
type Info struct {
	Converter string     `json:"converter"`
	Source    SourceInfo `json:"source"`
	DType     string     `json:"dtype"`
	Compress  string     `json:"compress"`
	// Parameters and DeterministicParameters are the totals of the written model.
	Parameters              int64         `json:"parameters"`
	DeterministicParameters int64         `json:"deterministic_parameters"`
	Prune                   *prune.Report `json:"prune,omitempty"`
	// PruneSNR is present when FFG weights were pruned by signal-to-noise ratio (--snr-keep).
	PruneSNR *prune.SNRReport `json:"prune_snr,omitempty"`
	Quant    *QuantInfo       `json:"quant,omitempty"`
}

// SourceInfo is the provenance of the converted tensors.
type SourceInfo struct {
	// Kind is "state_dict" (bayesianize .pt or .safetensors) or "model" (an edgebnn model file).
	Kind string `json:"kind"`
	// SHA256 hashes the source tensors' names, shapes and values (see SourceHash).
	SHA256  string `json:"sha256"`
	Tensors int    `json:"tensors"`
	// Arch is the built-in architecture name, when one was used.
	Arch string `json:"arch,omitempty"`
}

// QuantInfo records the fp16 conversion.
type QuantInfo struct {
	Policy     string         `json:"policy"`
	AllowClamp bool           `json:"allow_clamp"`
	F16        []quant.Report `json:"f16"`
	// F32 lists the tensors kept in float32, with the reason.
	F32 []KeptF32 `json:"f32"`
	// Bernstein is the fp16 gate's verdict on each Bernstein-flow tensor the policy did not
	// keep in float32 (BernsteinGate).
	Bernstein []BernsteinGate `json:"bernstein,omitempty"`
}

// KeptF32 is a tensor the fp16 policy kept in float32.
type KeptF32 struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// model is a checked model in memory: its description and float32 tensors.
type model struct {
	spec    *runtime.Spec
	pre     *runtime.Preprocess
	expect  []schema.Tensor
	tensors map[string][]float32
	hash    string
	source  SourceInfo
}

// source tensors as read from a checkpoint, before checking.
type source struct {
	kind    string
	tensors []statedict.Tensor
	spec    *runtime.Spec // set for edgebnn model files
	pre     []byte        // an edgebnn model file's preprocess section, if any
}

// Convert converts a checkpoint into a model file as opts describe and reports on the result.
// Its error messages are at most clip.MaxMessage bytes (plus a length note), whatever the input.
func Convert(opts Options) (*Report, error) {
	rep, err := convertFile(opts)
	if err != nil && opts.Checkpoint != "" && !strings.Contains(err.Error(), opts.Checkpoint) {
		// Every error names the checkpoint being converted (and the architecture, if any).
		what := clip.Path(opts.Checkpoint)
		if opts.Arch != "" {
			what += " with architecture " + clip.Path(opts.Arch)
		}
		err = fmt.Errorf("convert: %s: %w", what, err)
	}
	return rep, clip.Error(err)
}

// CheckEncoding checks opts' storage settings — DType, Compress, Prune, SNRKeep and F16Policy —
// without reading anything, as Convert does first: a command line can refuse them as a usage
// error before any work.
func CheckEncoding(opts Options) error {
	_, err := encoding(opts)
	return err
}

// encoding returns opts' storage settings, checked.
func encoding(opts Options) (encOptions, error) {
	enc, err := encodingOptions(opts.DType, opts.Compress, opts.Prune, opts.PrunePerLayer, opts.AllowClamp)
	if err != nil {
		return enc, err
	}
	if !(opts.SNRKeep >= 0 && opts.SNRKeep <= 1) {
		return enc, fmt.Errorf("convert: SNR keep fraction %v is not in [0, 1] (0: no pruning)", opts.SNRKeep)
	}
	enc.snrKeep = opts.SNRKeep
	if enc.policy, err = quant.PolicyByName(opts.F16Policy); err != nil {
		return enc, fmt.Errorf("convert: %w", err)
	}
	return enc, nil
}

func convertFile(opts Options) (*Report, error) {
	if opts.Checkpoint == "" || opts.Out == "" {
		return nil, errors.New("convert: a checkpoint and an output path are required")
	}
	enc, err := encoding(opts)
	if err != nil {
		return nil, err
	}
	enc.policyName = "quant.KeepF32"
	if opts.F16Policy == "compact" {
		enc.policyName = "quant.KeepF32Compact"
	}
	if same(opts.Checkpoint, opts.Out) || same(opts.Config, opts.Out) || same(opts.Arch, opts.Out) {
		return nil, fmt.Errorf("convert: refusing to write %s over an input", opts.Out)
	}
	for _, p := range opts.Members {
		if same(p, opts.Out) {
			return nil, fmt.Errorf("convert: refusing to write %s over an input", opts.Out)
		}
	}
	src, err := readCheckpointLimits(opts.Checkpoint, opts.Limits)
	if err != nil {
		return nil, err
	}
	if len(opts.Members) > 0 {
		if src, err = combineMembers(src, opts); err != nil {
			return nil, err
		}
	}
	m, err := buildModel(src, opts)
	if err != nil {
		return nil, err
	}
	w, rep, err := m.encode(enc)
	if err != nil {
		return nil, err
	}
	sources := append([]string{opts.Checkpoint}, opts.Members...)
	for _, p := range []string{opts.Config, opts.Arch, opts.Validate} {
		if p != "" {
			sources = append(sources, p)
		}
	}
	// The file is staged beside Out and takes its place only once it loads and validates: a
	// conversion that fails leaves Out as it was.
	staged, err := outfile.Stage(context.Background(), opts.Out)
	if err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	defer staged.Discard()
	if err := w.WriteFile(staged.Path(), format.WriteOptions{Sources: sources}); err != nil {
		return nil, fmt.Errorf("convert: writing %s: %w", opts.Out, err)
	}
	rep.Out = opts.Out
	if st, err := os.Stat(staged.Path()); err == nil && st.Size() != rep.FileBytes {
		return nil, fmt.Errorf("convert: %s has %d bytes, expected %d", opts.Out, st.Size(), rep.FileBytes)
	}
	file, err := checkWritten(staged.Path(), opts)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	if opts.Validate != "" {
		v, err := validate(m, file, opts)
		if err != nil {
			return rep, err
		}
		rep.Validation = v
	}
	if err := staged.Commit(context.Background()); err != nil {
		return nil, fmt.Errorf("convert: %w", err)
	}
	return rep, nil
}

// same reports whether two paths name the same existing file (or the same path).
func same(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// readCheckpoint reads a state_dict or an edgebnn model file within the default limits.
func readCheckpoint(path string) (*source, error) {
	return readCheckpointLimits(path, statedict.Limits{})
}

// readCheckpointLimits reads a state_dict (within lim) or an edgebnn model file.
func readCheckpointLimits(path string, lim statedict.Limits) (*source, error) {
	f, err := readlimit.Open(path, 0)
	if err != nil {
		return nil, fmt.Errorf("convert: checkpoint: %w", err)
	}
	head := make([]byte, len(format.Magic))
	n, _ := f.Read(head)
	f.Close()
	if n == len(head) && string(head) == format.Magic {
		return readModelFile(path)
	}
	sd, err := statedict.LoadLimits(path, lim)
	if err != nil {
		return nil, fmt.Errorf("convert: checkpoint: %w", err)
	}
	return &source{kind: "state_dict", tensors: sd.Tensors}, nil
}

// TrainingStatePrefix starts the names of the tensors a training checkpoint (edgebnn train) keeps
// for --resume, such as the optimizer's moments; Convert leaves them out of the model.
const TrainingStatePrefix = "optim/"

func readModelFile(path string) (*source, error) {
	f, err := format.Open(path)
	if err != nil {
		return nil, fmt.Errorf("convert: checkpoint: %w", err)
	}
	defer f.Close()
	meta, err := f.Blob(runtime.MetaBlob)
	if err != nil {
		return nil, fmt.Errorf("convert: checkpoint %s: %w", path, err)
	}
	spec, err := runtime.ParseSpec(meta)
	if err != nil {
		return nil, fmt.Errorf("convert: checkpoint %s: %w", path, err)
	}
	var pruned string
	runtime.WalkLayers(spec.Layers, func(l *runtime.LayerSpec) {
		if l.Posterior != nil && l.Posterior.Pruned && pruned == "" {
			pruned = l.Name
		}
	})
	if pruned != "" {
		return nil, fmt.Errorf("convert: checkpoint %s: layer %s is a pruned FFG layer, which convert cannot read back (convert the unpruned model with --snr-keep instead)",
			path, clip.Q(pruned))
	}
	src := &source{kind: "model", spec: spec}
	if pre, err := f.Blob(runtime.PreprocessBlob); err == nil {
		src.pre = append([]byte(nil), pre...)
	} else if !errors.Is(err, format.ErrNotFound) {
		return nil, fmt.Errorf("convert: checkpoint %s: %w", path, err)
	}
	for _, name := range f.Tensors() {
		if strings.HasPrefix(name, TrainingStatePrefix) {
			continue // optimizer state of a training checkpoint, not part of the model
		}
		t, err := f.Tensor(name)
		if err != nil {
			return nil, fmt.Errorf("convert: checkpoint %s: %w", path, err)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, fmt.Errorf("convert: checkpoint %s: %w", path, err)
		}
		shape := t.Shape()
		if len(shape) == 0 {
			shape = []int{1}
		}
		src.tensors = append(src.tensors, statedict.Tensor{Name: name, DType: "F32", Shape: shape,
			F32: append([]float32(nil), v...)})
	}
	return src, nil
}

// SourceHash is the provenance hash of a set of tensors: SHA-256 over the tensors sorted by
// name, each contributing its name length (u32) and name, its rank (u32) and dimensions (u64
// each; a 0-d scalar counts as shape [1]), a value type byte (1 float32, 2 float64, 3 int64),
// and its values little-endian. It does not depend on the file format the tensors came from.
func SourceHash(ts []statedict.Tensor) string {
	idx := make([]int, len(ts))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return ts[idx[a]].Name < ts[idx[b]].Name })
	h := sha256.New()
	var b [8]byte
	le := binary.LittleEndian
	u32 := func(v uint32) { le.PutUint32(b[:4], v); h.Write(b[:4]) }
	u64 := func(v uint64) { le.PutUint64(b[:], v); h.Write(b[:]) }
	for _, i := range idx {
		t := &ts[i]
		u32(uint32(len(t.Name)))
		h.Write([]byte(t.Name))
		u32(uint32(len(t.Shape)))
		for _, d := range t.Shape {
			u64(uint64(d))
		}
		buf := make([]byte, 0, 8*t.Len()+1)
		switch {
		case t.F32 != nil:
			buf = append(buf, 1)
			for _, v := range t.F32 {
				buf = le.AppendUint32(buf, math.Float32bits(v))
			}
		case t.F64 != nil:
			buf = append(buf, 2)
			for _, v := range t.F64 {
				buf = le.AppendUint64(buf, math.Float64bits(v))
			}
		default:
			buf = append(buf, 3)
			for _, v := range t.I64 {
				buf = le.AppendUint64(buf, uint64(v))
			}
		}
		h.Write(buf)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// checkWritten loads the written file as predict will and checks its KL terms: values that
// fp16 rounded to zero (a Z of tiny entries, a prior standard deviation) pass every check made
// before quantising, and then make a file that does not load, or whose KL is NaN.
// It returns the loaded model (for --validate); the caller closes it.
func checkWritten(path string, opts Options) (*runtime.Model, error) {
	// What the user can do about it: fp16 is chosen for the whole file (there is no per-tensor
	// choice); "compact" also stores the q(U) statistics fp16.
	hint := ""
	if opts.DType == "f16" {
		hint = "; values that --dtype f16 rounded to zero? use --dtype f32"
		if opts.F16Policy == "compact" {
			hint += ", or --f16-policy default"
		}
	}
	m, err := runtime.LoadWith(path, runtime.LoadOptions{NoMmap: true})
	if err != nil {
		// The hint after the reason: a long message is shortened in its middle (clip.Error).
		return nil, fmt.Errorf("convert: the written file does not load: %w%s", err, hint)
	}
	for _, l := range m.Layers() {
		if math.IsNaN(l.KL) || math.IsInf(l.KL, 0) {
			m.Close()
			return nil, fmt.Errorf("convert: the written file's layer %q has KL %g%s", l.Name, l.KL, hint)
		}
	}
	return m, nil
}

// buildModel derives the Spec (from the model file, or from arch + config) and checks the
// checkpoint's tensors against it.
func buildModel(src *source, opts Options) (*model, error) {
	byName := map[string]*statedict.Tensor{}
	for i := range src.tensors {
		byName[src.tensors[i].Name] = &src.tensors[i]
	}
	var cfg *bnnconfig.Config
	if opts.Config != "" {
		var err error
		if cfg, err = bnnconfig.ParseFile(opts.Config); err != nil {
			return nil, fmt.Errorf("convert: config: %w", err)
		}
	}
	info := SourceInfo{Kind: src.kind, SHA256: SourceHash(src.tensors), Tensors: len(src.tensors)}
	var spec *runtime.Spec
	if src.spec != nil && opts.Arch == "" {
		if opts.Config != "" {
			// The file's spec is the model; a config would only rebuild the prior buffers the
			// file left out, contradicting the prior its spec records.
			return nil, fmt.Errorf("convert: --config %s: the checkpoint is a model file, which carries its own posteriors (give --arch too to rebuild it from a state_dict's view)", opts.Config)
		}
		s := *src.spec
		s.Info = nil
		if len(opts.InputShape) > 0 {
			s.InputShape = opts.InputShape
		}
		spec = &s
	} else {
		if opts.Arch == "" {
			return nil, errors.New("convert: a state_dict needs an architecture (--arch: resnet18/34/50, a JSON architecture or a printed nn.Sequential)")
		}
		var err error
		spec, err = specFor(opts.Arch, cfg, opts.Classes, opts.InputShape, byName)
		if err != nil {
			return nil, err
		}
		if err := globalFromStateDict(spec, byName, opts.GlobalInducing); err != nil {
			return nil, err
		}
		if resnet.Known(opts.Arch) {
			info.Arch = opts.Arch
		}
	}
	m := &model{spec: spec, expect: schema.Expected(spec), tensors: map[string][]float32{}, hash: info.SHA256, source: info}
	if err := m.fill(byName, cfg); err != nil {
		return nil, err
	}
	rm, err := m.runtimeModel(runtime.NewLoadBudget(opts.loadLimits))
	if err != nil {
		return nil, fmt.Errorf("convert: the checkpoint does not make a valid model: %w", err)
	}
	switch {
	case opts.Preprocess != nil && opts.Preprocess.ClassNames == nil && src.pre != nil:
		// The flags replace the checkpoint's input preprocessing, not the names of its outputs
		// (eval and calibrate match a CSV's named labels by them).
		old, err := runtime.ParsePreprocess(src.pre, m.spec.InputShape, m.spec.Task, rm.OutputSize())
		if err != nil {
			return nil, fmt.Errorf("convert: the checkpoint's section %q: %w", runtime.PreprocessBlob, err)
		}
		cp := *opts.Preprocess
		cp.ClassNames = old.ClassNames
		m.pre = &cp
	case opts.Preprocess != nil:
		m.pre = opts.Preprocess
	case src.pre != nil:
		if m.pre, err = runtime.ParsePreprocess(src.pre, m.spec.InputShape, m.spec.Task, rm.OutputSize()); err != nil {
			return nil, fmt.Errorf("convert: the checkpoint's section %q: %w", runtime.PreprocessBlob, err)
		}
	}
	if m.pre != nil {
		if err := m.pre.Validate(m.spec.InputShape, m.spec.Task, rm.OutputSize()); err != nil {
			return nil, fmt.Errorf("convert: %w", err)
		}
	}
	return m, nil
}

// GlobalInducingArgs are the register_global_inducing_weights_ keyword arguments a state_dict
// does not record (Options.GlobalInducing).
type GlobalInducingArgs struct {
	WhitenedU *bool    `json:"whitened_u"`
	MaxLamda  *float64 `json:"max_lamda"`
	MaxSDU    *float64 `json:"max_sd_u"`
}

// ParseGlobalInducingArgs decodes GlobalInducingArgs from JSON; unknown keys are errors.
func ParseGlobalInducingArgs(data []byte) (*GlobalInducingArgs, error) {
	var a GlobalInducingArgs
	if err := strictjson.Decode(data, &a); err != nil {
		return nil, fmt.Errorf("convert: global inducing arguments: %w", err)
	}
	for _, v := range []*float64{a.MaxLamda, a.MaxSDU} {
		if v != nil && (!(*v >= 0) || math.IsInf(*v, 0)) {
			return nil, fmt.Errorf("convert: global inducing arguments: max_lamda and max_sd_u must be finite and non-negative")
		}
	}
	return &a, nil
}

// globalFromStateDict turns spec's inducing layers into global-U layers when the state_dict has
// bayesianize's global inducing module (runtime.GlobalUName): G's size comes from its z_row and
// z_col, q(G)'s family from the q tensors present, the rest from args (bayesianize's defaults:
// whitened, no clamps; σ = 1).
func globalFromStateDict(spec *runtime.Spec, byName map[string]*statedict.Tensor, args *GlobalInducingArgs) error {
	pre := runtime.GlobalUName + "."
	shape := func(name string) []int {
		if t := byName[pre+name]; t != nil {
			return t.Shape
		}
		return nil
	}
	found := false
	for name := range byName {
		if strings.HasPrefix(name, pre) {
			found = true
			break
		}
	}
	if !found {
		if args != nil {
			return fmt.Errorf("convert: global inducing arguments given but the state_dict has no %s* tensors", pre)
		}
		return nil
	}
	zr, zc, mean := shape("z_row"), shape("z_col"), shape("inducing_mean")
	if len(zr) != 2 || len(zc) != 2 || mean == nil {
		return fmt.Errorf("convert: the state_dict's global inducing module needs %sz_row and %sz_col (2-D) and %sinducing_mean", pre, pre, pre)
	}
	g := runtime.PosteriorSpec{InducingRows: zr[0], InducingCols: zc[0], WhitenedU: true}
	switch {
	case len(mean) == 3:
		g.QInducing, g.EnsembleSize = runtime.QEnsemble, mean[0]
	case shape("_inducing_sd") != nil:
		g.QInducing = runtime.QDiagonal
	case shape("_inducing_scale_tril") != nil:
		g.QInducing = runtime.QFull
	case shape("_inducing_row_scale_tril") != nil:
		g.QInducing = runtime.QMatrix
	default:
		return fmt.Errorf("convert: the state_dict's global inducing module has no q(G) scale tensor (%s_inducing_sd, _inducing_scale_tril or _inducing_row_scale_tril) and a %d-D inducing_mean", pre, len(mean))
	}
	if args != nil {
		if args.WhitenedU != nil {
			g.WhitenedU = *args.WhitenedU
		}
		g.MaxLamda, g.MaxSDU = args.MaxLamda, args.MaxSDU
	}
	if err := spec.UseGlobalU(g); err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	return nil
}

// specFor builds the Spec of a state_dict from the architecture and config.
func specFor(arch string, cfg *bnnconfig.Config, classes int, inputShape []int, byName map[string]*statedict.Tensor) (*runtime.Spec, error) {
	inC := 3
	if len(inputShape) == 3 {
		inC = inputShape[0]
	}
	if resnet.Known(arch) {
		if classes == 0 {
			classes = classesFromCheckpoint(byName)
			if classes == 0 {
				return nil, fmt.Errorf("convert: give the number of classes of %s (--classes N)", arch)
			}
		}
		if len(inputShape) == 0 {
			// conv1's input channels from the checkpoint, if it says.
			for _, n := range []string{"conv1.weight", "conv1.weight_mean"} {
				if t, ok := byName[n]; ok && len(t.Shape) == 4 {
					inC = t.Shape[1]
				}
			}
		}
	}
	nodes, builtin, err := ParseArch(arch, classes, inC)
	if err != nil {
		return nil, err
	}
	layers, err := Layers(nodes, cfg, nil)
	if err != nil {
		return nil, err
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, Layers: layers}
	switch {
	case len(inputShape) > 0:
		spec.InputShape = append([]int(nil), inputShape...)
	case builtin:
		spec.InputShape = []int{inC, resnet.DefaultInputShape[1], resnet.DefaultInputShape[2]}
	default:
		if spec.InputShape, err = inferInputShape(layers); err != nil {
			return nil, err
		}
	}
	if !builtin && classes > 0 {
		if out := lastOut(layers); out != 0 && out != classes {
			return nil, fmt.Errorf("convert: --classes %d but the architecture's last layer has %d outputs", classes, out)
		}
	}
	// FFG prior defaults need the config (kept for fill).
	return spec, spec.Validate()
}

func lastOut(ls []runtime.LayerSpec) int {
	for i := len(ls) - 1; i >= 0; i-- {
		if ls[i].Op == runtime.OpLinear || ls[i].Op == runtime.OpConv2d {
			return ls[i].Out
		}
	}
	return 0
}

// classesFromCheckpoint reads a ResNet's class count from its fc tensors.
func classesFromCheckpoint(byName map[string]*statedict.Tensor) int {
	for _, c := range []struct {
		name string
		dim  int
	}{{"fc.weight", 0}, {"fc.weight_mean", 0}, {"fc.z_row", 1}, {"fc.bias", 0}} {
		if t, ok := byName[c.name]; ok && len(t.Shape) > c.dim {
			return t.Shape[c.dim]
		}
	}
	return 0
}

// fill checks the checkpoint against the expected tensors and converts values to float32.
func (m *model) fill(byName map[string]*statedict.Tensor, cfg *bnnconfig.Config) error {
	used := map[string]bool{}
	var keep []schema.Tensor
	for _, e := range m.expect {
		t, ok := byName[e.Name]
		used[e.Name] = ok
		var v []float32
		var err error
		switch {
		case e.Role == schema.RoleDropped:
			continue
		case !ok && e.Role == schema.RoleOptBuf:
			v, err = m.defaultPrior(e, cfg)
		case !ok:
			return fmt.Errorf("convert: tensor %s (shape %v) is missing from the checkpoint", clip.Q(e.Name), e.Shape)
		case !runtime.SameShape(t.Shape, e.Shape):
			return fmt.Errorf("convert: tensor %s has shape %v in the checkpoint but the architecture needs %v", clip.Q(e.Name), t.Shape, e.Shape)
		default:
			v, err = toF32(t)
		}
		if err != nil {
			return err
		}
		if err := checkValues(e.Name, v); err != nil {
			return err
		}
		m.tensors[e.Name] = v
		keep = append(keep, e)
	}
	var extra []string
	for name := range byName {
		if !used[name] {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		t := byName[extra[0]]
		more := ""
		if len(extra) > 1 {
			var names []string
			for _, n := range extra[1:min(len(extra), 6)] {
				names = append(names, clip.Q(n))
			}
			more = fmt.Sprintf(" (and %d more: %s)", len(extra)-1, strings.Join(names, ", "))
		}
		return fmt.Errorf("convert: tensor %s (shape %v) in the checkpoint is not used by the architecture%s", clip.Q(extra[0]), t.Shape, more)
	}
	m.expect = keep
	return nil
}

// defaultPrior builds an FFG prior buffer a checkpoint left out: the one bayesianize would have
// registered, from the config, or without a config (an edgebnn model file, which leaves out the
// buffers that hold the spec's prior) the runtime's default.
func (m *model) defaultPrior(e schema.Tensor, cfg *bnnconfig.Config) ([]float32, error) {
	l := findLayer(m.spec.Layers, e.Layer)
	if l == nil {
		return nil, fmt.Errorf("convert: tensor %s: no layer %s", clip.Q(e.Name), clip.Q(e.Layer))
	}
	var v float64
	if cfg == nil {
		c, ok := runtime.PriorDefault(l, e.Field())
		if !ok {
			return nil, fmt.Errorf("convert: tensor %s is missing and there is no config to rebuild it from", clip.Q(e.Name))
		}
		v = float64(c)
	} else {
		k := l.In
		class := "Linear"
		if l.Op == runtime.OpConv2d {
			k *= l.Kernel[0] * l.Kernel[1]
			class = "Conv2d"
		}
		if l.Bias {
			k++
		}
		mean, wsd, bsd, err := ffgPriors(cfg, l.Name, class, k)
		if err != nil {
			return nil, err
		}
		v = mean
		switch e.Field() {
		case "prior_weight_sd":
			v = wsd
		case "prior_bias_sd":
			v = bsd
		}
	}
	out := make([]float32, e.Size())
	for i := range out {
		out[i] = float32(v)
	}
	return out, nil
}

func findLayer(ls []runtime.LayerSpec, name string) *runtime.LayerSpec {
	for i := range ls {
		if ls[i].Name == name && ls[i].Op != runtime.OpResidual {
			return &ls[i]
		}
		if l := findLayer(ls[i].Body, name); l != nil {
			return l
		}
		if l := findLayer(ls[i].Shortcut, name); l != nil {
			return l
		}
	}
	return nil
}

// toF32 converts a floating-point tensor to float32, rejecting integers and values out of range.
func toF32(t *statedict.Tensor) ([]float32, error) {
	switch {
	case t.F32 != nil || (t.F64 == nil && t.I64 == nil):
		return t.F32, nil
	case t.F64 != nil:
		out := make([]float32, len(t.F64))
		for i, v := range t.F64 {
			if math.Abs(v) > math.MaxFloat32 && !math.IsInf(v, 0) {
				return nil, fmt.Errorf("convert: tensor %s: value %d = %g does not fit in float32", clip.Q(t.Name), i, v)
			}
			out[i] = float32(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("convert: tensor %s has integer type %s; parameters must be floating point", clip.Q(t.Name), t.DType)
}

// runtimeModel builds the runtime model from the in-memory tensors, charging its load to budget,
// and checks it reads exactly the tensors expected.
func (m *model) runtimeModel(budget *runtime.LoadBudget) (*runtime.Model, error) {
	ts := runtime.Tensors{}
	for _, e := range m.expect {
		ts[e.Name] = runtime.Tensor{Shape: e.Shape, Data: m.tensors[e.Name]}
	}
	rm, err := budget.New(m.spec, ts)
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, n := range rm.TensorsUsed() {
		used[n] = true
	}
	for _, e := range m.expect {
		if !used[e.Name] {
			return nil, fmt.Errorf("the runtime does not read tensor %s", clip.Q(e.Name))
		}
	}
	return rm, nil
}

// encOptions are the storage choices.
type encOptions struct {
	f16, zstd  bool
	allowClamp bool
	prune      prune.Options
	snrKeep    float64
	dtype      string
	compress   string
	policy     quant.Policy
	policyName string
}

func encodingOptions(dtype, compress string, fraction float64, perLayer, allowClamp bool) (encOptions, error) {
	e := encOptions{allowClamp: allowClamp, prune: prune.Options{Fraction: fraction, PerLayer: perLayer},
		policy: quant.KeepF32, policyName: "quant.KeepF32"}
	switch dtype {
	case "", "f32":
		e.dtype = "f32"
	case "f16":
		e.dtype, e.f16 = "f16", true
	default:
		return e, fmt.Errorf("convert: dtype %s is not f32 or f16", clip.Q(dtype))
	}
	switch compress {
	case "", "none":
		e.compress = "none"
	case "zstd":
		e.compress, e.zstd = "zstd", true
	default:
		return e, fmt.Errorf("convert: compression %s is not zstd or none", clip.Q(compress))
	}
	if !(fraction >= 0 && fraction <= 1) {
		return e, fmt.Errorf("convert: prune fraction %v is not in [0, 1]", fraction)
	}
	return e, nil
}

// encode prunes and quantises a copy of the tensors and builds the model file in memory.
func (m *model) encode(o encOptions) (*format.Writer, *Report, error) {
	data := make(map[string][]float32, len(m.tensors))
	for k, v := range m.tensors {
		data[k] = v
	}
	rep := &Report{SourceSHA256: m.hash, Sizes: Sizes{Members: m.spec.Members}}
	info := Info{Converter: Version, Source: m.source, DType: o.dtype, Compress: o.compress}
	if o.prune.Fraction > 0 {
		var layers []prune.Layer
		for _, e := range m.expect {
			// Every member's Z (member<k>/<layer>.z_row, whose Layer is still <layer>): pruning
			// only member 0's left the others dense under a report of the whole fraction.
			if base, ok := strings.CutSuffix(e.Name, ".z_row"); e.Z && ok {
				zr := append([]float32(nil), data[base+".z_row"]...)
				zc := append([]float32(nil), data[base+".z_col"]...)
				data[base+".z_row"], data[base+".z_col"] = zr, zc
				layers = append(layers, prune.Layer{Name: base, ZRow: zr, ZCol: zc})
			}
		}
		if len(layers) == 0 {
			// Like --snr-keep on a model without FFG layers: the user meant another model or
			// the other option, and a file "pruned 0 of 0" would say nothing was asked.
			return nil, nil, fmt.Errorf("convert: --prune %g: the model has no inducing-weight layers, whose Z it prunes (--snr-keep prunes FFG weights)", o.prune.Fraction)
		}
		pr, err := prune.Prune(layers, o.prune)
		if err != nil {
			return nil, nil, fmt.Errorf("convert: %w", err)
		}
		rep.Prune, info.Prune = pr, pr
	}
	snr, err := m.pruneSNR(o.snrKeep, data)
	if err != nil {
		return nil, nil, err
	}
	if snr != nil {
		rep.PruneSNR, info.PruneSNR = snr.report, snr.report
	}
	infos := schema.LayerInfos(m.spec)
	err = schema.CountParameters(m.spec, infos, func(t schema.Tensor) (int64, int64, error) {
		if n, ok := snr.count(t); ok {
			return n, 0, nil
		}
		z := int64(0)
		for _, v := range data[t.Name] {
			if v == 0 {
				z++
			}
		}
		return int64(len(data[t.Name])), z, nil
	})
	if err != nil {
		return nil, nil, err
	}
	qr := map[string]quant.Report{}
	if o.f16 {
		info.Quant = &QuantInfo{Policy: o.policyName, AllowClamp: o.allowClamp}
	}
	w := format.NewWriter()
	stored := map[string]int64{}
	omitPrior := schema.PriorOmitter(m.spec)
	// The meta blob is added last, once the reports are complete; tensors go in canonical order.
	for _, e := range m.expect {
		v := data[e.Name]
		if snr != nil {
			var skip bool
			if e, v, skip = snr.replace(e, v); skip {
				continue
			}
		}
		if omitPrior(e.Name, v) {
			continue // the runtime rebuilds it from the spec
		}
		useF16 := false
		if o.f16 {
			keep, why := o.policy(e.Name, len(v))
			if !keep && e.Flow != nil {
				gate, err := bernsteinGate(e.Name, v, e.Flow.Degree, e.Flow.TableSize)
				if err != nil {
					return nil, nil, err
				}
				info.Quant.Bernstein = append(info.Quant.Bernstein, gate)
				rep.Bernstein = append(rep.Bernstein, gate)
				keep, why = !gate.F16, gate.Reason
			}
			if keep {
				info.Quant.F32 = append(info.Quant.F32, KeptF32{Name: e.Name, Reason: why})
			} else {
				if !o.allowClamp {
					if err := checkF16Range(e.Name, v); err != nil {
						return nil, nil, err
					}
				}
				out, r, err := quant.Quantize(e.Name, v, o.allowClamp)
				if err != nil {
					return nil, nil, fmt.Errorf("convert: %w", err)
				}
				v, useF16 = out, true
				qr[e.Name] = r
				info.Quant.F16 = append(info.Quant.F16, r)
				rep.Quant = append(rep.Quant, r)
			}
		}
		tr, err := w.AddTensor(e.Name, e.Shape, v, format.AddOptions{F16: useF16, Sparse: true, Compress: o.zstd})
		if err != nil {
			return nil, nil, fmt.Errorf("convert: tensor %s: %w", clip.Q(e.Name), err)
		}
		if tr.F16Overflows > 0 {
			return nil, nil, fmt.Errorf("convert: tensor %s: %d values overflow fp16", clip.Q(e.Name), tr.F16Overflows)
		}
		stored[e.Layer] += tr.StoredBytes
		if snr != nil && strings.HasSuffix(e.Name, "._weight_sd_kept") {
			n, err := snr.addIndex(w, e.Layer, o.zstd)
			if err != nil {
				return nil, nil, err
			}
			stored[e.Layer] += n
		}
	}
	var prunedFrac map[string]float64
	if rep.Prune != nil {
		prunedFrac = map[string]float64{}
		for _, l := range rep.Prune.Layers {
			prunedFrac[l.Layer] = l.Fraction
		}
	}
	for _, li := range infos {
		lr := LayerReport{Name: li.Name, Kind: li.Kind, Parameters: li.Parameters, Deterministic: li.Deterministic,
			Bytes: stored[li.Name], PrunedFraction: prunedFrac[li.Name]}
		for _, e := range m.expect {
			if r, ok := qr[e.Name]; ok && e.Layer == li.Name {
				lr.F16MaxAbsErr = math.Max(lr.F16MaxAbsErr, r.MaxAbsErr)
				lr.F16MaxRelErr = math.Max(lr.F16MaxRelErr, r.MaxRelErr)
			}
		}
		rep.Layers = append(rep.Layers, lr)
		rep.Parameters += li.Parameters
		rep.DeterministicParameters += li.Deterministic
	}
	info.Parameters, info.DeterministicParameters = rep.Parameters, rep.DeterministicParameters
	spec := *m.spec
	if snr != nil {
		spec.Layers = snr.markPruned(spec.Layers)
	}
	raw, err := json.Marshal(info)
	if err != nil {
		return nil, nil, fmt.Errorf("convert: encoding the metadata: %w", err)
	}
	spec.Info = raw
	meta, err := json.Marshal(&spec)
	if err != nil {
		return nil, nil, fmt.Errorf("convert: encoding the model description: %w", err)
	}
	if err := w.AddBlob(runtime.MetaBlob, meta, o.zstd); err != nil {
		return nil, nil, fmt.Errorf("convert: meta blob: %w", err)
	}
	if m.pre != nil {
		b, err := json.Marshal(m.pre)
		if err != nil {
			return nil, nil, fmt.Errorf("convert: encoding the preprocessing: %w", err)
		}
		if err := w.AddBlob(runtime.PreprocessBlob, b, false); err != nil {
			return nil, nil, fmt.Errorf("convert: preprocess blob: %w", err)
		}
	}
	var cw countingWriter
	if _, err := w.WriteTo(&cw); err != nil {
		return nil, nil, err
	}
	rep.FileBytes = cw.n
	rep.DeterministicFP32Bytes = 4 * rep.DeterministicParameters
	if rep.DeterministicFP32Bytes > 0 {
		rep.Ratio = float64(rep.FileBytes) / float64(rep.DeterministicFP32Bytes)
	}
	rep.Spec = &spec
	return w, rep, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// encodeBytes returns the model file's bytes (for Plan and tests).
func encodeBytes(w *format.Writer) ([]byte, error) {
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}
