package convert

import (
	"errors"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/schema"
	"math"
	"math/rand/v2"
	goruntime "runtime"
	"strings"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/statedict"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

// PlanOptions describe a model to size before it exists.
type PlanOptions struct {
	// Arch, Config, Classes and InputShape are as in Options, except that Classes 0 with a
	// built-in ResNet plans 10 classes (there is no checkpoint to read them from).
	Arch       string
	Config     string
	Classes    int
	InputShape []int
	// DType, Prune, PrunePerLayer and Compress are as in Options.
	DType         string
	Prune         float64
	PrunePerLayer bool
	Compress      string
	// Samples and MaxBatch configure the predictor whose memory is counted (defaults 32 and 1;
	// Samples defaults to Members for an ensemble, as in runtime.Options).
	Samples  int
	MaxBatch int
	// BudgetBytes is the board's memory budget (0: no board; Fits is then true).
	BudgetBytes int64
	// Members plans an Ensemble-W model of this many deterministic networks (0 or 1: one
	// network; the architecture must then have no Bayesian layers, i.e. no Config).
	Members int
	// MaxMemory bounds the memory planning may use (0: runtime.DefaultMaxMemory, the machine's
	// memory; negative: no limit). Plan sizes a model by building it with stand-in values, which
	// takes up to PlanMemoryFactor times its float32 parameter bytes, and refuses an architecture
	// above the limit before allocating anything; the predictor it sizes has the same limit.
	MaxMemory int64
	// BernsteinDegree, if positive, gives the architecture's last Linear layer (after its last
	// convolution or residual block) a mean-field Bernstein-flow posterior of this degree M, as
	// edgebnn train --posterior bernstein_last does; BernsteinTable is its runtime table size G
	// (0: runtime.DefaultBernsteinTable). The stand-in flows are the trainer's initial ones.
	BernsteinDegree int
	BernsteinTable  int
	// KeepF16 sizes the model loaded with runtime.LoadOptions.KeepF16 (with DType "f16": the
	// deterministic layers' weights stay in the file, not decoded to float32).
	KeepF16 bool
	// Out, if set, is where the planned model (random stand-in values of the right shapes) is
	// also written, atomically: a model of the real size for benchmarks, not a trained one.
	Out string
}

// PlanReport sizes a model. Its FileBytes is the size of the model file the converter would
// write. Without pruning and compression tensor sections do not depend on the values, so it is
// exact for f32; with f16 the error figures in the metadata blob vary in length by a few bytes
// (usually absorbed by the 64-byte alignment). With pruning the parameter counts are exact but
// global pruning spreads the removed entries over the Z tensors by the trained magnitudes, so
// the sparse tensors' sizes (and the file's: 24,768 planned against 24,832 written for the
// mlp_ffgu fixture at --prune 0.9) depend on the values. With zstd it is the size for random
// stand-in values; trained values usually compress better.
type PlanReport struct {
	Sizes
	// MappedBytes is the part of the memory-mapped file a loaded model keeps resident: FileBytes
	// less the pages of the sections decoded into memory of their own at load (fp16, sparse and
	// compressed tensors; format.File.ReleasedBytes). ModelBytes is the heap memory the loaded
	// Model holds beyond the file, measured while loading it; ScratchBytes is
	// Predictor.ScratchBytes.
	MappedBytes  int64 `json:"mapped_bytes"`
	ModelBytes   int64 `json:"model_bytes"`
	ScratchBytes int64 `json:"scratch_bytes"`
	// RuntimeBytes = MappedBytes + ModelBytes + ScratchBytes: what a predicting process needs
	// for the model.
	RuntimeBytes int64         `json:"runtime_bytes"`
	BudgetBytes  int64         `json:"budget_bytes,omitempty"`
	Fits         bool          `json:"fits"`
	Samples      int           `json:"samples"`
	MaxBatch     int           `json:"max_batch"`
	Layers       []LayerReport `json:"layers"`
}

// Plan builds the architecture with random stand-in values of the right shapes, runs the real
// pruning, quantisation and writer in memory, loads the result and sizes a predictor for it.
// The optional prior buffers of FFG layers are not stand-ins: they hold the prior the config
// gives (bayesianize's buffers), so the converter leaves them out when it is the spec's default
// prior and stores them when it is not (a nonzero prior_mean), as for a trained model.
func Plan(opts PlanOptions) (*PlanReport, error) {
	rep, err := plan(opts)
	if err != nil && opts.Arch != "" && !strings.Contains(err.Error(), opts.Arch) {
		// Errors of the model the architecture describes (too many layers, a layer too
		// large for the runtime) name the architecture they came from.
		err = fmt.Errorf("convert: plan of %s: %w", clip.Path(opts.Arch), err)
	}
	return rep, clip.Error(err)
}

func plan(opts PlanOptions) (*PlanReport, error) {
	if opts.Arch == "" {
		return nil, errors.New("convert: plan needs an architecture")
	}
	enc, err := encodingOptions(opts.DType, opts.Compress, opts.Prune, opts.PrunePerLayer, false)
	if err != nil {
		return nil, err
	}
	var cfg *bnnconfig.Config
	if opts.Config != "" {
		if cfg, err = bnnconfig.ParseFile(opts.Config); err != nil {
			return nil, fmt.Errorf("convert: config: %w", err)
		}
	}
	if opts.Classes == 0 && resnet.Known(opts.Arch) {
		opts.Classes = 10
	}
	spec, err := specFor(opts.Arch, cfg, opts.Classes, opts.InputShape, nil)
	if err != nil {
		return nil, err
	}
	if opts.BernsteinDegree != 0 || opts.BernsteinTable != 0 {
		if err := bernsteinLast(spec, opts.BernsteinDegree, opts.BernsteinTable); err != nil {
			return nil, err
		}
	}
	if opts.Members > 1 {
		spec.Members = opts.Members
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("convert: plan: %w", err)
		}
	} else if opts.Members < 0 {
		return nil, fmt.Errorf("convert: plan: members %d must be positive", opts.Members)
	}
	limit := opts.MaxMemory
	if limit == 0 {
		limit = runtime.DefaultMaxMemory()
	}
	if params, ok := specParameters(spec); limit > 0 && (!ok || params > limit/(4*PlanMemoryFactor)) {
		what := "more than 2⁶³ parameters"
		if ok {
			what = fmt.Sprintf("%d parameters (%.1f GiB as float32)", params, float64(params)*4/(1<<30))
		}
		return nil, fmt.Errorf("convert: plan: the architecture has %s; sizing it with stand-in values needs about %d× that, above the limit of %.1f GiB (the machine's memory unless PlanOptions.MaxMemory says otherwise): %w",
			what, PlanMemoryFactor, float64(limit)/(1<<30), runtime.ErrMemory)
	}
	m := &model{spec: spec, expect: nil, tensors: map[string][]float32{}}
	rng := rand.New(rand.NewPCG(1, 2))
	var src []statedict.Tensor
	for _, e := range schema.Expected(spec) {
		if e.Role == schema.RoleDropped {
			src = append(src, statedict.Tensor{Name: e.Name, DType: "I64", Shape: []int{1}, I64: []int64{0}})
			continue
		}
		m.expect = append(m.expect, e)
		if e.Role == schema.RoleOptBuf {
			// An FFG layer's prior buffers hold the config's prior, as in a trained model: the
			// converter leaves out those that hold the spec's default.
			v, err := m.defaultPrior(e, cfg)
			if err != nil {
				return nil, err // names the tensor; Plan adds the architecture
			}
			m.tensors[e.Name] = v
		} else {
			m.tensors[e.Name] = standIn(e, rng)
		}
		src = append(src, statedict.Tensor{Name: e.Name, DType: "F32", Shape: e.Shape, F32: m.tensors[e.Name]})
	}
	// Provenance as for a state_dict with these tensors, so that the metadata has the length a
	// real conversion's has.
	m.hash = SourceHash(src)
	m.source = SourceInfo{Kind: "state_dict", SHA256: m.hash, Tensors: len(src)}
	if resnet.Known(opts.Arch) {
		m.source.Arch = opts.Arch
	}
	w, rep, err := m.encode(enc)
	if err != nil {
		return nil, err
	}
	data, err := encodeBytes(w)
	if err != nil {
		return nil, err
	}
	if opts.Out != "" {
		if err := w.WriteFile(opts.Out, format.WriteOptions{}); err != nil {
			return nil, fmt.Errorf("convert: plan: writing %s: %w", opts.Out, err)
		}
	}
	pr := &PlanReport{Sizes: rep.Sizes, Layers: rep.Layers, BudgetBytes: opts.BudgetBytes}
	pr.FileBytes = int64(len(data))
	w, m = nil, nil
	var before, after goruntime.MemStats
	// Two collections: sync.Pool keeps its objects in a victim cache for one GC, so after a single
	// one the next would free them between the two readings and hide as much of the model.
	goruntime.GC()
	goruntime.GC()
	goruntime.ReadMemStats(&before)
	f, err := format.Decode(data) // the default budget, as runtime.Load uses
	if err != nil {
		return nil, err
	}
	rm, err := runtime.FromFileWith(f, runtime.LoadOptions{KeepF16: opts.KeepF16})
	if err != nil {
		return nil, fmt.Errorf("convert: the planned model does not load: %w", err)
	}
	goruntime.GC()
	goruntime.ReadMemStats(&after)
	goruntime.KeepAlive(data) // alive at both readings, so its bytes cancel
	pr.ModelBytes = max(int64(after.HeapAlloc)-int64(before.HeapAlloc), 0)
	p, err := rm.NewPredictor(runtime.Options{Samples: opts.Samples, MaxBatch: opts.MaxBatch, MaxMemory: limit})
	if err != nil {
		return nil, err
	}
	o := p.Options()
	pr.Samples, pr.MaxBatch = o.Samples, o.MaxBatch
	pr.ScratchBytes = p.ScratchBytes()
	pr.MappedBytes = pr.FileBytes - f.ReleasedBytes()
	pr.RuntimeBytes = pr.MappedBytes + pr.ModelBytes + pr.ScratchBytes
	pr.Fits = opts.BudgetBytes == 0 || pr.RuntimeBytes <= opts.BudgetBytes
	return pr, nil
}

// PlanMemoryFactor bounds how many times its float32 parameter bytes Plan's process grows to
// while it sizes a model: the stand-in values, the encoded file, the loaded model and the
// garbage collector's headroom (a 10M-parameter MLP: 40 MB of parameters, 210 MB peak RSS).
const PlanMemoryFactor = 6

// specParameters counts the values of every tensor the spec expects, and whether the count fits
// in an int64 (an architecture file can declare any widths).
func specParameters(spec *runtime.Spec) (int64, bool) {
	const huge = int64(1) << 62
	var total int64
	for _, e := range schema.Expected(spec) {
		n := int64(1)
		for _, d := range e.Shape {
			if d < 0 || (d > 0 && n > huge/int64(d)) {
				return 0, false
			}
			n *= int64(d)
		}
		if total > huge-n {
			return 0, false
		}
		total += n
	}
	return total, true
}

// standIn makes plausible random values for a tensor: bayesianize's initialisations (Z ~
// N(0, 1/rows), D and λ at softplus⁻¹(1e-3), q(U) means N(0, 1)), He-scaled weights and
// BatchNorm statistics near their initial values, each with a little noise so that nothing is
// exactly zero. FFG prior buffers are not stand-ins (Plan gives them the config's prior).
func standIn(e schema.Tensor, rng *rand.Rand) []float32 {
	n := e.Size()
	out := make([]float32, n)
	suffix := e.Name[strings.LastIndexByte(e.Name, '.')+1:]
	isp := math.Log(math.Expm1(1e-3))
	noise := func(c, s float64) {
		for i := range out {
			out[i] = float32(c + s*rng.NormFloat64())
		}
	}
	if e.Flow != nil {
		// The trainer's initial flows (train/bnn): θ = lo + (hi − lo)·σ(z), a₁ = a₂ = 1, centred
		// at a He-scaled weight (biases near zero) with standard deviation 0.05.
		np := e.Flow.Degree + 5
		scale := 0.01 // biases
		if len(e.Shape) > 2 {
			fan := 1
			for _, d := range e.Shape[1 : len(e.Shape)-1] {
				fan *= d
			}
			scale = 1 / math.Sqrt(float64(fan))
		}
		one := math.Log(math.Expm1(1))
		width := 0.05 / 0.21
		d := float32(math.Log(math.Expm1(width / float64(e.Flow.Degree))))
		for f := 0; f < n/np; f++ {
			p := out[f*np : (f+1)*np]
			c := scale * rng.NormFloat64()
			p[0], p[1], p[2] = float32(one), 0, float32(c-width/2)
			for j := 3; j < np-2; j++ {
				p[j] = d
			}
			p[np-2], p[np-1] = float32(one), 0
		}
		return out
	}
	switch suffix {
	case "z_row", "z_col":
		noise(0, 1/math.Sqrt(float64(e.Shape[0])))
	case "_d_row", "_d_col", "_lamda", "_inducing_sd", "_weight_sd", "_bias_sd":
		noise(isp, 0.1)
	case "_inducing_scale_tril", "_inducing_row_scale_tril", "_inducing_col_scale_tril":
		// vec_to_chol: the first d entries are the diagonal (softplus), the rest off-diagonal.
		d := int((math.Sqrt(8*float64(n)+1) - 1) / 2)
		for i := range out {
			if i < d {
				out[i] = float32(isp + 0.1*rng.NormFloat64())
			} else {
				out[i] = float32(1e-3 * rng.NormFloat64())
			}
		}
	case "inducing_mean", "mean":
		noise(0, 1)
	case "running_var", "psi":
		for i := range out {
			out[i] = float32(1 + 0.1*math.Abs(rng.NormFloat64()))
		}
	case "running_mean", "bias", "bias_mean":
		noise(0, 0.01)
	default: // weight, weight_mean, factors
		fan := 1
		for _, d := range e.Shape[1:] {
			fan *= d
		}
		if e.Layer != "" && len(e.Shape) == 1 { // BatchNorm weight
			noise(1, 0.01)
		} else {
			noise(0, 1/math.Sqrt(float64(max(fan, 1))))
		}
	}
	return out
}

// bernsteinLast gives spec's last top-level Linear layer, after any convolution or residual
// block, a Bernstein-flow posterior of degree m and table size g (train's bernstein_last).
func bernsteinLast(spec *runtime.Spec, m, g int) error {
	if m < 1 || m > runtime.MaxBernsteinDegree {
		return fmt.Errorf("convert: plan: bernstein degree %d out of range [1, %d]", m, runtime.MaxBernsteinDegree)
	}
	l := spec.LastLinear()
	if l == nil {
		return errors.New("convert: plan: a Bernstein last layer needs an architecture that ends with a Linear layer")
	}
	if l.Posterior != nil && l.Posterior.Kind != runtime.KindDeterministic {
		return fmt.Errorf("convert: plan: layer %s already has a %s posterior (give the Bernstein layer no config entry)", clip.Q(l.Name), l.Posterior.Kind)
	}
	l.Posterior = &runtime.PosteriorSpec{Kind: runtime.KindBernstein, Degree: m, TableSize: g, PriorSD: 1}
	if err := spec.Validate(); err != nil {
		return fmt.Errorf("convert: plan: %w", err)
	}
	return nil
}
