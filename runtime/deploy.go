package runtime

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/strictjson"
)

// A model file may carry, beside its description (MetaBlob) and tensors, how raw inputs are
// turned into the network's inputs (PreprocessBlob) and when a device should act on a
// prediction (PolicyBlob). Both are optional JSON blob sections: a reader that does not know
// them reads the rest of the file as before.
const (
	// PreprocessBlob is the blob section holding the Preprocess as JSON.
	PreprocessBlob = "preprocess"
	// PolicyBlob is the blob section holding the decision Policy as JSON.
	PolicyBlob = "policy"
)

// DeployVersion is the version of the Preprocess and Policy schemas this package reads and
// writes.
const DeployVersion = 1

// Limits of the deployment sections: they come from files, so they are bounded.
const (
	// MaxClassNames is the most class names a Preprocess may hold.
	MaxClassNames = 1 << 16
	// MaxClassNameLen is the longest class name, in bytes.
	MaxClassNameLen = 256
	maxDeployBlob   = 16 << 20
	maxStatistic    = 1e15
	// maxCompiled bounds scale/std and |mean|/std, so that Normalize's float32 arithmetic
	// cannot overflow on moderate inputs.
	maxCompiled = 1e30
)

// Layout is how the values of one raw image input are ordered.
type Layout string

// The layouts of raw inputs.
const (
	// LayoutCHW is channel-major (C×H×W), the network's own layout (PyTorch's).
	LayoutCHW Layout = "chw"
	// LayoutHWC has the channels of each pixel together (H×W×C), as cameras and image files
	// deliver them; the runtime reorders them.
	LayoutHWC Layout = "hwc"
)

// Preprocess is the transformation from a raw input to the network's input, recorded when the
// network is trained so that a device applies exactly the same one:
//
//	x[c, i] = (raw[c, i] · Scale − Mean[c]) / Std[c]
//
// where c is the channel of an image input (Mean and Std have 1 or C values) or the feature of a
// flat input (1 or F values), after reordering an HWC input to CHW.
type Preprocess struct {
	Version int `json:"version"`
	// Layout of raw image inputs: "chw" (default) or "hwc". Flat inputs must leave it empty or
	// "chw".
	Layout Layout `json:"layout,omitempty"`
	// Scale multiplies every raw value first, e.g. 1/255 for 8-bit pixels; 0 means 1.
	Scale float64 `json:"scale,omitempty"`
	// Mean and Std per channel or feature (1 value: all of them); empty means 0 and 1.
	Mean []float64 `json:"mean,omitempty"`
	Std  []float64 `json:"std,omitempty"`
	// ClassNames names the outputs of a classifier (as many as it has outputs), or is empty.
	ClassNames []string `json:"class_names,omitempty"`
	// Source says where the transformation came from (informational).
	Source string `json:"source,omitempty"`
}

// Validate checks the Preprocess against a model with the given input shape, task and number of
// outputs. Errors name the field and the first bad value.
func (p *Preprocess) Validate(inputShape []int, task Task, outputs int) error {
	if p.Version != DeployVersion {
		return fmt.Errorf("preprocess: version %d is not supported (want %d)", p.Version, DeployVersion)
	}
	switch p.Layout {
	case "", LayoutCHW:
	case LayoutHWC:
		if len(inputShape) != 3 {
			return fmt.Errorf("preprocess: layout %q needs an image input [channels, height, width]; the model takes %v", p.Layout, inputShape)
		}
	default:
		return fmt.Errorf("preprocess: layout %q is not %q or %q", p.Layout, LayoutCHW, LayoutHWC)
	}
	if math.IsNaN(p.Scale) || math.IsInf(p.Scale, 0) || p.Scale < 0 || p.Scale > maxStatistic {
		return fmt.Errorf("preprocess: scale %g must be a finite positive number (or 0 for 1)", p.Scale)
	}
	groups, what := channelsOf(inputShape)
	for _, f := range []struct {
		name string
		v    []float64
		pos  bool
	}{{"mean", p.Mean, false}, {"std", p.Std, true}} {
		if len(f.v) != 0 && len(f.v) != 1 && len(f.v) != groups {
			return fmt.Errorf("preprocess: %s has %d values; want 1 or one per %s (%d)", f.name, len(f.v), what, groups)
		}
		for i, v := range f.v {
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > maxStatistic || (f.pos && !(v > 0)) {
				want := "finite, |value| ≤ 1e15"
				if f.pos {
					want = "finite and positive, ≤ 1e15"
				}
				return fmt.Errorf("preprocess: %s[%d] = %g must be %s", f.name, i, v, want)
			}
		}
	}
	// The compiled form x = raw·(scale/std) + (−mean/std) must stay within float32, or a finite
	// raw value would become ±Inf or NaN.
	scale := p.Scale
	if scale == 0 {
		scale = 1
	}
	for g := 0; g < max(len(p.Mean), len(p.Std)); g++ {
		mean, std := 0.0, 1.0
		if len(p.Mean) > 0 {
			mean = p.Mean[min(g, len(p.Mean)-1)]
		}
		if len(p.Std) > 0 {
			std = p.Std[min(g, len(p.Std)-1)]
		}
		if scale/std > maxCompiled || math.Abs(mean)/std > maxCompiled {
			return fmt.Errorf("preprocess: std[%d] = %g is too small for scale %g and mean %g: (raw · scale − mean) / std would overflow float32",
				min(g, max(len(p.Std)-1, 0)), std, scale, mean)
		}
	}
	if len(p.ClassNames) > 0 {
		if task != Classification {
			return fmt.Errorf("preprocess: class_names given for a %s model", task)
		}
		if len(p.ClassNames) != outputs {
			return fmt.Errorf("preprocess: %d class_names for a model with %d outputs", len(p.ClassNames), outputs)
		}
	}
	if len(p.ClassNames) > MaxClassNames {
		return fmt.Errorf("preprocess: %d class_names (limit %d)", len(p.ClassNames), MaxClassNames)
	}
	for i, n := range p.ClassNames {
		if len(n) == 0 || len(n) > MaxClassNameLen || !utf8.ValidString(n) {
			return fmt.Errorf("preprocess: class_names[%d] must be 1 to %d bytes of UTF-8", i, MaxClassNameLen)
		}
	}
	if len(p.Source) > 4096 {
		return fmt.Errorf("preprocess: source is %d bytes (limit 4096)", len(p.Source))
	}
	return nil
}

// channelsOf is the number of Mean/Std groups of an input shape and what they are called.
func channelsOf(inputShape []int) (int, string) {
	if len(inputShape) == 3 {
		return inputShape[0], "channel"
	}
	n := 1
	for _, d := range inputShape {
		n *= d
	}
	return n, "feature"
}

// MaxPolicySamples bounds Policy.Samples. A model file's policy sets the default K of its
// predictions, so a file may not ask for more samples than the command line may (predict's,
// bench's and serve's --samples).
const MaxPolicySamples = 1 << 16

// Policy is a model's decision rule: when a device may act on a prediction and when it should
// abstain (defer to a person, a bigger model, a retry). A classifier acts when every threshold it
// sets holds — the predicted class's probability at least MinConfidence, the mutual information
// (epistemic uncertainty) at most MaxMutualInfo; a regression model when the largest epistemic
// standard deviation of its outputs is at most MaxEpistemicStd. `edgebnn calibrate` fits the
// thresholds on held-out data.
type Policy struct {
	Version         int      `json:"version"`
	MinConfidence   *float64 `json:"min_confidence,omitempty"`
	MaxMutualInfo   *float64 `json:"max_mutual_info,omitempty"`
	MaxEpistemicStd *float64 `json:"max_epistemic_std,omitempty"`
	// Samples is the number of samples per prediction the thresholds were fitted with (at most
	// MaxPolicySamples); a prediction with fewer samples estimates the uncertainty less well. It
	// is the default K of the model's predictions (Options.Samples). 0: unknown.
	Samples int `json:"samples,omitempty"`
	// Strategy is the sampling strategy the thresholds were fitted with, "weight" or "local"
	// (empty: unknown). Either gives every input the same samples whatever the batch — Auto's
	// per-layer choice depends on it — and it is the default of the model's predictions
	// (Options.Strategy Auto).
	Strategy string `json:"strategy,omitempty"`
	// Seed is the seed of the draws the thresholds were fitted with (nil: unknown): the random
	// streams of the K samples are keyed by it, so predictions with it give every input the
	// samples calibration scored (Options.PolicySeed; edgebnn predict, eval, bench and serve
	// unless --seed is given).
	Seed *uint64 `json:"seed,omitempty"`
	// Calibration records how the thresholds were chosen (informational).
	Calibration *Calibration `json:"calibration,omitempty"`
}

// Calibration describes how a Policy was fitted.
type Calibration struct {
	// Target is "risk" (error rate among accepted inputs at most Value) or "coverage" (accept
	// at least a fraction Value of inputs).
	Target string  `json:"target"`
	Value  float64 `json:"value"`
	// On is the score the rule thresholds: "confidence", "mutual_info" or "both" (a
	// classifier), "epistemic_std" (a regression model).
	On string `json:"on"`
	// Tolerance is, for a regression model, what counted as an error: a prediction with some
	// output farther than Tolerance from its target (in the targets' units). 0 for a classifier.
	Tolerance float64 `json:"tolerance,omitempty"`
	// Data names the calibration data; Seed the split of it.
	Data string `json:"data,omitempty"`
	Seed uint64 `json:"seed"`
	// Fit and Holdout are the two splits: the thresholds were chosen on Fit and checked on
	// Holdout.
	Fit     SplitResult `json:"fit"`
	Holdout SplitResult `json:"holdout"`
}

// SplitResult is a policy's result on one split of the calibration data.
type SplitResult struct {
	N        int     `json:"n"`
	Risk     float64 `json:"risk"`
	Coverage float64 `json:"coverage"`
}

// Differences says how the options of a predictor (Predictor.Options, defaults resolved) draw
// other samples than the ones the policy's thresholds were fitted with — another K, strategy or
// seed, where the policy records them — for a note to the user: the risk and coverage the policy
// was fitted to are those draws'. Nil when they match or p is nil; a mean prediction (Mean)
// draws nothing and is not compared.
func (p *Policy) Differences(o Options) []string {
	if p == nil || o.Mean {
		return nil
	}
	var d []string
	if p.Samples > 0 && o.Samples != p.Samples {
		d = append(d, fmt.Sprintf("%d samples, not %d", o.Samples, p.Samples))
	}
	if p.Strategy != "" && o.Strategy.String() != p.Strategy {
		d = append(d, fmt.Sprintf("strategy %s, not %s", o.Strategy, p.Strategy))
	}
	if p.Seed != nil && o.Seed != *p.Seed {
		d = append(d, fmt.Sprintf("seed %d, not %d", o.Seed, *p.Seed))
	}
	return d
}

// Validate checks the Policy against a model's task. Errors name the field.
func (p *Policy) Validate(task Task) error {
	if p.Version != DeployVersion {
		return fmt.Errorf("policy: version %d is not supported (want %d)", p.Version, DeployVersion)
	}
	if p.Strategy != "" && p.Strategy != "weight" && p.Strategy != "local" {
		return fmt.Errorf("policy: strategy %q is not weight or local", p.Strategy)
	}
	check := func(name string, v *float64, lo, hi float64) error {
		if v == nil {
			return nil
		}
		if math.IsNaN(*v) || *v < lo || *v > hi {
			return fmt.Errorf("policy: %s = %g must be in [%g, %g]", name, *v, lo, hi)
		}
		return nil
	}
	if err := check("min_confidence", p.MinConfidence, 0, 1); err != nil {
		return err
	}
	if err := check("max_mutual_info", p.MaxMutualInfo, 0, maxStatistic); err != nil {
		return err
	}
	if err := check("max_epistemic_std", p.MaxEpistemicStd, 0, maxStatistic); err != nil {
		return err
	}
	switch task {
	case Classification:
		if p.MaxEpistemicStd != nil {
			return fmt.Errorf("policy: max_epistemic_std is for regression models; this one is a classifier")
		}
	case Regression:
		if p.MinConfidence != nil || p.MaxMutualInfo != nil {
			return fmt.Errorf("policy: min_confidence and max_mutual_info are for classifiers; this model is a regression")
		}
	}
	if p.Samples < 0 || p.Samples > MaxPolicySamples {
		return fmt.Errorf("policy: samples %d out of range (0 to %d)", p.Samples, MaxPolicySamples)
	}
	if c := p.Calibration; c != nil {
		if c.Target != "risk" && c.Target != "coverage" {
			return fmt.Errorf("policy: calibration target %q is not risk or coverage", c.Target)
		}
		if c.On != "confidence" && c.On != "mutual_info" && c.On != "both" && c.On != "epistemic_std" {
			return fmt.Errorf("policy: calibration on %q is not confidence, mutual_info, both or epistemic_std", c.On)
		}
		if math.IsNaN(c.Tolerance) || c.Tolerance < 0 || c.Tolerance > maxStatistic {
			return fmt.Errorf("policy: calibration tolerance %g must be in [0, %g]", c.Tolerance, maxStatistic)
		}
		if len(c.Data) > 4096 {
			return fmt.Errorf("policy: calibration data is %d bytes (limit 4096)", len(c.Data))
		}
	}
	return nil
}

// Reason says why a Decision acts or abstains.
type Reason uint8

// The reasons of a Decision.
const (
	// ReasonNoPolicy: the model has no policy, so every prediction is acted on.
	ReasonNoPolicy Reason = iota
	// ReasonCertain: every threshold of the policy holds (also when it sets none).
	ReasonCertain
	// ReasonLowConfidence: the predicted class's probability is below MinConfidence.
	ReasonLowConfidence
	// ReasonHighMutualInfo: the mutual information is above MaxMutualInfo.
	ReasonHighMutualInfo
	// ReasonLowConfidenceHighMutualInfo: both of the above.
	ReasonLowConfidenceHighMutualInfo
	// ReasonHighEpistemicStd: an output's epistemic standard deviation is above
	// MaxEpistemicStd.
	ReasonHighEpistemicStd
	// ReasonNonFinite: the prediction's outputs or summaries are not finite (PredictBatch
	// returns a NonFiniteError for it); nothing is acted on, whatever the policy.
	ReasonNonFinite
)

var reasonNames = [...]string{"no_policy", "certain", "low_confidence", "high_mutual_info",
	"low_confidence_high_mutual_info", "high_epistemic_std", "non_finite"}

// String returns the reason's name as the JSON outputs print it, e.g. "low_confidence".
func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Decision is what a device should do with one prediction.
type Decision struct {
	Act    bool
	Reason Reason
}

// String returns "act" or "abstain".
func (d Decision) String() string {
	if d.Act {
		return "act"
	}
	return "abstain"
}

// Decide applies the policy to a prediction (of the policy's model). A nil Policy acts on every
// prediction, except one the predictor found not finite (ReasonNonFinite), on which no policy
// acts. It allocates nothing.
func (p *Policy) Decide(pr *Prediction) Decision {
	if pr == nil {
		return Decision{Reason: ReasonNonFinite} // nothing to act on
	}
	if pr.nonFinite {
		return Decision{Reason: ReasonNonFinite}
	}
	if p == nil {
		return Decision{Act: true, Reason: ReasonNoPolicy}
	}
	if p.MinConfidence == nil && p.MaxMutualInfo == nil && p.MaxEpistemicStd == nil {
		// A policy without thresholds (calibrate's for a coverage target of 1): every
		// threshold, none, holds.
		return Decision{Act: true, Reason: ReasonCertain}
	}
	if p.MaxEpistemicStd != nil {
		limit := *p.MaxEpistemicStd
		for _, v := range pr.EpistemicVar {
			// !(≤) so that a NaN abstains.
			if !(math.Sqrt(float64(v)) <= limit) {
				return Decision{Reason: ReasonHighEpistemicStd}
			}
		}
		return Decision{Act: true, Reason: ReasonCertain}
	}
	low := p.MinConfidence != nil && !(float64(pr.Confidence) >= *p.MinConfidence)
	high := p.MaxMutualInfo != nil && !(pr.MutualInfo <= *p.MaxMutualInfo)
	switch {
	case low && high:
		return Decision{Reason: ReasonLowConfidenceHighMutualInfo}
	case low:
		return Decision{Reason: ReasonLowConfidence}
	case high:
		return Decision{Reason: ReasonHighMutualInfo}
	}
	return Decision{Act: true, Reason: ReasonCertain}
}

// ParsePreprocess decodes a Preprocess from JSON (unknown fields are errors) and validates it
// against a model with the given input shape, task and outputs.
func ParsePreprocess(data []byte, inputShape []int, task Task, outputs int) (*Preprocess, error) {
	var p Preprocess
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("preprocess: %w", err)
	}
	if err := p.Validate(inputShape, task, outputs); err != nil {
		return nil, err
	}
	return &p, nil
}

// ParsePolicy decodes a Policy from JSON (unknown fields are errors) and validates it for a
// model of the given task.
func ParsePolicy(data []byte, task Task) (*Policy, error) {
	var p Policy
	if err := decodeStrict(data, &p); err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	if err := p.Validate(task); err != nil {
		return nil, err
	}
	return &p, nil
}

func decodeStrict(data []byte, v any) error {
	if len(data) > maxDeployBlob {
		return fmt.Errorf("%d bytes of JSON (limit %d)", len(data), maxDeployBlob)
	}
	return strictjson.Decode(data, v)
}

// loadDeploy reads the optional preprocess and policy sections of f into m.
func (m *Model) loadDeploy(f *format.File) error {
	outputs := m.outShape.size()
	if b, err := optionalBlob(f, PreprocessBlob); err != nil {
		return err
	} else if b != nil {
		p, err := ParsePreprocess(b, m.spec.InputShape, m.spec.Task, outputs)
		if err != nil {
			return fmt.Errorf("runtime: section %q: %w", PreprocessBlob, err)
		}
		m.setPreprocess(p)
	}
	if b, err := optionalBlob(f, PolicyBlob); err != nil {
		return err
	} else if b != nil {
		p, err := ParsePolicy(b, m.spec.Task)
		if err != nil {
			return fmt.Errorf("runtime: section %q: %w", PolicyBlob, err)
		}
		m.policy = p
	}
	return nil
}

func optionalBlob(f *format.File, name string) ([]byte, error) {
	b, err := f.Blob(name)
	if errors.Is(err, format.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("runtime: reading section %q: %w", name, err)
	}
	return b, nil
}

// preprocessor is a validated Preprocess compiled to x = raw·a[g] + b[g] per group g.
type preprocessor struct {
	p    Preprocess
	a, b []float32
	hwc  bool
}

func (m *Model) setPreprocess(p *Preprocess) {
	groups, _ := channelsOf(m.spec.InputShape)
	scale := p.Scale
	if scale == 0 {
		scale = 1
	}
	pp := &preprocessor{p: *p, a: make([]float32, groups), b: make([]float32, groups), hwc: p.Layout == LayoutHWC}
	for g := range groups {
		mean, std := 0.0, 1.0
		if len(p.Mean) > 0 {
			mean = p.Mean[min(g, len(p.Mean)-1)]
		}
		if len(p.Std) > 0 {
			std = p.Std[min(g, len(p.Std)-1)]
		}
		pp.a[g] = float32(scale / std)
		pp.b[g] = float32(-mean / std)
	}
	m.pre = pp
}

// Preprocessing returns a copy of the model's input transformation, or nil if its file has
// none (inputs are then given to the network as they are).
func (m *Model) Preprocessing() *Preprocess {
	if m.pre == nil {
		return nil
	}
	p := m.pre.p
	p.Mean = append([]float64(nil), p.Mean...)
	p.Std = append([]float64(nil), p.Std...)
	p.ClassNames = append([]string(nil), p.ClassNames...)
	return &p
}

// ClassName returns the name of output class k, or "" when the model has no class names.
func (m *Model) ClassName(k int) string {
	if m.pre == nil || k < 0 || k >= len(m.pre.p.ClassNames) {
		return ""
	}
	return m.pre.p.ClassNames[k]
}

// Policy returns a copy of the model's decision policy, or nil if its file has none.
func (m *Model) Policy() *Policy {
	return m.policy.clone()
}

// clone is a deep copy of p (nil for nil).
func (p *Policy) clone() *Policy {
	if p == nil {
		return nil
	}
	c := *p
	if p.Seed != nil {
		seed := *p.Seed
		c.Seed = &seed
	}
	for _, f := range []**float64{&c.MinConfidence, &c.MaxMutualInfo, &c.MaxEpistemicStd} {
		if *f != nil {
			v := **f
			*f = &v
		}
	}
	if p.Calibration != nil {
		cal := *p.Calibration
		c.Calibration = &cal
	}
	return &c
}

// Decide applies the model's policy to a prediction (see Policy.Decide): without a policy every
// prediction is acted on. It allocates nothing.
func (m *Model) Decide(pr *Prediction) Decision { return m.policy.Decide(pr) }

// RawIndex returns the index, within one raw input, of the value that Normalize turns into
// value j of the network's input: j itself, except for an HWC layout, whose raw values are in
// height-width-channel order.
func (m *Model) RawIndex(j int) int {
	if m.pre == nil || !m.pre.hwc || m.inShape.flat {
		return j
	}
	c, hw := m.inShape.c, m.inShape.h*m.inShape.w
	if c <= 0 || hw <= 0 {
		return j
	}
	return (j%hw)*c + j/hw
}

// Normalize applies the model's input transformation to raw inputs (a whole number of inputs,
// each Model.InputSize values in the raw layout), writing the network's inputs into dst (same
// length; dst may be raw itself only for CHW inputs). Without a Preprocess it copies. It
// allocates nothing; NaN and infinite values pass through for Predict to report.
func (m *Model) Normalize(dst, raw []float32) error {
	in := m.inShape.size()
	if len(raw)%in != 0 || len(dst) != len(raw) {
		return fmt.Errorf("runtime: normalize: %d raw values into %d: want the same whole number of inputs of %d values", len(raw), len(dst), in)
	}
	pp := m.pre
	if pp == nil {
		copy(dst, raw)
		return nil
	}
	if pp.hwc && len(raw) > 0 && &dst[0] == &raw[0] {
		return errors.New("runtime: normalize: an HWC input cannot be reordered in place; give a separate dst")
	}
	if m.inShape.flat {
		for s := 0; s < len(raw); s += in {
			x, y := raw[s:s+in], dst[s:s+in]
			for i, v := range x {
				y[i] = v*pp.a[i%len(pp.a)] + pp.b[i%len(pp.b)]
			}
		}
		return nil
	}
	c, hw := m.inShape.c, m.inShape.h*m.inShape.w
	for s := 0; s < len(raw); s += in {
		x, y := raw[s:s+in], dst[s:s+in]
		for ch := range c {
			a, b := pp.a[ch], pp.b[ch]
			yc := y[ch*hw : (ch+1)*hw]
			if pp.hwc {
				for i := range yc {
					yc[i] = x[i*c+ch]*a + b
				}
				continue
			}
			for i, v := range x[ch*hw : (ch+1)*hw] {
				yc[i] = v*a + b
			}
		}
	}
	return nil
}

// WithDeployment returns a Model that shares m's layers and tensors but has the given input
// transformation and policy (either may be nil: none), validated against m. The new Model does
// not own m's file: its Close ends only its own use, and closing m (which waits for the calls in
// flight on both) releases the file; the new Model's calls are ErrClosed afterwards.
func (m *Model) WithDeployment(pre *Preprocess, pol *Policy) (*Model, error) {
	if !m.use() {
		return nil, ErrClosed
	}
	defer m.done()
	c := *m
	c.closer = nil
	c.self, c.derived = new(atomic.Bool), true
	c.pre, c.policy = nil, nil
	if pre != nil {
		if err := pre.Validate(m.spec.InputShape, m.spec.Task, m.outShape.size()); err != nil {
			return nil, err
		}
		cp := *pre
		cp.Mean = append([]float64(nil), pre.Mean...)
		cp.Std = append([]float64(nil), pre.Std...)
		cp.ClassNames = append([]string(nil), pre.ClassNames...)
		c.setPreprocess(&cp)
	}
	if pol != nil {
		if err := pol.Validate(m.spec.Task); err != nil {
			return nil, err
		}
		c.policy = pol.clone()
	}
	return &c, nil
}
