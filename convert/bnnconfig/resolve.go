package bnnconfig

import (
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"math"
	"slices"
	"sort"
)

// Kind is a bayesianize inference name, as bayesianize_ derives it from
// the mixin class name (FFGMixin → "ffg", InducingDeterministicMixin →
// "inducingdeterministic").
type Kind string

// Inference kinds.
const (
	// None means the module stays deterministic.
	None                  Kind = "none"
	FFG                   Kind = "ffg"
	FCG                   Kind = "fcg"
	Inducing              Kind = "inducing"
	InducingDeterministic Kind = "inducingdeterministic"
)

type keySpec struct {
	typ   int
	kinds []Kind // the kinds whose constructor accepts the key
	dom   domain // the values a number may take
}

var (
	inducingKinds = []Kind{Inducing, InducingDeterministic}
	ffgOnly       = []Kind{FFG}
	ffgFcg        = []Kind{FFG, FCG}
)

// keySpecs lists every keyword argument of bayesianize's layer
// constructors (bnn/nn/mixins/variational/{inducing,ffg,fcg}.py) with its
// JSON type.
var keySpecs = map[string]keySpec{
	// _InducingBase.__init__
	"inducing_rows":      {tIntOrNull, inducingKinds, domAny},
	"inducing_cols":      {tIntOrNull, inducingKinds, domAny},
	"prior_sd":           {tNum, inducingKinds, domScale},
	"init_lamda":         {tNum, inducingKinds, domScale},
	"learn_lamda":        {tBool, inducingKinds, domAny},
	"max_lamda":          {tNumOrNull, inducingKinds, domCap},
	"q_inducing":         {tString, inducingKinds, domAny},
	"whitened_u":         {tBool, inducingKinds, domAny},
	"max_sd_u":           {tNumOrNull, inducingKinds, domCap},
	"cache_cholesky":     {tBool, inducingKinds, domAny},
	"ensemble_size":      {tInt, inducingKinds, domAny},
	"sqrt_width_scaling": {tBool, []Kind{Inducing, InducingDeterministic, FFG}, domAny},
	// FFGMixin.__init__ and FCGMixin.__init__
	"prior_mean":               {tNum, ffgFcg, domReal},
	"prior_weight_sd":          {tNumOrString, ffgFcg, domScale},
	"prior_bias_sd":            {tNum, ffgFcg, domScale},
	"init_sd":                  {tNum, ffgFcg, domScale},
	"nonlinearity_scale":       {tNum, ffgFcg, domScale},
	"max_sd":                   {tNumOrNull, ffgOnly, domCap},
	"local_reparameterization": {tBool, ffgOnly, domAny},
}

// accepts reports whether the constructor of kind's layers takes the key.
func (s keySpec) accepts(kind Kind) bool { return slices.Contains(s.kinds, kind) }

// Keys returns the config keys bayesianize's layers accept for kind,
// sorted.
func Keys(kind Kind) []string {
	var out []string
	for k, s := range keySpecs {
		if s.accepts(kind) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// bayesianizable lists the torch.nn classes bayesianize_ replaces
// (_BAYESIANIZABLE_CLASSES); each supports all four kinds.
var bayesianizable = map[string]bool{"Linear": true, "Conv1d": true, "Conv2d": true, "Conv3d": true}

// Module identifies one module of the network as bayesianize_ sees it:
// its name in named_modules() ("" for the root, "0", "features.3") and
// the class name of the plain torch.nn module before bayesianization
// ("Linear", "Conv2d", "ReLU", ...).
type Module struct {
	Name  string
	Class string
}

// Layer is the effective configuration of one module.
type Layer struct {
	Name  string
	Class string
	// Kind is the inference the module gets; None if it stays
	// deterministic.
	Kind Kind
	// MatchedBy says how its settings were found: "global" (inference is
	// a string), "name" (an entry keyed by the module name), "class" (an
	// entry keyed by the class name) or "" (no match).
	MatchedBy string
	// Note explains a match that bayesianize ignores (an inference name
	// it does not know for this class, which leaves the module
	// deterministic).
	Note string
	// Exactly one of these is set, according to Kind.
	Inducing *InducingSettings
	FFG      *FFGSettings
	FCG      *FCGSettings
}

// InducingSettings are the arguments of _InducingBase.__init__ with
// bayesianize's defaults filled in.
type InducingSettings struct {
	// InducingRows and InducingCols; nil means None, i.e.
	// int(sqrt(d_out)) and int(sqrt(d_in)) (see Rows and Cols).
	InducingRows, InducingCols *int
	PriorSD                    float64  // default 1
	InitLamda                  float64  // default 1e-4
	LearnLamda                 bool     // default true
	MaxLamda                   *float64 // default None (no upper clamp)
	QInducing                  string   // "diagonal" (default), "matrix", "full", "ensemble"
	WhitenedU                  bool     // default true
	MaxSDU                     *float64 // default None
	SqrtWidthScaling           bool     // default false
	CacheCholesky              bool     // default false
	EnsembleSize               int      // default 8
}

// Rows returns the number of inducing rows for a layer with dOut outputs.
func (s *InducingSettings) Rows(dOut int) int {
	if s.InducingRows != nil {
		return *s.InducingRows
	}
	return int(math.Sqrt(float64(dOut)))
}

// Cols returns the number of inducing columns for a layer whose weight
// matrix has dIn columns (prod of the weight shape after the first
// dimension, plus one for the bias).
func (s *InducingSettings) Cols(dIn int) int {
	if s.InducingCols != nil {
		return *s.InducingCols
	}
	return int(math.Sqrt(float64(dIn)))
}

// EffectivePriorSD returns prior_sd, divided by sqrt(dIn) when
// sqrt_width_scaling is set (dIn as in Cols).
func (s *InducingSettings) EffectivePriorSD(dIn int) float64 {
	return widthScaled(s.PriorSD, s.SqrtWidthScaling, dIn)
}

// widthScaled returns sd, divided by √dIn when scaled (sqrt_width_scaling).
func widthScaled(sd float64, scaled bool, dIn int) float64 {
	if scaled {
		return sd / math.Sqrt(float64(dIn))
	}
	return sd
}

// FFGSettings are the arguments of FFGMixin.__init__ with defaults.
type FFGSettings struct {
	PriorMean               float64  // default 0
	PriorWeightSD           float64  // default 1
	PriorBiasSD             float64  // default 1
	InitSD                  float64  // default 1e-4
	MaxSD                   *float64 // default None
	LocalReparameterization bool     // default true
	NonlinearityScale       float64  // default 1
	SqrtWidthScaling        bool     // default false
}

// EffectivePriorWeightSD returns the prior sd of the weights:
// prior_weight_sd (÷ sqrt(dIn) with sqrt_width_scaling, dIn counting the
// bias) × nonlinearity_scale.
func (s *FFGSettings) EffectivePriorWeightSD(dIn int) float64 {
	return widthScaled(s.PriorWeightSD, s.SqrtWidthScaling, dIn) * s.NonlinearityScale
}

// EffectivePriorBiasSD returns the prior sd of the bias: prior_bias_sd,
// ÷ sqrt(dIn) with sqrt_width_scaling (not scaled by nonlinearity_scale).
func (s *FFGSettings) EffectivePriorBiasSD(dIn int) float64 {
	return widthScaled(s.PriorBiasSD, s.SqrtWidthScaling, dIn)
}

// FCGSettings are the arguments of FCGMixin.__init__ with defaults.
type FCGSettings struct {
	PriorMean float64 // default 0
	// PriorWeightSD is prior_weight_sd (default 1) unless Neal is set
	// (prior_weight_sd "neal": fan_in^-1/2, fan_in excluding the bias).
	PriorWeightSD     float64
	Neal              bool
	PriorBiasSD       float64 // default 1
	InitSD            float64 // default 1e-4
	NonlinearityScale float64 // default 1
}

// EffectivePriorWeightSD returns the weights' prior sd for a layer of
// fanIn inputs per output (prod of the weight shape after the first
// dimension, no bias).
func (s *FCGSettings) EffectivePriorWeightSD(fanIn int) float64 {
	sd := s.PriorWeightSD
	if s.Neal {
		sd = math.Pow(float64(fanIn), -0.5)
	}
	return sd * s.NonlinearityScale
}

// Resolve returns the effective settings of every module, reproducing
// bnn.bayesianize_(net, **config) for a config read from JSON:
//
//   - if "inference" is a string, every module gets it;
//   - otherwise an entry keyed by the module's name wins, then an entry
//     keyed by its class name. (bayesianize_ also matches module objects,
//     classes and integer indices, none of which JSON can express: JSON
//     keys are strings, so "1" is the module named "1", not index 1.)
//   - a string entry means {"inference": value}; the top-level keys
//     are then added where the entry does not set them (setdefault);
//   - only Linear and Conv1d/2d/3d modules whose inference is one of
//     ffg, fcg, inducing, inducingdeterministic (exact, lower case) are
//     made Bayesian; any other match leaves the module deterministic.
//
// Errors (where bayesianize_ would raise): a matched Bayesian-capable
// module whose entry has no "inference"; a key its layer constructor does
// not accept (named with the layer); q_inducing not one of diagonal,
// matrix, full, ensemble; prior_weight_sd a string other than "neal"
// for FCG or any string for FFG.
func (c *Config) Resolve(modules []Module) ([]Layer, error) {
	out := make([]Layer, 0, len(modules))
	for _, m := range modules {
		l, err := c.resolveOne(m)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

// ResolveModule resolves one module (see Resolve).
func (c *Config) ResolveModule(name, class string) (Layer, error) {
	return c.resolveOne(Module{Name: name, Class: class})
}

// entry returns the first entry of the "inference" object keyed by key, or nil.
func (c *Config) entry(key string) *Entry {
	for i := range c.Entries {
		if c.Entries[i].Key == key {
			return &c.Entries[i]
		}
	}
	return nil
}

func (c *Config) resolveOne(m Module) (Layer, error) {
	l := Layer{Name: m.Name, Class: m.Class, Kind: None}
	var entry *Entry
	switch {
	case c.Global != "":
		entry = &Entry{Inference: c.Global, HasInference: true}
		l.MatchedBy = "global"
	default:
		if entry = c.entry(m.Name); entry != nil {
			l.MatchedBy = "name"
		} else if entry = c.entry(m.Class); entry != nil {
			l.MatchedBy = "class"
		}
	}
	if entry == nil {
		return l, nil
	}
	if !bayesianizable[m.Class] {
		return l, nil
	}
	if !entry.HasInference {
		return Layer{}, fmt.Errorf("bnnconfig: layer %s (%s): matching inference entry %s has no \"inference\" key", clip.Q(m.Name), m.Class, clip.Q(entry.Key))
	}
	kind := Kind(entry.Inference)
	switch kind {
	case FFG, FCG, Inducing, InducingDeterministic:
	default:
		l.Note = fmt.Sprintf("inference %s is not a bayesianize inference (ffg, fcg, inducing, inducingdeterministic); bayesianize_ leaves the layer deterministic", clip.Q(entry.Inference))
		return l, nil
	}
	l.Kind = kind
	// Effective kwargs: the entry's own keys, then top-level defaults for
	// keys it does not set.
	params := append([]Param{}, entry.Params...)
	for _, d := range c.Defaults {
		set := false
		for _, p := range entry.Params {
			if p.Key == d.Key {
				set = true
				break
			}
		}
		if !set {
			params = append(params, d)
		}
	}
	for _, p := range params {
		if !keySpecs[p.Key].accepts(kind) {
			return Layer{}, fmt.Errorf("bnnconfig: layer %s (%s, %s): key %s is not an argument of bayesianize's %s layers", clip.Q(m.Name), m.Class, kind, clip.Q(p.Key), kind)
		}
	}
	var err error
	switch kind {
	case Inducing, InducingDeterministic:
		l.Inducing, err = inducingSettings(params)
	case FFG:
		l.FFG, err = ffgSettings(params)
	case FCG:
		l.FCG, err = fcgSettings(params)
	}
	if err != nil {
		return Layer{}, fmt.Errorf("bnnconfig: layer %s (%s): %w", clip.Q(m.Name), m.Class, err)
	}
	return l, nil
}

// setField stores v in the field dst points to, converted to the field's type
// (nil for null in an optional field). A dst of another type, or nil (a key
// the settings do not hold), is left alone.
func setField(dst any, v Value) {
	switch d := dst.(type) {
	case *float64:
		*d = v.Num
	case *int:
		*d = int(v.Num)
	case *bool:
		*d = v.Bool
	case **float64:
		*d = orNil(v, v.Num)
	case **int:
		*d = orNil(v, int(v.Num))
	}
}

// orNil returns a pointer to x, or nil where v is null (Python None).
func orNil[T any](v Value, x T) *T {
	if v.Null {
		return nil
	}
	return &x
}

func inducingSettings(params []Param) (*InducingSettings, error) {
	s := &InducingSettings{PriorSD: 1, InitLamda: 1e-4, LearnLamda: true, QInducing: "diagonal",
		WhitenedU: true, EnsembleSize: 8}
	fields := map[string]any{"inducing_rows": &s.InducingRows, "inducing_cols": &s.InducingCols,
		"prior_sd": &s.PriorSD, "init_lamda": &s.InitLamda, "learn_lamda": &s.LearnLamda, "max_lamda": &s.MaxLamda,
		"whitened_u": &s.WhitenedU, "max_sd_u": &s.MaxSDU, "sqrt_width_scaling": &s.SqrtWidthScaling,
		"cache_cholesky": &s.CacheCholesky, "ensemble_size": &s.EnsembleSize}
	for _, p := range params {
		if p.Key != "q_inducing" {
			setField(fields[p.Key], p.Value)
			continue
		}
		switch v := p.Value.Str; v {
		case "diagonal", "matrix", "full", "ensemble":
			s.QInducing = v
		default:
			return nil, fmt.Errorf("field \"q_inducing\": %s is not one of diagonal, matrix, full, ensemble", clip.Q(v))
		}
	}
	if s.InducingRows != nil && *s.InducingRows < 1 {
		return nil, fmt.Errorf("field \"inducing_rows\": %d must be positive", *s.InducingRows)
	}
	if s.InducingCols != nil && *s.InducingCols < 1 {
		return nil, fmt.Errorf("field \"inducing_cols\": %d must be positive", *s.InducingCols)
	}
	if s.QInducing == "ensemble" && s.EnsembleSize < 1 {
		return nil, fmt.Errorf("field \"ensemble_size\": %d must be positive", s.EnsembleSize)
	}
	return s, nil
}

func ffgSettings(params []Param) (*FFGSettings, error) {
	s := &FFGSettings{PriorWeightSD: 1, PriorBiasSD: 1, InitSD: 1e-4, LocalReparameterization: true, NonlinearityScale: 1}
	fields := map[string]any{"prior_mean": &s.PriorMean, "prior_weight_sd": &s.PriorWeightSD,
		"prior_bias_sd": &s.PriorBiasSD, "init_sd": &s.InitSD, "max_sd": &s.MaxSD,
		"local_reparameterization": &s.LocalReparameterization, "nonlinearity_scale": &s.NonlinearityScale,
		"sqrt_width_scaling": &s.SqrtWidthScaling}
	for _, p := range params {
		if p.Key == "prior_weight_sd" && p.Value.IsString {
			return nil, fmt.Errorf("field \"prior_weight_sd\": FFG layers need a number, got %s", clip.Q(p.Value.Str))
		}
		setField(fields[p.Key], p.Value)
	}
	return s, nil
}

func fcgSettings(params []Param) (*FCGSettings, error) {
	s := &FCGSettings{PriorWeightSD: 1, PriorBiasSD: 1, InitSD: 1e-4, NonlinearityScale: 1}
	fields := map[string]any{"prior_mean": &s.PriorMean, "prior_weight_sd": &s.PriorWeightSD,
		"prior_bias_sd": &s.PriorBiasSD, "init_sd": &s.InitSD, "nonlinearity_scale": &s.NonlinearityScale}
	for _, p := range params {
		if p.Key != "prior_weight_sd" || !p.Value.IsString {
			setField(fields[p.Key], p.Value)
			continue
		}
		if p.Value.Str != "neal" {
			return nil, fmt.Errorf("field \"prior_weight_sd\": string %s is not \"neal\"", clip.Q(p.Value.Str))
		}
		s.Neal = true
	}
	return s, nil
}
