package convert

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/runtime"
)

// The one mapping from an architecture and an inference config to posteriors (Layers,
// Posterior; the trainer's too) against bayesianize's own choices: every inducing layer of every
// fixture gets the inducing rows and columns of the Z matrices bayesianize saved.
func TestLayersMatchFixtures(t *testing.T) {
	for _, fx := range fixtures {
		d := filepath.Join(fixtureDir, fx)
		data, err := os.ReadFile(filepath.Join(d, "model.txt"))
		if err != nil {
			t.Fatal(err)
		}
		mods, err := torcharch.ParseRepr(strings.NewReader(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		var nodes []resnet.Node
		for i := range mods {
			nodes = append(nodes, resnet.Node{Module: &mods[i]})
		}
		cfg, err := bnnconfig.ParseFile(filepath.Join(d, "inference_config.json"))
		if err != nil {
			t.Fatal(err)
		}
		layers, err := Layers(nodes, cfg, nil)
		if err != nil {
			t.Fatalf("%s: %v", fx, err)
		}
		sd, err := safetensors.ReadFile(filepath.Join(d, "state_dict.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		runtime.WalkLayers(layers, func(l *runtime.LayerSpec) {
			zr, ok := sd.Tensor(l.Name + ".z_row")
			if !ok {
				if l.Posterior != nil {
					t.Errorf("%s: layer %s has a %s posterior; bayesianize's has no z_row", fx, l.Name, l.Posterior.Kind)
				}
				return
			}
			zc, _ := sd.Tensor(l.Name + ".z_col")
			n++
			p := l.Posterior
			if p == nil || p.Kind != runtime.KindInducing || p.InducingRows != zr.Shape[0] || p.InducingCols != zc.Shape[0] {
				t.Errorf("%s: layer %s: posterior %+v; bayesianize's z_row %v, z_col %v", fx, l.Name, p, zr.Shape, zc.Shape)
			}
		})
		if n == 0 {
			t.Errorf("%s: no inducing layer checked", fx)
		}
	}
}

// Inducing rows and columns that the config leaves unset: bayesianize's default int(√d) without
// a printed size, the printed size with one; a printed size that contradicts the config's is an
// error.
func TestPosteriorInducingSize(t *testing.T) {
	plain := torcharch.Module{Name: "fc", Type: "Linear", InFeatures: 784, OutFeatures: 10, Bias: true}
	printed := torcharch.Module{Name: "fc", Type: "InducingLinear", InFeatures: 784, OutFeatures: 10, Bias: true,
		InducingRows: 7, InducingCols: 30}
	cfg := func(extra string) *bnnconfig.Config {
		c, err := bnnconfig.Parse([]byte(`{"inference": {"Linear": {"inference": "inducing"` + extra + `}}}`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct {
		what       string
		m          torcharch.Module
		cfg        *bnnconfig.Config
		rows, cols int
		err        string
	}{
		{"default √d_out, √(d_in + 1)", plain, cfg(""), 3, 28, ""},
		{"config", plain, cfg(`, "inducing_rows": 5, "inducing_cols": 6`), 5, 6, ""},
		{"printed", printed, cfg(""), 7, 30, ""},
		{"printed = config", printed, cfg(`, "inducing_rows": 7`), 7, 30, ""},
		{"printed ≠ config", printed, cfg(`, "inducing_cols": 31`), 0, 0, "inducing_rows=7, inducing_cols=30 but the config gives 7, 31"},
		{"printed without config", printed, nil, 0, 0, "no inference config was given"},
	} {
		ls, err := LayerSpec(&c.m)
		if err != nil {
			t.Fatal(err)
		}
		p, _, err := Posterior(&c.m, &ls, c.cfg)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.what, err, c.err)
			}
			continue
		}
		if err != nil || p == nil || p.InducingRows != c.rows || p.InducingCols != c.cols {
			t.Errorf("%s: %+v, %v; want %d × %d", c.what, p, err, c.rows, c.cols)
		}
	}
}

// --arch's one grammar: every form reads to the expected tree; malformed ones are errors that say
// what is wrong.
func TestParseArchForms(t *testing.T) {
	dir := t.TempDir()
	repr := filepath.Join(dir, "model.txt")
	if err := os.WriteFile(repr, []byte("Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=True)\n  (1): Tanh()\n)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	jsonFile := filepath.Join(dir, "arch.txt") // JSON by content, whatever the name
	inline := `{"layers": [{"name": "fc", "type": "Linear", "in_features": 3, "out_features": 2}]}`
	if err := os.WriteFile(jsonFile, []byte(inline), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		arch    string
		types   string // the leaf modules' types, in order
		builtin bool
		err     string
	}{
		{"mlp:4-8-3", "Flatten Linear ReLU Linear", false, ""},
		{"mlp:1-50-1:tanh", "Flatten Linear Tanh Linear", false, ""},
		{inline, "Linear", false, ""},
		{jsonFile, "Linear", false, ""},
		{repr, "Linear Tanh", false, ""},
		{"resnet18", "", true, ""},
		{"mlp:4-x-3", "", false, `width "x" is not an integer`},
		{"mlp:4-0-3", "", false, "must be positive"},
		{"mlp:4:swish", "", false, "at least input and output widths"},
		{"mlp:4-3:swish", "", false, `activation "swish"`},
		{"{", "", false, "the inline architecture"},
		{filepath.Join(dir, "missing"), "", false, "neither a built-in name"},
	} {
		nodes, builtin, err := ParseArch(c.arch, 10, 3)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%.40s: error %v, want %q", c.arch, err, c.err)
			}
			continue
		}
		if err != nil || builtin != c.builtin {
			t.Errorf("%.40s: %v, builtin %v", c.arch, err, builtin)
			continue
		}
		if builtin {
			continue
		}
		var types []string
		for _, n := range nodes {
			types = append(types, n.Module.Type)
		}
		if got := strings.Join(types, " "); got != c.types {
			t.Errorf("%.40s: modules %s, want %s", c.arch, got, c.types)
		}
	}
}

// TestParseArchMLPWidths: an mlp: architecture may have MaxMLPWidths widths — 2n − 2 layers,
// runtime.MaxLayers, which the runtime takes — and one with more is refused before anything is
// built: 400 000 widths (an 800 KB config value) allocated 1.5 GB before the runtime refused
// the layer count.
func TestParseArchMLPWidths(t *testing.T) {
	at := "mlp:1" + strings.Repeat("-1", MaxMLPWidths-1)
	nodes, _, err := ParseArch(at, 10, 1)
	if err != nil {
		t.Fatalf("%d widths: %v", MaxMLPWidths, err)
	}
	layers, err := Layers(nodes, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := &runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Regression, NoiseVar: 1, InputShape: []int{1}, Layers: layers}
	if err := spec.Validate(); err != nil {
		t.Fatalf("%d widths (%d layers): the runtime refuses the spec: %v", MaxMLPWidths, len(layers), err)
	}

	for _, n := range []int{MaxMLPWidths + 1, 400000} {
		arch := "mlp:1" + strings.Repeat("-1", n-1) + ":tanh"
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		_, _, err := ParseArch(arch, 10, 1)
		goruntime.ReadMemStats(&after)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d widths, more than %d", n, MaxMLPWidths)) {
			t.Errorf("%d widths: ParseArch = %v, want a refusal counting them", n, err)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 1<<20 {
			t.Errorf("%d widths: refusing them allocated %d bytes", n, a)
		}
		if len(fmt.Sprint(err)) > 1000 {
			t.Errorf("%d widths: an error of %d bytes", n, len(fmt.Sprint(err)))
		}
	}
	if _, err := MLP(make([]int, MaxMLPWidths+1), ""); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("MLP of %d widths: %v", MaxMLPWidths+1, err)
	}
}
