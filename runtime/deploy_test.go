package runtime_test

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/runtime"
)

func TestPreprocessValidate(t *testing.T) {
	img, flat := []int{3, 2, 2}, []int{4}
	ok := func(p runtime.Preprocess) runtime.Preprocess { p.Version = runtime.DeployVersion; return p }
	for _, c := range []struct {
		name  string
		p     runtime.Preprocess
		shape []int
		task  runtime.Task
		want  string // "" = valid; else a fragment of the error
	}{
		{"empty", ok(runtime.Preprocess{}), img, runtime.Classification, ""},
		{"per channel", ok(runtime.Preprocess{Layout: runtime.LayoutHWC, Scale: 1.0 / 255, Mean: []float64{0.5, 0.4, 0.3}, Std: []float64{0.2, 0.2, 0.25}}), img, runtime.Classification, ""},
		{"per feature", ok(runtime.Preprocess{Mean: []float64{1, 2, 3, 4}, Std: []float64{1}}), flat, runtime.Regression, ""},
		{"version", runtime.Preprocess{Version: 2}, img, runtime.Classification, "version 2"},
		{"layout", ok(runtime.Preprocess{Layout: "nhwc"}), img, runtime.Classification, `layout "nhwc"`},
		{"hwc flat", ok(runtime.Preprocess{Layout: runtime.LayoutHWC}), flat, runtime.Classification, "needs an image input"},
		{"scale NaN", ok(runtime.Preprocess{Scale: math.NaN()}), img, runtime.Classification, "scale NaN"},
		{"scale negative", ok(runtime.Preprocess{Scale: -1}), img, runtime.Classification, "scale -1"},
		{"mean length", ok(runtime.Preprocess{Mean: []float64{1, 2}}), img, runtime.Classification, "mean has 2 values; want 1 or one per channel (3)"},
		{"std zero", ok(runtime.Preprocess{Std: []float64{1, 0, 1}}), img, runtime.Classification, "std[1] = 0"},
		{"std overflows", ok(runtime.Preprocess{Mean: []float64{1e15}, Std: []float64{1e-300}}), img, runtime.Classification, "std[0] = 1e-300 is too small"},
		{"mean inf", ok(runtime.Preprocess{Mean: []float64{math.Inf(1)}}), img, runtime.Classification, "mean[0] = +Inf"},
		{"names count", ok(runtime.Preprocess{ClassNames: []string{"a", "b"}}), img, runtime.Classification, "2 class_names for a model with 5 outputs"},
		{"names regression", ok(runtime.Preprocess{ClassNames: []string{"a", "b", "c", "d", "e"}}), flat, runtime.Regression, "class_names given for a regression"},
		{"name empty", ok(runtime.Preprocess{ClassNames: []string{"a", "", "c", "d", "e"}}), img, runtime.Classification, "class_names[1]"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.p.Validate(c.shape, c.task, 5)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestPolicyValidateAndDecide(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	pol := func(conf, mi *float64) *runtime.Policy {
		return &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: conf, MaxMutualInfo: mi}
	}
	for _, c := range []struct {
		name string
		p    *runtime.Policy
		task runtime.Task
		want string
	}{
		{"conf range", pol(f(1.5), nil), runtime.Classification, "min_confidence = 1.5"},
		{"conf NaN", pol(f(math.NaN()), nil), runtime.Classification, "min_confidence = NaN"},
		{"mi negative", pol(nil, f(-0.1)), runtime.Classification, "max_mutual_info = -0.1"},
		{"mi on regression", pol(nil, f(0.1)), runtime.Regression, "for classifiers"},
		{"epistemic on classifier", &runtime.Policy{Version: 1, MaxEpistemicStd: f(1)}, runtime.Classification, "for regression"},
		{"calibration target", &runtime.Policy{Version: 1, Calibration: &runtime.Calibration{Target: "accuracy", On: "both"}}, runtime.Classification, `target "accuracy"`},
		{"calibration tolerance NaN", &runtime.Policy{Version: 1, Calibration: &runtime.Calibration{Target: "risk", On: "epistemic_std", Tolerance: math.NaN()}}, runtime.Regression, "calibration tolerance NaN"},
		{"calibration tolerance negative", &runtime.Policy{Version: 1, Calibration: &runtime.Calibration{Target: "risk", On: "epistemic_std", Tolerance: -1}}, runtime.Regression, "calibration tolerance -1 must be in"},
	} {
		if err := c.p.Validate(c.task); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	p := pol(f(0.8), f(0.05))
	if err := p.Validate(runtime.Classification); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		conf float32
		mi   float64
		want runtime.Decision
	}{
		{0.9, 0.01, runtime.Decision{Act: true, Reason: runtime.ReasonCertain}},
		{0.8, 0.05, runtime.Decision{Act: true, Reason: runtime.ReasonCertain}}, // thresholds are inclusive
		{0.7, 0.01, runtime.Decision{Reason: runtime.ReasonLowConfidence}},
		{0.9, 0.2, runtime.Decision{Reason: runtime.ReasonHighMutualInfo}},
		{0.5, 0.2, runtime.Decision{Reason: runtime.ReasonLowConfidenceHighMutualInfo}},
		{0.9, math.NaN(), runtime.Decision{Reason: runtime.ReasonHighMutualInfo}}, // NaN never acts
	} {
		pr := runtime.Prediction{Confidence: c.conf, MutualInfo: c.mi}
		if got := p.Decide(&pr); got != c.want {
			t.Errorf("conf %v, MI %v: %v/%v, want %v/%v", c.conf, c.mi, got, got.Reason, c.want, c.want.Reason)
		}
	}
	if got := (*runtime.Policy)(nil).Decide(&runtime.Prediction{}); !got.Act || got.Reason != runtime.ReasonNoPolicy || got.Reason.String() != "no_policy" {
		t.Errorf("nil policy: %+v", got)
	}
	reg := &runtime.Policy{Version: 1, MaxEpistemicStd: f(0.5)}
	for _, c := range []struct {
		ev  []float32
		act bool
	}{{[]float32{0.04, 0.25}, true}, {[]float32{0.04, 0.2501}, false}, {[]float32{float32(math.NaN())}, false}} {
		if got := reg.Decide(&runtime.Prediction{EpistemicVar: c.ev}); got.Act != c.act {
			t.Errorf("regression %v: act %v, want %v", c.ev, got.Act, c.act)
		}
	}
}

// TestNormalize checks Model.Normalize against the formula computed here, for CHW and HWC images
// and per-feature flat inputs.
func TestNormalize(t *testing.T) {
	img := imageModel(t)
	pre := &runtime.Preprocess{Version: 1, Scale: 0.5, Mean: []float64{1, -2}, Std: []float64{2, 4}}
	raw := make([]float32, 2*img.InputSize())
	for i := range raw {
		raw[i] = float32(i%17) - 3
	}
	for _, layout := range []runtime.Layout{runtime.LayoutCHW, runtime.LayoutHWC} {
		pre.Layout = layout
		m, err := img.WithDeployment(pre, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float32, len(raw))
		if err := m.Normalize(dst, raw); err != nil {
			t.Fatal(err)
		}
		// No inputs is a whole number of them (the HWC in-place check had indexed the empty
		// slices and panicked).
		if err := m.Normalize(nil, nil); err != nil {
			t.Errorf("%s: Normalize of no inputs: %v", layout, err)
		}
		const c, hw = 2, 9 * 9
		for n := 0; n < 2; n++ {
			for ch := 0; ch < c; ch++ {
				for i := 0; i < hw; i++ {
					src := n*c*hw + ch*hw + i
					if layout == runtime.LayoutHWC {
						src = n*c*hw + i*c + ch
					}
					want := (float64(raw[src])*0.5 - pre.Mean[ch]) / pre.Std[ch]
					if got := dst[n*c*hw+ch*hw+i]; !(math.Abs(float64(got)-want) <= 1e-5) {
						t.Fatalf("%s: input %d channel %d pixel %d: %v, want %v", layout, n, ch, i, got, want)
					}
				}
			}
		}
	}
	if err := img.Normalize(make([]float32, 3), make([]float32, 3)); err == nil {
		t.Error("Normalize accepted a partial input")
	}
	flat := buildModel(t, faSpec(), 1)
	fm, err := flat.WithDeployment(&runtime.Preprocess{Version: 1, Mean: []float64{1, 2, 3, 4, 5, 6}, Std: []float64{10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 1, 1, 1, 1, 1}
	if err := fm.Normalize(x, x); err != nil {
		t.Fatal(err)
	}
	for i, v := range x {
		if want := float32(1-(i+1)) / 10; !(math.Abs(float64(v-want)) <= 1e-6) {
			t.Errorf("feature %d: %v, want %v", i, v, want)
		}
	}
}

func imageModel(t *testing.T) *runtime.Model { return buildModel(t, cnnSpec(), 3) }

// TestLoadDeploySections writes model files with and without the preprocess and policy sections
// and checks what Load makes of them, including broken sections, which are errors naming the
// section.
func TestLoadDeploySections(t *testing.T) {
	spec := mlpSpec()
	ts := randomTensors(spec, 5)
	write := func(t *testing.T, blobs map[string]string) string {
		t.Helper()
		w := format.NewWriter()
		meta, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.AddBlob(runtime.MetaBlob, meta, false); err != nil {
			t.Fatal(err)
		}
		for name, tn := range ts {
			if _, err := w.AddTensor(name, tn.Shape, tn.Data, format.AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		for name, b := range blobs {
			if err := w.AddBlob(name, []byte(b), true); err != nil {
				t.Fatal(err)
			}
		}
		path := filepath.Join(t.TempDir(), "m.ebnn")
		if err := w.WriteFile(path, format.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		return path
	}
	names := `["a","b","c","d","e","f","g","h","i","j"]`
	path := write(t, map[string]string{
		runtime.PreprocessBlob: `{"version":1,"scale":0.5,"mean":[0.25],"class_names":` + names + `}`,
		runtime.PolicyBlob:     `{"version":1,"min_confidence":0.7,"samples":24,"calibration":{"target":"risk","value":0.05,"on":"confidence","seed":1,"fit":{"n":10,"risk":0.04,"coverage":0.6},"holdout":{"n":10,"risk":0.05,"coverage":0.5}}}`,
	})
	m, err := runtime.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	pre, pol := m.Preprocessing(), m.Policy()
	if pre == nil || pre.Scale != 0.5 || len(pre.ClassNames) != 10 || m.ClassName(3) != "d" || m.ClassName(10) != "" {
		t.Fatalf("preprocess %+v", pre)
	}
	if pol == nil || pol.MinConfidence == nil || *pol.MinConfidence != 0.7 || pol.Calibration.Holdout.Coverage != 0.5 {
		t.Fatalf("policy %+v", pol)
	}
	*pol.MinConfidence = 0 // a copy: the model's policy must not change
	if *m.Policy().MinConfidence != 0.7 {
		t.Error("Model.Policy returned the model's own threshold")
	}
	// Predictions carry the model's decision.
	p, err := m.NewPredictor(runtime.Options{Samples: 4})
	if err != nil {
		t.Fatal(err)
	}
	var pr runtime.Prediction
	if err := p.Predict(randomInputs(m, 1, 2), &pr); err != nil {
		t.Fatal(err)
	}
	if want := pr.Confidence >= 0.7; math.IsNaN(float64(pr.Confidence)) || pr.Decision.Act != want || pr.Samples != 4 {
		t.Errorf("confidence %v: decision %v, samples %d", pr.Confidence, pr.Decision, pr.Samples)
	}

	plain, err := runtime.Load(write(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if plain.Preprocessing() != nil || plain.Policy() != nil {
		t.Error("a file without the sections has them")
	}
	// The default K is the one the policy (Options.Policy, else the model's) was fitted with.
	conf := 0.5
	for _, c := range []struct {
		name  string
		m     *runtime.Model
		opts  runtime.Options
		wantK int
	}{
		{"model's policy", m, runtime.Options{}, 24},
		{"explicit K", m, runtime.Options{Samples: 4}, 4},
		{"Options.Policy's K", m, runtime.Options{Policy: &runtime.Policy{Version: 1, MinConfidence: &conf, Samples: 8}}, 8},
		{"Options.Policy without K", m, runtime.Options{Policy: &runtime.Policy{Version: 1, MinConfidence: &conf}}, 32},
		{"no policy", plain, runtime.Options{}, 32},
		{"no policy, given one", plain, runtime.Options{Policy: &runtime.Policy{Version: 1, MinConfidence: &conf, Samples: 6}}, 6},
	} {
		p, err := c.m.NewPredictor(c.opts)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := p.Options().Samples; got != c.wantK {
			t.Errorf("%s: K = %d, want %d", c.name, got, c.wantK)
		}
		if k := c.m.PredictorSamples(c.opts); k != c.wantK {
			t.Errorf("%s: PredictorSamples %d, want %d", c.name, k, c.wantK)
		}
		p.Close()
	}
	for _, c := range []struct {
		name, blob, data, want string
	}{
		{"bad json", runtime.PolicyBlob, `{"version":1,`, `section "policy"`},
		{"unknown field", runtime.PolicyBlob, `{"version":1,"max_confidence":0.3}`, `unknown field "max_confidence"`},
		{"trailing", runtime.PolicyBlob, `{"version":1} {}`, "data after the JSON object"},
		{"bad threshold", runtime.PolicyBlob, `{"version":1,"min_confidence":2}`, "min_confidence = 2"},
		{"samples", runtime.PolicyBlob, `{"version":1,"samples":65537}`, "samples 65537 out of range (0 to 65536)"},
		{"names count", runtime.PreprocessBlob, `{"version":1,"class_names":["x"]}`, `section "preprocess": preprocess: 1 class_names`},
		{"std", runtime.PreprocessBlob, `{"version":1,"std":[-1]}`, "std[0] = -1"},
	} {
		_, err := runtime.Load(write(t, map[string]string{c.blob: c.data}))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}
