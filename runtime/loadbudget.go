package runtime

// LoadLimits are the model-wide limits on what a model's layers derive at load beyond their
// tensors, which New (and Load) apply to each model, across the members of a mixture too: the
// Bernstein layers' quantile tables and the work of tabulating them, and what the inducing
// layers (and a global inducing posterior) keep and the work of deriving it. As a budget's
// usage (LoadBudget.Used), the fields are what was charged against each limit.
type LoadLimits struct {
	// BernsteinTableBytes bounds the bytes of all the quantile tables (MaxBernsteinTableBytes).
	BernsteinTableBytes int64
	// BernsteinWork bounds the flow-term evaluations that tabulate them (MaxBernsteinWork).
	BernsteinWork int64
	// InducingBytes bounds the bytes the inducing layers derive and keep, with what the layer
	// being loaded holds while it loads (MaxInducingBytes).
	InducingBytes int64
	// InducingWork bounds the multiply-adds that derive them (MaxInducingWork), plus
	// InducingWorkPerValue for every value the inducing layers store.
	InducingWork int64
}

// DefaultLoadLimits returns the limits New applies: MaxBernsteinTableBytes, MaxBernsteinWork,
// MaxInducingBytes and MaxInducingWork. The machine's memory (DefaultMaxMemory) bounds the bytes
// too.
func DefaultLoadLimits() LoadLimits {
	return LoadLimits{BernsteinTableBytes: MaxBernsteinTableBytes, BernsteinWork: MaxBernsteinWork,
		InducingBytes: MaxInducingBytes, InducingWork: MaxInducingWork}
}

// A LoadBudget charges the models built by its New against one LoadLimits, as New charges the
// layers of one model. Building the members of a mixture of posteriors (Spec.Mixture) one after
// another — each a single network: the mixture's spec with Members 0, its tensors without
// MemberPrefix(k) — with one LoadBudget charges them what New charges the mixture they make, in
// the same order, so the first member whose New fails for a limit is the one that takes the
// mixture over it. A host that assembles a mixture from separately read members (the converter)
// learns from it which member does, before reading the rest. A LoadBudget is not safe for
// concurrent use.
type LoadBudget struct {
	b loadBudget
}

// NewLoadBudget returns a budget of limits l. A field that is not positive, or is above the
// runtime's (DefaultLoadLimits), is the runtime's: a budget may refuse what Load accepts, never
// admit what it refuses.
func NewLoadBudget(l LoadLimits) *LoadBudget {
	d := DefaultLoadLimits()
	lim := func(v, def int64) int64 {
		if v <= 0 || v > def {
			return def
		}
		return v
	}
	return &LoadBudget{b: loadBudget{
		maxBernsteinBytes:    lim(l.BernsteinTableBytes, d.BernsteinTableBytes),
		maxBernsteinWork:     lim(l.BernsteinWork, d.BernsteinWork),
		maxInducingBytes:     lim(l.InducingBytes, d.InducingBytes),
		maxInducingWork:      lim(l.InducingWork, d.InducingWork),
		inducingWorkPerValue: InducingWorkPerValue,
	}}
}

// New is the package's New, charging what the model's layers derive to b. When it fails, b
// keeps the charges of the layers that loaded before the failure.
func (b *LoadBudget) New(spec *Spec, src TensorSource) (*Model, error) {
	return newModel(spec, src, &b.b)
}

// Used returns what the models built by b's New have charged so far (InducingWork: the
// multiply-adds, whose limit grows by InducingWorkPerValue with every value stored).
func (b *LoadBudget) Used() LoadLimits {
	return LoadLimits{BernsteinTableBytes: b.b.bernsteinBytes, BernsteinWork: b.b.bernsteinWork,
		InducingBytes: b.b.inducingBytes, InducingWork: b.b.inducingWork}
}

// Limits returns b's limits. The machine's memory bounds the bytes as well, as for Load.
func (b *LoadBudget) Limits() LoadLimits {
	return LoadLimits{BernsteinTableBytes: b.b.maxBernsteinBytes, BernsteinWork: b.b.maxBernsteinWork,
		InducingBytes: b.b.maxInducingBytes, InducingWork: b.b.maxInducingWork}
}
