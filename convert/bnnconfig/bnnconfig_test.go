package bnnconfig

import (
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func ip(i int) *int         { return &i }
func fp(f float64) *float64 { return &f }
func mods(ms ...string) []Module {
	var out []Module
	for i := 0; i+1 < len(ms); i += 2 {
		out = append(out, Module{Name: ms[i], Class: ms[i+1]})
	}
	return out
}

// The fixtures' networks as bayesianize_ sees them (named_modules order,
// root first).
var (
	mlpModules = mods("", "Sequential", "0", "Flatten", "1", "Linear", "2", "ReLU", "3", "Linear")
	cnnModules = mods("", "Sequential", "0", "Conv2d", "1", "ReLU", "2", "MaxPool2d", "3", "Conv2d",
		"4", "ReLU", "5", "MaxPool2d", "6", "Flatten", "7", "Linear")
)

func TestFixtures(t *testing.T) {
	// Expected settings written from the fixtures' inference_config.json
	// files and bayesianize's defaults.
	mlpLinear := &InducingSettings{InducingRows: ip(16), InducingCols: ip(24), PriorSD: 1, InitLamda: 0.001,
		LearnLamda: true, MaxLamda: fp(0.03), QInducing: "diagonal", WhitenedU: true, MaxSDU: fp(0.1),
		SqrtWidthScaling: true, EnsembleSize: 8}
	ensConv := &InducingSettings{InducingRows: ip(8), InducingCols: ip(12), PriorSD: 1, InitLamda: 0.001,
		LearnLamda: true, MaxLamda: fp(0.1), QInducing: "ensemble", WhitenedU: true, SqrtWidthScaling: true, EnsembleSize: 5}
	ensLinear := *ensConv
	ensLinear.InducingRows, ensLinear.InducingCols = ip(10), ip(32)
	noisyConv := &InducingSettings{InducingRows: ip(8), InducingCols: ip(12), PriorSD: 1, InitLamda: 0.3,
		LearnLamda: true, MaxLamda: fp(1), QInducing: "diagonal", WhitenedU: true, MaxSDU: fp(1),
		SqrtWidthScaling: true, EnsembleSize: 8}
	noisyLinear := *noisyConv
	noisyLinear.InducingRows, noisyLinear.InducingCols = ip(10), ip(32)
	tests := []struct {
		dir     string
		modules []Module
		want    map[string]*InducingSettings
	}{
		{"mlp_ffgu", mlpModules, map[string]*InducingSettings{"1": mlpLinear, "3": mlpLinear}},
		{"cnn_ensembleu", cnnModules, map[string]*InducingSettings{"0": ensConv, "3": ensConv, "7": &ensLinear}},
		{"cnn_noisy_ffgu", cnnModules, map[string]*InducingSettings{"0": noisyConv, "3": noisyConv, "7": &noisyLinear}},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			c, err := ParseFile(filepath.Join("..", "..", "testdata", "bayesianize", tc.dir, "inference_config.json"))
			if err != nil {
				t.Fatal(err)
			}
			layers, err := c.Resolve(tc.modules)
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range layers {
				want, bayes := tc.want[l.Name]
				if !bayes {
					if l.Kind != None || l.Inducing != nil {
						t.Errorf("%s (%s): kind %s, want none", l.Name, l.Class, l.Kind)
					}
					continue
				}
				if l.Kind != Inducing || l.MatchedBy != "class" {
					t.Errorf("%s: kind %s matched by %q", l.Name, l.Kind, l.MatchedBy)
				}
				if !reflect.DeepEqual(l.Inducing, want) {
					t.Errorf("%s:\n got %+v\nwant %+v", l.Name, *l.Inducing, *want)
				}
			}
		})
	}
}

func TestEffectiveValues(t *testing.T) {
	s := &InducingSettings{PriorSD: 1, SqrtWidthScaling: true}
	// Layer 1 of mlp_ffgu: d_in = 784 + 1.
	if got, want := s.EffectivePriorSD(785), 1/math.Sqrt(785); got != want {
		t.Errorf("prior sd %v, want %v", got, want)
	}
	if s.Rows(128) != 11 || s.Cols(785) != 28 || s.Rows(10) != 3 || s.Cols(16) != 4 {
		t.Errorf("default sizes %d %d %d %d", s.Rows(128), s.Cols(785), s.Rows(10), s.Cols(16))
	}
	f := &FFGSettings{PriorWeightSD: 2, PriorBiasSD: 3, NonlinearityScale: 0.5, SqrtWidthScaling: true}
	if f.EffectivePriorWeightSD(4) != 0.5 || f.EffectivePriorBiasSD(4) != 1.5 {
		t.Errorf("ffg %v %v", f.EffectivePriorWeightSD(4), f.EffectivePriorBiasSD(4))
	}
	g := &FCGSettings{Neal: true, NonlinearityScale: 2}
	if g.EffectivePriorWeightSD(16) != 0.5 {
		t.Errorf("fcg neal %v", g.EffectivePriorWeightSD(16))
	}
}

func TestMatching(t *testing.T) {
	net := mods("", "Sequential", "0", "Conv2d", "1", "ReLU", "2", "Linear", "3", "Linear", "head.0", "Linear")
	tests := []struct {
		name string
		cfg  string
		want map[string]Kind // absent = None
		by   map[string]string
	}{
		{"global string", `{"inference": "ffg"}`,
			map[string]Kind{"0": FFG, "2": FFG, "3": FFG, "head.0": FFG},
			map[string]string{"": "global", "1": "global", "2": "global"}},
		{"class entries", `{"inference": {"Linear": "fcg"}}`,
			map[string]Kind{"2": FCG, "3": FCG, "head.0": FCG}, map[string]string{"0": "", "2": "class"}},
		{"name beats class", `{"inference": {"Linear": "ffg", "3": "inducing", "head.0": {"inference": "fcg"}}}`,
			map[string]Kind{"2": FFG, "3": Inducing, "head.0": FCG}, map[string]string{"3": "name", "2": "class"}},
		{"index keys are names in JSON", `{"inference": {"1": "ffg"}}`,
			map[string]Kind{}, map[string]string{"1": "name"}},
		{"unknown inference stays deterministic", `{"inference": {"Linear": "FFG", "Conv2d": "mcmc"}}`,
			map[string]Kind{}, map[string]string{"2": "class"}},
		{"inducingdeterministic", `{"inference": {"Conv2d": {"inference": "inducingdeterministic", "inducing_rows": 2}}}`,
			map[string]Kind{"0": InducingDeterministic}, nil},
		{"root entry ignored", `{"inference": {"": "ffg", "Sequential": "ffg"}}`, map[string]Kind{}, map[string]string{"": "name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			layers := parseResolve(t, tc.cfg, net)
			for _, l := range layers {
				want := tc.want[l.Name]
				if want == "" {
					want = None
				}
				if l.Kind != want {
					t.Errorf("%q: kind %s, want %s", l.Name, l.Kind, want)
				}
				if by, ok := tc.by[l.Name]; ok && l.MatchedBy != by {
					t.Errorf("%q: matched by %q, want %q", l.Name, l.MatchedBy, by)
				}
				if (l.Kind == Inducing || l.Kind == InducingDeterministic) != (l.Inducing != nil) || (l.Kind == FFG) != (l.FFG != nil) || (l.Kind == FCG) != (l.FCG != nil) {
					t.Errorf("%q: settings do not match kind %s", l.Name, l.Kind)
				}
			}
		})
	}
	c, _ := Parse([]byte(`{"inference": {"Linear": "FFG"}}`))
	l, _ := c.ResolveModule("2", "Linear")
	if l.Note == "" {
		t.Error("no note for an ignored inference name")
	}
}

// parseResolve parses the configuration cfg and resolves it for modules; the test fails at once
// if either fails.
func parseResolve(t *testing.T, cfg string, modules []Module) []Layer {
	t.Helper()
	c, err := Parse([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := c.Resolve(modules)
	if err != nil {
		t.Fatal(err)
	}
	return layers
}

func TestDefaults(t *testing.T) {
	layers := parseResolve(t, `{"inference": {"Linear": "inducing", "Conv2d": "ffg", "0": "fcg"}}`,
		mods("0", "Conv2d", "1", "Linear", "2", "Conv2d"))
	wantInd := &InducingSettings{PriorSD: 1, InitLamda: 1e-4, LearnLamda: true, QInducing: "diagonal", WhitenedU: true, EnsembleSize: 8}
	wantFFG := &FFGSettings{PriorWeightSD: 1, PriorBiasSD: 1, InitSD: 1e-4, LocalReparameterization: true, NonlinearityScale: 1}
	wantFCG := &FCGSettings{PriorWeightSD: 1, PriorBiasSD: 1, InitSD: 1e-4, NonlinearityScale: 1}
	if !reflect.DeepEqual(layers[0].FCG, wantFCG) || !reflect.DeepEqual(layers[1].Inducing, wantInd) || !reflect.DeepEqual(layers[2].FFG, wantFFG) {
		t.Errorf("defaults: %+v %+v %+v", layers[0].FCG, layers[1].Inducing, layers[2].FFG)
	}
}

func TestEntryOverridesDefaults(t *testing.T) {
	c, err := Parse([]byte(`{"inference": {"Linear": {"inference": "inducing", "prior_sd": 2, "max_lamda": null}},
		"prior_sd": 0.5, "max_lamda": 0.2, "init_lamda": 0.01, "inducing_rows": null}`))
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.ResolveModule("3", "Linear")
	if err != nil {
		t.Fatal(err)
	}
	s := l.Inducing
	if s.PriorSD != 2 || s.MaxLamda != nil || s.InitLamda != 0.01 || s.InducingRows != nil {
		t.Errorf("got %+v", *s)
	}
	c2, _ := Parse([]byte(`{"inference": {"Linear": {"inference": "fcg", "prior_weight_sd": "neal"}}}`))
	l2, err := c2.ResolveModule("0", "Linear")
	if err != nil || !l2.FCG.Neal {
		t.Errorf("neal: %v %+v", err, l2.FCG)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, cfg, want string }{
		{"not json", `nope`, "top level"},
		{"array", `[]`, "object"},
		{"missing inference", `{"prior_sd": 1}`, `missing field "inference"`},
		{"inference number", `{"inference": 3}`, `"inference"`},
		{"unknown top key", `{"inference": "ffg", "prior_sdd": 1}`, `"prior_sdd"`},
		{"unknown entry key", `{"inference": {"Linear": {"inference": "inducing", "rows": 3}}}`, `"Linear"`},
		{"wrong type", `{"inference": "ffg", "learn_lamda": "yes"}`, `"learn_lamda"`},
		{"float for int", `{"inference": "inducing", "inducing_rows": 8.5}`, `"inducing_rows"`},
		{"null not allowed", `{"inference": "inducing", "prior_sd": null}`, `"prior_sd"`},
		{"entry number", `{"inference": {"Linear": 1}}`, `"Linear"`},
		{"entry inference type", `{"inference": {"Linear": {"inference": 1}}}`, `"inference"`},
		{"duplicate key", `{"inference": "ffg", "max_sd": 1, "max_sd": 2}`, "duplicate"},
		{"trailing", `{"inference": "ffg"} {}`, "trailing"},
		{"truncated", `{"inference": {"Linear": "ffg"`, "unexpected EOF"},
		{"deep", `{"inference": "ffg", "x": ` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, "deep"},
		{"empty inference", `{"inference": ""}`, "empty"},
		// Numeric domains: scales finite, at least MinScale and at most
		// MaxMagnitude; clamps positive; means bounded.
		{"prior_sd huge", `{"inference": "inducing", "prior_sd": 1e308}`, `"prior_sd": 1e+308 is larger`},
		{"prior_sd overflow", `{"inference": "inducing", "prior_sd": 1e999}`, `"prior_sd"`},
		{"prior_sd zero", `{"inference": "inducing", "prior_sd": 0}`, `"prior_sd": 0 is not positive`},
		{"prior_sd negative", `{"inference": {"Linear": {"inference": "inducing", "prior_sd": -2}}}`, `"prior_sd": -2 is not positive`},
		{"init_lamda negative", `{"inference": "inducing", "init_lamda": -1e-3}`, `"init_lamda"`},
		{"max_sd_u negative", `{"inference": "inducing", "max_sd_u": -0.1}`, `"max_sd_u": -0.1 is negative`},
		{"max_lamda negative", `{"inference": "inducing", "max_lamda": -1}`, `"max_lamda": -1 is negative`},
		{"max_lamda tiny negative", `{"inference": "inducing", "max_lamda": -1e-300}`, `"max_lamda"`},
		{"max_sd negative", `{"inference": "ffg", "max_sd": -3}`, `"max_sd"`},
		{"prior_mean huge", `{"inference": "ffg", "prior_mean": -3e38}`, `"prior_mean"`},
		{"prior_weight_sd huge", `{"inference": "ffg", "prior_weight_sd": 1e300}`, `"prior_weight_sd"`},
		{"prior_bias_sd zero", `{"inference": "ffg", "prior_bias_sd": 0.0}`, `"prior_bias_sd"`},
		{"init_sd negative", `{"inference": "fcg", "init_sd": -1}`, `"init_sd"`},
		{"nonlinearity_scale negative", `{"inference": "fcg", "nonlinearity_scale": -1}`, `"nonlinearity_scale"`},
		// Scales too small for float32: 1e-40 is denormal, 1e-300 is 0; the trainer built them
		// into a NaN or zero tensor that the runtime refused without naming the field. A prior
		// standard deviation of 1e-20 made the KL +Inf.
		{"init_sd denormal", `{"inference": "ffg", "init_sd": 1e-40}`, `"init_sd": 1e-40 is smaller than 1e-12`},
		{"prior_weight_sd tiny", `{"inference": "ffg", "prior_weight_sd": 1e-300}`, `"prior_weight_sd": 1e-300 is smaller than 1e-12`},
		{"prior_bias_sd narrow", `{"inference": "ffg", "prior_bias_sd": 1e-20}`, `"prior_bias_sd": 1e-20 is smaller than 1e-12`},
		{"prior_sd tiny", `{"inference": {"Linear": {"inference": "inducing", "prior_sd": 5e-13}}}`, `"prior_sd": 5e-13 is smaller`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.cfg))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct{ name, cfg, want string }{
		{"ffg key on inducing", `{"inference": {"Linear": "inducing"}, "max_sd": 0.1}`, `layer "3"`},
		{"inducing key on ffg", `{"inference": "ffg", "prior_sd": 1}`, `"prior_sd"`},
		{"sqrt scaling on fcg", `{"inference": "fcg", "sqrt_width_scaling": true}`, `"sqrt_width_scaling"`},
		{"bad q_inducing", `{"inference": "inducing", "q_inducing": "banded"}`, "banded"},
		{"no inference in entry", `{"inference": {"Linear": {"prior_sd": 1}}}`, `no "inference"`},
		{"ffg string prior", `{"inference": "ffg", "prior_weight_sd": "neal"}`, "prior_weight_sd"},
		{"fcg other string", `{"inference": "fcg", "prior_weight_sd": "wide"}`, "wide"},
		{"zero rows", `{"inference": "inducing", "inducing_rows": 0}`, "inducing_rows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.cfg))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Resolve(mods("3", "Linear"))
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `"3"`) {
				t.Errorf("err = %v, want mention of %q and the layer", err, tc.want)
			}
		})
	}
	// A matched entry without "inference" on a non-Bayesian class is fine,
	// as in bayesianize_ (the class check short-circuits).
	c, _ := Parse([]byte(`{"inference": {"ReLU": {"prior_sd": 1}}}`))
	if _, err := c.Resolve(mods("1", "ReLU")); err != nil {
		t.Errorf("ReLU: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 10}}, "prior_sd": 1.0}`))
	f.Add([]byte(`{"inference": "ffg", "max_sd": 0.1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := Parse(b)
		if err != nil {
			return
		}
		ls, err := c.Resolve(mods("0", "Linear", "1", "Conv2d", "2", "ReLU"))
		if err != nil {
			return
		}
		// Every accepted scale is finite and positive, every clamp non-negative.
		scale := func(what string, x float64) {
			if !(x > 0 && x <= MaxMagnitude) {
				t.Fatalf("accepted %s = %g", what, x)
			}
		}
		clamp := func(what string, x *float64) {
			if x != nil && !(*x >= 0 && !math.IsInf(*x, 0)) {
				t.Fatalf("accepted %s = %g", what, *x)
			}
		}
		for _, l := range ls {
			if s := l.Inducing; s != nil {
				scale("prior_sd", s.PriorSD)
				scale("init_lamda", s.InitLamda)
				clamp("max_lamda", s.MaxLamda)
				clamp("max_sd_u", s.MaxSDU)
			}
			if s := l.FFG; s != nil {
				scale("prior_weight_sd", s.PriorWeightSD)
				scale("prior_bias_sd", s.PriorBiasSD)
				scale("init_sd", s.InitSD)
				clamp("max_sd", s.MaxSD)
				if !(math.Abs(s.PriorMean) <= MaxMagnitude) {
					t.Fatalf("accepted prior_mean = %g", s.PriorMean)
				}
			}
		}
	})
}

// TestBayesianizeConfigForms parses configs of the forms shipped in
// microsoft/bayesianize's configs/ directory.
func TestBayesianizeConfigForms(t *testing.T) {
	resnet := mods("conv1", "Conv2d", "bn1", "BatchNorm2d", "layer1.0.conv1", "Conv2d", "fc", "Linear")
	tests := []struct {
		name string
		cfg  string
		chk  func(t *testing.T, ls []Layer)
	}{
		{"ffg_w_maxsd01", `{"inference": "ffg", "max_sd": 0.1}`, func(t *testing.T, ls []Layer) {
			if ls[0].Kind != FFG || *ls[0].FFG.MaxSD != 0.1 || ls[1].Kind != None || ls[3].FFG == nil {
				t.Errorf("%+v", ls)
			}
		}},
		{"ffg_w_unconstrained", `{"inference": "ffg"}`, func(t *testing.T, ls []Layer) {
			if ls[2].FFG == nil || ls[2].FFG.MaxSD != nil {
				t.Errorf("%+v", ls[2])
			}
		}},
		{"ffg_u_cifar10", "{\n\t\"inference\": {\n\t\t\"Conv2d\": {\n\t\t\t\"inference\": \"inducing\",\n\t\t       \t\"inducing_rows\": 128,\n\t\t\t\"inducing_cols\": 128\n\t\t}, \"Linear\": {\n\t\t\t\"inference\": \"inducing\",\n\t\t       \t\"inducing_rows\": 10,\n\t\t\t\"inducing_cols\": 128\n\t\t}\n\t},\n       \t\"whitened_u\": true,\n       \t\"q_inducing\": \"diagonal\",\n       \t\"learn_lamda\": true,\n       \t\"init_lamda\": 0.001,\n       \t\"max_lamda\": 0.03,\n        \"max_sd_u\": 0.1,\n       \t\"cache_cholesky\": true,\n       \t\"prior_sd\": 1.0,\n       \t\"sqrt_width_scaling\": true\n}\n",
			func(t *testing.T, ls []Layer) {
				c, f := ls[2].Inducing, ls[3].Inducing
				if c == nil || f == nil || *c.InducingRows != 128 || *f.InducingRows != 10 || !c.CacheCholesky || *f.MaxSDU != 0.1 || f.EnsembleSize != 8 {
					t.Errorf("%+v %+v", c, f)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ls := parseResolve(t, tc.cfg, resnet)
			tc.chk(t, ls)
		})
	}
}
