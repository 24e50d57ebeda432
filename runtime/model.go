package runtime

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/edgebnn/edgebnn/kernels"
)

// TensorSource supplies a model's tensors by name (bayesianize state_dict names, e.g. "1.z_row").
// The returned slice is read, never written, and may be retained by the Model (so it may alias a
// memory-mapped file).
type TensorSource interface {
	Tensor(name string) (data []float32, shape []int, err error)
}

// BlobSource is implemented by TensorSources that also hold named byte sections, as model files
// do (format blobs): a pruned FFG layer reads its kept-weight index from one (PosteriorSpec.Pruned).
type BlobSource interface {
	Blob(name string) ([]byte, error)
}

// MemorySource is an in-memory TensorSource with byte sections (BlobSource).
type MemorySource struct {
	Tensors Tensors
	Blobs   map[string][]byte
}

// Tensor implements TensorSource.
func (m MemorySource) Tensor(name string) ([]float32, []int, error) { return m.Tensors.Tensor(name) }

// Blob implements BlobSource.
func (m MemorySource) Blob(name string) ([]byte, error) {
	b, ok := m.Blobs[name]
	if !ok {
		return nil, fmt.Errorf("%q: %w", name, ErrNoTensor)
	}
	return b, nil
}

// ErrNoTensor is returned (wrapped) by a TensorSource that has no tensor of the requested name.
var ErrNoTensor = errors.New("no such tensor")

// Tensor is a named dense float32 tensor held in memory.
type Tensor struct {
	Shape []int
	Data  []float32
}

// Tensors is an in-memory TensorSource.
type Tensors map[string]Tensor

// Tensor implements TensorSource.
func (t Tensors) Tensor(name string) ([]float32, []int, error) {
	v, ok := t[name]
	if !ok {
		return nil, nil, fmt.Errorf("%q: %w", name, ErrNoTensor)
	}
	return v.Data, v.Shape, nil
}

// Model is an immutable, loaded Bayesian network: its layers, their posteriors and everything that
// does not change between samples (Cholesky factors, row and column transforms). A Model is safe
// for concurrent use; each goroutine makes its own Predictor.
type Model struct {
	spec     Spec
	nodes    []node
	inShape  shape
	outShape shape
	// stochastic reports whether any layer samples weights, or the model is an ensemble whose
	// layers depend on the sample's member.
	stochastic bool
	// members is the number of networks of an ensemble (Spec.Members), 1 for a single network.
	members int
	// life guards the backing file's mapping, shared with the copies WithDeployment makes:
	// every call that reads the tensors holds it (use, done), and the owner's Close waits for
	// them before it unmaps. self is this Model's own closed flag: a copy's Close sets only it.
	life    *lifetime
	self    *atomic.Bool
	derived bool // made by WithDeployment: does not own the file
	// regression is spec.Task == Regression, compared once: the prediction path asks per input,
	// and a string comparison there is a memequal call on 32-bit ARM.
	regression bool
	// parts are the members of a mixture of posteriors (Spec.Mixture): each a single network
	// built from its member's tensors; nil otherwise. nodes, shapes and layerCount are part 0's.
	parts []*Model
	// fa is the network-wide factor-analysis posterior, if any.
	fa *faPosterior
	// glob is the global inducing posterior (Spec.GlobalU), if any.
	glob *globalU
	// layerCount is the number of layers including those inside residual blocks; layer ids used
	// for random streams run from 0 to layerCount-1.
	layerCount int
	// used records which tensors were read, for the converter's completeness check.
	used []string
	// closer releases the backing file (memory mapping), if any.
	closer io.Closer
	// pre and policy are the model file's optional deployment sections (deploy.go).
	pre    *preprocessor
	policy *Policy
}

// shape is one input's activation shape: c×h×w, or a feature vector (h = w = 1, flat).
type shape struct {
	c, h, w int
	flat    bool
}

func (s shape) size() int { return s.c * s.h * s.w }

func (s shape) String() string {
	if s.flat {
		return fmt.Sprintf("[%d]", s.c)
	}
	return fmt.Sprintf("[%d %d %d]", s.c, s.h, s.w)
}

// New builds a Model from a Spec and its tensors, validating every tensor's shape and
// precomputing the per-layer factorisations.
func New(spec *Spec, src TensorSource) (*Model, error) {
	return newModel(spec, src, &loadBudget{maxBernsteinBytes: MaxBernsteinTableBytes, maxBernsteinWork: MaxBernsteinWork,
		maxInducingBytes: MaxInducingBytes, maxInducingWork: MaxInducingWork, inducingWorkPerValue: InducingWorkPerValue})
}

// loadBudget adds up what a model's layers derive at load beyond their tensors, across the
// members of a mixture too: the Bernstein layers' quantile tables and the work of tabulating
// them, against their limits (MaxBernsteinTableBytes, MaxBernsteinWork), and what the inducing
// layers (and a global inducing posterior) keep and the work of deriving it, against theirs
// (MaxInducingBytes, MaxInducingWork; inducingBudget).
type loadBudget struct {
	bernsteinBytes, bernsteinWork       int64
	maxBernsteinBytes, maxBernsteinWork int64
	inducingBytes, inducingWork         int64
	inducingStored                      int64 // values the inducing layers charged so far store
	inducingWorkPerValue                int64 // InducingWorkPerValue
	maxInducingBytes, maxInducingWork   int64
	memory                              int64 // DefaultMaxMemory, read once a load (machineMemory)
}

// machineMemory is DefaultMaxMemory, read from the system on a load's first call only.
func (b *loadBudget) machineMemory() int64 {
	if b.memory == 0 {
		b.memory = DefaultMaxMemory()
	}
	return b.memory
}

func newModel(spec *Spec, src TensorSource, budget *loadBudget) (*Model, error) {
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	m := &Model{spec: spec.Clone(), members: max(spec.Members, 1), regression: spec.Task == Regression, life: &lifetime{}, self: new(atomic.Bool)}
	if spec.Mixture() {
		return newMixture(m, src, budget)
	}
	b := &builder{m: m, src: src, budget: budget}
	if spec.FA != nil {
		fa, err := loadFA(spec.FA, b)
		if err != nil {
			return nil, err
		}
		m.fa = fa
	}
	if spec.GlobalU != nil {
		gu, err := loadGlobalU(spec, b)
		if err != nil {
			return nil, err
		}
		m.glob = gu
	}
	in := shape{c: spec.InputShape[0], h: 1, w: 1, flat: true}
	if len(spec.InputShape) == 3 {
		in = shape{c: spec.InputShape[0], h: spec.InputShape[1], w: spec.InputShape[2]}
	}
	m.inShape = in
	nodes, out, err := b.build(spec.Layers, in)
	if err != nil {
		return nil, err
	}
	if m.fa != nil && b.faOffset != m.fa.dim {
		return nil, fmt.Errorf("runtime: fa posterior has dim %d but the fa layers hold %d parameters", m.fa.dim, b.faOffset)
	}
	if !out.flat {
		return nil, fmt.Errorf("runtime: the network's output has shape %v; add a flatten layer", out)
	}
	m.nodes = nodes
	m.outShape = out
	m.layerCount = b.nextID
	sort.Strings(b.used)
	m.used = b.used
	return m, nil
}

// newMixture builds m, a mixture of posteriors: one single-network Model per member, from the
// member's tensors (MemberPrefix), sharing m's spec but for Members.
func newMixture(m *Model, src TensorSource, budget *loadBudget) (*Model, error) {
	one := m.spec
	one.Members = 0
	for k := range m.members {
		part, err := newModel(&one, prefixSource{src, MemberPrefix(k)}, budget)
		if err != nil {
			return nil, fmt.Errorf("runtime: mixture member %d: %w", k, err)
		}
		for _, name := range part.used {
			m.used = append(m.used, MemberPrefix(k)+name)
		}
		m.parts = append(m.parts, part)
	}
	p0 := m.parts[0]
	m.nodes, m.inShape, m.outShape, m.layerCount, m.fa = p0.nodes, p0.inShape, p0.outShape, p0.layerCount, p0.fa
	m.stochastic = true
	sort.Strings(m.used)
	return m, nil
}

// prefixSource reads the tensors of one member of a mixture: name is read as prefix + name.
type prefixSource struct {
	src    TensorSource
	prefix string
}

func (p prefixSource) Tensor(name string) ([]float32, []int, error) {
	return p.src.Tensor(p.prefix + name)
}

// float16 implements float16Source when the underlying source does.
func (p prefixSource) float16(name string) ([]uint16, []int, bool, error) {
	if hs, ok := p.src.(float16Source); ok {
		return hs.float16(p.prefix + name)
	}
	return nil, nil, false, nil
}

// float16Source is implemented by sources that can hand out a dense fp16 tensor as its binary16
// values (a model file loaded with LoadOptions.KeepF16); ok is false when this one is not such
// a tensor or the source does not keep them, and the float32 Tensor is read instead.
type float16Source interface {
	float16(name string) (data []uint16, shape []int, ok bool, err error)
}

// Blob implements BlobSource when the underlying source does.
func (p prefixSource) Blob(name string) ([]byte, error) {
	bs, ok := p.src.(BlobSource)
	if !ok {
		return nil, fmt.Errorf("%q: the tensor source holds no byte sections: %w", p.prefix+name, ErrNoTensor)
	}
	return bs.Blob(p.prefix + name)
}

// Spec returns a copy of the model's description (a deep one: editing it leaves the model as
// it is).
func (m *Model) Spec() Spec { return m.spec.Clone() }

// InputSize is the number of float32 values of one input.
func (m *Model) InputSize() int { return m.inShape.size() }

// OutputSize is the number of outputs (classes, or regression targets) of one input.
func (m *Model) OutputSize() int { return m.outShape.size() }

// Task is the model's likelihood.
func (m *Model) Task() Task { return m.spec.Task }

// Stochastic reports whether the model samples any weights (false for a deterministic network).
// An ensemble of deterministic networks (Members > 1) is stochastic: each sample of a prediction
// runs one member.
func (m *Model) Stochastic() bool { return m.stochastic }

// Members is the number of networks of an ensemble model or of posteriors of a mixture
// (Spec.Members), 1 for a single network.
func (m *Model) Members() int { return m.members }

// Mixture reports whether the model is a mixture of posteriors (Spec.Mixture): sample s of a
// prediction draws from member s mod Members().
func (m *Model) Mixture() bool { return m.parts != nil }

// TensorsUsed lists, sorted, the names of the tensors the model read from its source.
func (m *Model) TensorsUsed() []string { return append([]string(nil), m.used...) }

// Close releases the file backing the model, if Load opened it (a FromFile model's file is the
// caller's to close, after this; LoadBytes's data is the caller's). It waits for the calls
// in flight on the model and its Predictors (from any goroutine); later ones return ErrClosed.
// Closing a Model that WithDeployment made closes only that Model, not the one it came from.
// Close may be called more than once, from any goroutine.
func (m *Model) Close() error {
	if m.derived {
		m.self.Store(true)
		return nil
	}
	// Under the write lock: after the calls in flight, and a second Close returns only once the
	// first has released the file. (closer itself is never written after Load: WithDeployment
	// copies the Model while a Close may run.)
	m.life.mu.Lock()
	defer m.life.mu.Unlock()
	m.self.Store(true)
	if m.life.closed || m.closer == nil {
		m.life.closed = true
		return nil
	}
	m.life.closed = true
	return m.closer.Close()
}

// lifetime guards a model file's mapping: calls reading the model hold mu for reading, Close
// takes it for writing, so that it unmaps only after them and later calls see closed.
type lifetime struct {
	mu     sync.RWMutex
	closed bool
}

// use holds the model's file for a call that reads its tensors, or reports false (holding
// nothing) when the model is closed. Every true is followed by done. A call holding it must
// not call another that takes it (a Close waiting between the two would deadlock).
func (m *Model) use() bool {
	m.life.mu.RLock()
	if m.life.closed || m.self.Load() {
		m.life.mu.RUnlock()
		return false
	}
	return true
}

// done releases what use held.
func (m *Model) done() { m.life.mu.RUnlock() }

// builder turns LayerSpecs into nodes.
type builder struct {
	m        *Model
	src      TensorSource
	used     []string
	nextID   int
	faOffset int
	// member selects the ensemble member whose tensors tensor reads (MemberPrefix).
	member int
	budget *loadBudget
}

// fullName is the name of tensor name of layer for the current member.
func (b *builder) fullName(layer, name string) string {
	full := name
	if layer != "" {
		full = layer + "." + name
	}
	return MemberPrefix(b.member) + full
}

// tensor fetches a tensor of the current member and checks its shape.
func (b *builder) tensor(layer, name string, want ...int) ([]float32, error) {
	full := b.fullName(layer, name)
	data, shp, err := b.src.Tensor(full)
	if err != nil {
		return nil, fmt.Errorf("runtime: layer %q: tensor %q: %w", layer, full, err)
	}
	n, ok := elements(want)
	if !ok {
		return nil, fmt.Errorf("runtime: layer %q: tensor %q: shape %v is too large (limit %d values)", layer, full, want, maxTensor)
	}
	if !SameShape(shp, want) {
		return nil, fmt.Errorf("runtime: layer %q: tensor %q has shape %v, want %v", layer, full, shp, want)
	}
	if len(data) != n {
		return nil, fmt.Errorf("runtime: layer %q: tensor %q has %d values, want %d", layer, full, len(data), n)
	}
	for i, v := range data {
		// The converter refuses these; a file it did not write gets the same check, so that a
		// NaN is an error naming its tensor, not a NaN KL or an error blamed on the input.
		// (Finite values beyond convert's MaxAbsParameter are left to the layers' own checks:
		// some kinds' overflow is caught, with its reason, where it happens.)
		if v-v != 0 {
			return nil, fmt.Errorf("runtime: layer %q: tensor %q: element %d is %g", layer, full, i, v)
		}
	}
	b.used = append(b.used, full)
	return data, nil
}

// MaxAbsParameter bounds the magnitude of every value a model file holds (1e15): a posterior
// mean, a pre-softplus scale or a weight beyond it is not a trained value — squared and summed
// (Z Zᵀ, the Cholesky factors, the sampled weights) it overflows float32.
const MaxAbsParameter = 1e15

// blob fetches a byte section of the current member (a pruned layer's kept-weight index).
func (b *builder) blob(layer, name string) ([]byte, error) {
	full := b.fullName(layer, name)
	bs, ok := b.src.(BlobSource)
	if !ok {
		return nil, fmt.Errorf("runtime: layer %q: blob %q: the tensor source holds no byte sections", layer, full)
	}
	data, err := bs.Blob(full)
	if err != nil {
		return nil, fmt.Errorf("runtime: layer %q: blob %q: %w", layer, full, err)
	}
	return data, nil
}

// tensor16 fetches a tensor of the current member as binary16 values, when the source keeps
// fp16 tensors and this one is stored so (ok), and checks its shape.
func (b *builder) tensor16(layer, name string, want ...int) ([]uint16, bool, error) {
	hs, ok := b.src.(float16Source)
	if !ok {
		return nil, false, nil
	}
	full := b.fullName(layer, name)
	data, shp, ok, err := hs.float16(full)
	if err != nil {
		return nil, false, fmt.Errorf("runtime: layer %q: tensor %q: %w", layer, full, err)
	}
	if !ok {
		return nil, false, nil
	}
	n, okN := elements(want)
	switch {
	case !okN:
		return nil, false, fmt.Errorf("runtime: layer %q: tensor %q: shape %v is too large (limit %d values)", layer, full, want, maxTensor)
	case !SameShape(shp, want):
		return nil, false, fmt.Errorf("runtime: layer %q: tensor %q has shape %v, want %v", layer, full, shp, want)
	case len(data) != n:
		return nil, false, fmt.Errorf("runtime: layer %q: tensor %q has %d values, want %d", layer, full, len(data), n)
	}
	for i, h := range data {
		if h&0x7c00 == 0x7c00 { // binary16 exponent all ones: ±Inf or NaN
			return nil, false, fmt.Errorf("runtime: layer %q: tensor %q: fp16 element %d is not finite (bits %#04x)", layer, full, i, h)
		}
	}
	b.used = append(b.used, full)
	return data, true, nil
}

// optTensor is tensor for an optional tensor: absent gives nil, nil.
func (b *builder) optTensor(layer, name string, want ...int) ([]float32, error) {
	_, _, err := b.src.Tensor(b.fullName(layer, name))
	if errors.Is(err, ErrNoTensor) {
		return nil, nil
	}
	return b.tensor(layer, name, want...)
}

// layerTensors fetches, for the current member, every tensor decls declares for layer
// (LayerTensors, InducingTensors, FATensors), each checked against its declared shape, and
// returns them by name. An absent optional tensor is left out, as is every dropped one; kept
// values (TensorDecl.Kept) are kept long.
func (b *builder) layerTensors(layer string, decls []TensorDecl, kept int) (map[string][]float32, error) {
	out := make(map[string][]float32, len(decls))
	for _, d := range decls {
		shape := d.Shape
		if d.Kept {
			shape = []int{kept}
		}
		var v []float32
		var err error
		switch d.Role {
		case TensorDropped:
			continue
		case TensorOptional:
			v, err = b.optTensor(layer, d.Name, shape...)
		default:
			v, err = b.tensor(layer, d.Name, shape...)
		}
		if err != nil {
			return nil, err
		}
		if v != nil {
			out[d.Name] = v
		}
	}
	return out, nil
}

// maxTensor caps the values of one tensor, weight matrix or activation (1 GiB of float32), so
// that sizes never overflow int, even on 32-bit ARM.
const maxTensor = 1 << 28

// elements returns the product of dims, or false when a dim is negative or the product exceeds
// maxTensor.
func elements(dims []int) (int, bool) {
	n := 1
	for _, d := range dims {
		if d < 0 || (d > 0 && n > maxTensor/d) {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// SameShape compares tensor shapes, treating a scalar () and a one-element vector (1) alike
// (PyTorch 0-d tensors are often exported to safetensors as shape [1]).
func SameShape(got, want []int) bool {
	if len(got) != len(want) {
		g, w := 1, 1
		for _, d := range got {
			g *= d
		}
		for _, d := range want {
			w *= d
		}
		return g == 1 && w == 1 && len(got) <= 1 && len(want) <= 1
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

func (b *builder) build(specs []LayerSpec, in shape) ([]node, shape, error) {
	var nodes []node
	cur := in
	for i := range specs {
		n, out, err := b.node(&specs[i], cur)
		if err != nil {
			return nil, shape{}, err
		}
		if bn, ok := n.(*batchNorm); ok && len(nodes) > 0 {
			if d, ok := nodes[len(nodes)-1].(*dense); ok && d.post == nil && len(d.det) == len(bn.members) {
				d.foldBatchNorm(bn)
				n = nil
			}
		}
		if n != nil {
			nodes = append(nodes, n)
		}
		cur = out
	}
	return nodes, cur, nil
}

func (b *builder) node(ls *LayerSpec, in shape) (node, shape, error) {
	n, out, err := b.node1(ls, in)
	if err == nil {
		if _, ok := elements([]int{out.c, out.h, out.w}); !ok {
			err = fmt.Errorf("runtime: layer %q (%s): output shape %v is too large", ls.Name, ls.Op, out)
		}
	}
	return n, out, err
}

func (b *builder) node1(ls *LayerSpec, in shape) (node, shape, error) {
	id := b.nextID
	b.nextID++
	errf := func(format string, args ...any) error {
		return fmt.Errorf("runtime: layer %q (%s): %s", ls.Name, ls.Op, fmt.Sprintf(format, args...))
	}
	if ls.In < 0 || ls.Out < 0 || ls.In > maxDim || ls.Out > maxDim {
		return nil, shape{}, errf("in %d / out %d out of range", ls.In, ls.Out)
	}
	for _, v := range [][2]int{ls.Kernel, ls.Stride, ls.Padding, ls.Dilation, ls.OutputSize} {
		if v[0] < 0 || v[1] < 0 || v[0] > 1<<16 || v[1] > 1<<16 {
			return nil, shape{}, errf("kernel, stride, padding, dilation and output size must be in [0, 65536]")
		}
	}
	switch ls.Op {
	case OpLinear:
		if !in.flat {
			return nil, shape{}, errf("input has shape %v; a linear layer needs a flat input (add flatten)", in)
		}
		if ls.In != in.c || ls.Out < 1 {
			return nil, shape{}, errf("in_features %d, out_features %d do not fit the input %v", ls.In, ls.Out, in)
		}
		d, err := b.dense(ls, id, ls.Out, ls.In)
		if err != nil {
			return nil, shape{}, err
		}
		d.in, d.out = in, shape{c: ls.Out, h: 1, w: 1, flat: true}
		return d, d.out, nil
	case OpConv2d:
		if in.flat {
			return nil, shape{}, errf("input has shape %v; conv2d needs [channels, height, width]", in)
		}
		g := convGeom(ls, in)
		if ls.In != in.c || ls.Out < 1 {
			return nil, shape{}, errf("in_channels %d does not match the input %v", ls.In, in)
		}
		if !spanFits(in.h, g.KH, g.PadH, g.DilH) || !spanFits(in.w, g.KW, g.PadW, g.DilW) {
			return nil, shape{}, errf("kernel %v at dilation %v is larger than the input %v padded by %v: the output would be empty", ls.Kernel, [2]int{g.DilH, g.DilW}, in, ls.Padding)
		}
		if err := g.Validate(); err != nil {
			return nil, shape{}, errf("%v", err)
		}
		k, ok := elements([]int{ls.In, ls.Kernel[0], ls.Kernel[1]})
		if !ok {
			return nil, shape{}, errf("in_channels × kernel is too large")
		}
		out := shape{c: ls.Out, h: g.OutH(), w: g.OutW()}
		if err := checkDenseSizes(ls, k, out, pointwise(g)); err != nil {
			return nil, shape{}, err
		}
		d, err := b.dense(ls, id, ls.Out, k)
		if err != nil {
			return nil, shape{}, err
		}
		d.conv = true
		d.geom = g
		d.in, d.out = in, out
		return d, d.out, nil
	case OpReLU, OpTanh, OpSigmoid, OpGELU:
		return &activation{op: ls.Op, s: in}, in, nil
	case OpDropout:
		if !ls.MC {
			return nil, in, nil
		}
		b.m.stochastic = true
		return newDropout(uint32(id), ls.P, in), in, nil
	case OpIdentity:
		return nil, in, nil
	case OpFlatten:
		return nil, shape{c: in.size(), h: 1, w: 1, flat: true}, nil
	case OpMaxPool2d, OpAvgPool2d:
		if in.flat {
			return nil, shape{}, errf("input has shape %v; pooling needs [channels, height, width]", in)
		}
		p, err := newPool(ls, in)
		if err != nil {
			return nil, shape{}, errf("%v", err)
		}
		return p, p.out, nil
	case OpAdaptiveAvgPool2d:
		if in.flat {
			return nil, shape{}, errf("input has shape %v; pooling needs [channels, height, width]", in)
		}
		oh, ow := ls.OutputSize[0], ls.OutputSize[1]
		if oh < 1 || ow < 1 || oh > in.h || ow > in.w {
			return nil, shape{}, errf("output size %v does not fit the input %v", ls.OutputSize, in)
		}
		p := &adaptivePool{in: in, out: shape{c: in.c, h: oh, w: ow}}
		return p, p.out, nil
	case OpBatchNorm:
		return b.batchNorm(ls, in)
	case OpResidual:
		body, bodyOut, err := b.build(ls.Body, in)
		if err != nil {
			return nil, shape{}, err
		}
		sc, scOut, err := b.build(ls.Shortcut, in)
		if err != nil {
			return nil, shape{}, err
		}
		if len(body) == 0 {
			return nil, shape{}, errf("residual block has an empty body")
		}
		if bodyOut != scOut {
			return nil, shape{}, errf("body output %v and shortcut output %v differ", bodyOut, scOut)
		}
		return &residual{body: body, shortcut: sc, s: bodyOut}, bodyOut, nil
	}
	return nil, shape{}, errf("unknown op")
}

func convGeom(ls *LayerSpec, in shape) kernels.ConvGeom {
	stride, dil := ls.Stride, ls.Dilation
	if stride == [2]int{} {
		stride = [2]int{1, 1}
	}
	if dil == [2]int{} {
		dil = [2]int{1, 1}
	}
	return kernels.ConvGeom{
		InC: in.c, InH: in.h, InW: in.w, KH: ls.Kernel[0], KW: ls.Kernel[1],
		StrideH: stride[0], StrideW: stride[1], PadH: ls.Padding[0], PadW: ls.Padding[1],
		DilH: dil[0], DilW: dil[1],
	}
}
