package torcharch

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"
)

func f64p(x float64) *float64 { return &x }

// conv returns a Conv2d-family module with PyTorch's defaults.
func conv(name, typ string, in, out, k int) Module {
	return Module{Name: name, Type: typ, InChannels: in, OutChannels: out, KernelSize: [2]int{k, k},
		Stride: [2]int{1, 1}, Dilation: [2]int{1, 1}, Groups: 1, Bias: true, PaddingMode: "zeros"}
}

func TestFixtures(t *testing.T) {
	c0 := conv("0", "InducingConv2d", 1, 8, 3)
	c0.Padding = [2]int{1, 1}
	c0.InducingCols, c0.InducingRows = 12, 8
	c3 := conv("3", "InducingConv2d", 8, 16, 3)
	c3.InducingCols, c3.InducingRows = 12, 8
	pool := func(n string) Module {
		return Module{Name: n, Type: "MaxPool2d", KernelSize: [2]int{2, 2}, Stride: [2]int{2, 2}, Dilation: [2]int{1, 1}}
	}
	cnn := []Module{
		c0, {Name: "1", Type: "ReLU"}, pool("2"), c3, {Name: "4", Type: "ReLU"}, pool("5"),
		{Name: "6", Type: "Flatten", StartDim: 1, EndDim: -1},
		{Name: "7", Type: "InducingLinear", InFeatures: 576, OutFeatures: 10, Bias: true, InducingCols: 32, InducingRows: 10},
	}
	mlp := []Module{
		{Name: "0", Type: "Flatten", StartDim: 1, EndDim: -1},
		{Name: "1", Type: "InducingLinear", InFeatures: 784, OutFeatures: 128, Bias: true, InducingCols: 24, InducingRows: 16},
		{Name: "2", Type: "ReLU"},
		{Name: "3", Type: "InducingLinear", InFeatures: 128, OutFeatures: 10, Bias: true, InducingCols: 24, InducingRows: 16},
	}
	tests := []struct {
		dir  string
		want []Module
	}{
		{"mlp_ffgu", mlp},
		{"cnn_ensembleu", cnn},
		{"cnn_noisy_ffgu", cnn},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			got, err := ParseReprFile(filepath.Join("..", "..", "testdata", "bayesianize", tc.dir, "model.txt"))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%+v\nwant\n%+v", got, tc.want)
			}
			if back := jsonRoundTrip(t, got); !reflect.DeepEqual(back, got) {
				t.Errorf("JSON round trip: got\n%+v", back)
			}
		})
	}
}

// torchRepr is print(net) of PyTorch 1.13 for many module forms (made with
// Debian's python3-torch), plus bayesianize FFG/FCG reprs composed from
// bnn/nn/mixins/variational/{ffg,fcg}.py extra_repr.
const torchRepr = `Sequential(
  (0): Linear(in_features=4, out_features=3, bias=True)
  (1): Linear(in_features=4, out_features=3, bias=False)
  (2): Conv2d(1, 8, kernel_size=(3, 3), stride=(1, 1))
  (3): Conv2d(1, 8, kernel_size=(3, 5), stride=(2, 2), padding=(1, 2), dilation=(2, 2), bias=False, padding_mode=reflect)
  (4): Conv2d(4, 8, kernel_size=(3, 3), stride=(1, 1), padding=same)
  (5): ReLU()
  (6): ReLU(inplace=True)
  (7): Tanh()
  (8): Sigmoid()
  (9): GELU(approximate='none')
  (10): GELU(approximate='tanh')
  (11): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)
  (12): MaxPool2d(kernel_size=(2, 3), stride=1, padding=1, dilation=1, ceil_mode=True)
  (13): AvgPool2d(kernel_size=2, stride=2, padding=0)
  (14): AdaptiveAvgPool2d(output_size=(1, 1))
  (15): AdaptiveAvgPool2d(output_size=1)
  (16): AdaptiveAvgPool2d(output_size=(None, 7))
  (17): Flatten(start_dim=0, end_dim=2)
  (18): BatchNorm1d(10, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)
  (19): BatchNorm2d(8, eps=0.001, momentum=None, affine=False, track_running_stats=False)
  (20): Dropout(p=0.3, inplace=True)
  (21): Identity()
  (features): Sequential(
    (0): Linear(in_features=2, out_features=2, bias=True)
    (1): Sequential(
      (0): ReLU()
    )
  )
  (26): Sequential()
  (36): Conv2d(2, 4, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), groups=2, padding_mode=circular)
  (37): FFGLinear(in_features=784, out_features=10, bias=True, prior mean=0.00, prior sd=0.04)
  (38): FCGConv2d(3, 4, kernel_size=(3, 3), stride=(1, 1), bias=False, prior mean=0.00)
  (39): InducingDeterministicLinear(in_features=10, out_features=10, bias=False, inducing_cols=3, inducing_rows=2)
  (40): AvgPool2d(kernel_size=3, stride=None, padding=1, ceil_mode=True, count_include_pad=False, divisor_override=2)
)
`

func TestTorchReprForms(t *testing.T) {
	got, err := ParseRepr(strings.NewReader(torchRepr))
	if err != nil {
		t.Fatal(err)
	}
	c3 := conv("3", "Conv2d", 1, 8, 3)
	c3.KernelSize, c3.Stride, c3.Padding, c3.Dilation, c3.Bias, c3.PaddingMode = [2]int{3, 5}, [2]int{2, 2}, [2]int{1, 2}, [2]int{2, 2}, false, "reflect"
	c4 := conv("4", "Conv2d", 4, 8, 3)
	c4.PaddingString = "same"
	c36 := conv("36", "Conv2d", 2, 4, 3)
	c36.Padding, c36.Groups, c36.PaddingMode = [2]int{1, 1}, 2, "circular"
	c38 := conv("38", "FCGConv2d", 3, 4, 3)
	c38.Bias, c38.PriorMean = false, f64p(0)
	want := []Module{
		{Name: "0", Type: "Linear", InFeatures: 4, OutFeatures: 3, Bias: true},
		{Name: "1", Type: "Linear", InFeatures: 4, OutFeatures: 3},
		conv("2", "Conv2d", 1, 8, 3),
		c3, c4,
		{Name: "5", Type: "ReLU"},
		{Name: "6", Type: "ReLU", Inplace: true},
		{Name: "7", Type: "Tanh"},
		{Name: "8", Type: "Sigmoid"},
		{Name: "9", Type: "GELU", Approximate: "none"},
		{Name: "10", Type: "GELU", Approximate: "tanh"},
		{Name: "11", Type: "MaxPool2d", KernelSize: [2]int{2, 2}, Stride: [2]int{2, 2}, Dilation: [2]int{1, 1}},
		{Name: "12", Type: "MaxPool2d", KernelSize: [2]int{2, 3}, Stride: [2]int{1, 1}, Padding: [2]int{1, 1}, Dilation: [2]int{1, 1}, CeilMode: true},
		{Name: "13", Type: "AvgPool2d", KernelSize: [2]int{2, 2}, Stride: [2]int{2, 2}, CountIncludePad: true},
		{Name: "14", Type: "AdaptiveAvgPool2d", OutputSize: [2]int{1, 1}},
		{Name: "15", Type: "AdaptiveAvgPool2d", OutputSize: [2]int{1, 1}},
		{Name: "16", Type: "AdaptiveAvgPool2d", OutputSize: [2]int{-1, 7}},
		{Name: "17", Type: "Flatten", StartDim: 0, EndDim: 2},
		{Name: "18", Type: "BatchNorm1d", NumFeatures: 10, Eps: 1e-5, Momentum: f64p(0.1), Affine: true, TrackRunningStats: true},
		{Name: "19", Type: "BatchNorm2d", NumFeatures: 8, Eps: 0.001},
		{Name: "20", Type: "Dropout", P: 0.3, Inplace: true},
		{Name: "21", Type: "Identity"},
		{Name: "features.0", Type: "Linear", InFeatures: 2, OutFeatures: 2, Bias: true},
		{Name: "features.1.0", Type: "ReLU"},
		c36,
		{Name: "37", Type: "FFGLinear", InFeatures: 784, OutFeatures: 10, Bias: true, PriorMean: f64p(0), PriorSD: f64p(0.04)},
		c38,
		{Name: "39", Type: "InducingDeterministicLinear", InFeatures: 10, OutFeatures: 10, InducingCols: 3, InducingRows: 2},
		{Name: "40", Type: "AvgPool2d", KernelSize: [2]int{3, 3}, Stride: [2]int{3, 3}, Padding: [2]int{1, 1}, CeilMode: true, DivisorOverride: 2},
	}
	if len(got) != len(want) {
		t.Fatalf("%d modules, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("module %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	var buf bytes.Buffer
	if err := WriteJSON(&buf, got); err != nil {
		t.Fatal(err)
	}
	back, err := ParseJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(back, got) {
		t.Error("JSON round trip differs")
	}
	var again bytes.Buffer
	WriteJSON(&again, back)
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("JSON writer is not deterministic")
	}
}

func TestBaseTypeAndInference(t *testing.T) {
	tests := []struct{ typ, base, inf string }{
		{"InducingLinear", "Linear", "inducing"},
		{"InducingDeterministicConv2d", "Conv2d", "inducingdeterministic"},
		{"FFGConv2d", "Conv2d", "ffg"},
		{"FCGLinear", "Linear", "fcg"},
		{"Linear", "Linear", ""},
		{"ReLU", "ReLU", ""},
	}
	for _, tc := range tests {
		m := Module{Type: tc.typ}
		if m.BaseType() != tc.base || m.Inference() != tc.inf {
			t.Errorf("%s: %s %q", tc.typ, m.BaseType(), m.Inference())
		}
	}
}

func TestReprErrors(t *testing.T) {
	tests := []struct {
		name, text string
		want       string // substring; the line number is checked too
		line       string
	}{
		{"empty", "", "empty", ""},
		{"not sequential", "BasicBlock(\n  (conv1): Conv2d(1, 1, kernel_size=(3, 3))\n)\n", "nn.Sequential", "line 1"},
		{"not a module", "hello\n", "nn.Sequential", "line 1"},
		{"after a single module", "ReLU()\nReLU()\n", "after the end", "line 2"},
		{"single module bad args", "Linear(in_features=2)\n", `missing argument "out_features"`, "line 1"},
		{"unknown type", "Sequential(\n  (0): LSTM(4, 4)\n)\n", `unknown module type "LSTM"`, "line 2"},
		{"unknown arg", "Sequential(\n  (0): ReLU(foo=1)\n)\n", `unknown argument "foo"`, "line 2"},
		{"missing arg", "Sequential(\n  (0): Linear(in_features=3, bias=True)\n)\n", `missing argument "out_features"`, "line 2"},
		{"bad value type", "Sequential(\n  (0): Linear(in_features=3.5, out_features=2)\n)\n", `"in_features"`, "line 2"},
		{"bad bool", "Sequential(\n  (0): Linear(in_features=3, out_features=2, bias=yes)\n)\n", `"bias"`, "line 2"},
		{"unclosed", "Sequential(\n  (0): ReLU()\n", "unclosed", "line 2"},
		{"unbalanced", "Sequential(\n  (0): Conv2d(1, 2, kernel_size=(3, 3)\n)\n", "", "line 2"},
		{"bad indent", "Sequential(\n   (0): ReLU()\n)\n", "indentation", "line 2"},
		{"trailing", "Sequential(\n  (0): ReLU()\n)\nextra\n", "after the end", "line 4"},
		{"dup name", "Sequential(\n  (0): ReLU()\n  (0): ReLU()\n)\n", "duplicate", "line 3"},
		{"dup arg", "Sequential(\n  (0): ReLU(inplace=True, inplace=False)\n)\n", "twice", "line 2"},
		{"too many positional", "Sequential(\n  (0): Conv2d(1, 2, 3, kernel_size=3)\n)\n", "positional", "line 2"},
		{"positional after kw", "Sequential(\n  (0): BatchNorm2d(eps=1e-05, 4)\n)\n", "positional", "line 2"},
		{"tuple length", "Sequential(\n  (0): MaxPool2d(kernel_size=(2, 2, 2))\n)\n", "2 values", "line 2"},
		{"bad padding string", "Sequential(\n  (0): Conv2d(1, 2, kernel_size=(3, 3), padding=full)\n)\n", "same/valid", "line 2"},
		{"bad padding mode", "Sequential(\n  (0): Conv2d(1, 2, kernel_size=(3, 3), padding_mode=mirror)\n)\n", "mirror", "line 2"},
		{"dropout range", "Sequential(\n  (0): Dropout(p=1.5, inplace=False)\n)\n", "outside", "line 2"},
		{"nan eps", "Sequential(\n  (0): BatchNorm1d(3, eps=nan)\n)\n", "non-finite", "line 2"},
		{"no name", "Sequential(\n  ReLU()\n)\n", "expected", "line 2"},
		{"negative size", "Sequential(\n  (0): MaxPool2d(kernel_size=-2)\n)\n", "negative", "line 2"},
		// PyTorch refuses a zero stride, dilation or kernel; read on, 0 would mean the default 1.
		{"zero stride", "Sequential(\n  (0): Conv2d(1, 2, kernel_size=(3, 3), stride=(0, 0))\n)\n", "must be positive", "line 2"},
		{"zero dilation", "Sequential(\n  (0): Conv2d(1, 2, kernel_size=(3, 3), dilation=0)\n)\n", "must be positive", "line 2"},
		{"zero pool stride", "Sequential(\n  (0): MaxPool2d(kernel_size=2, stride=0)\n)\n", "must be positive", "line 2"},
		{"zero kernel", "Sequential(\n  (0): AvgPool2d(kernel_size=0)\n)\n", "must be positive", "line 2"},
		{"negative eps", "Sequential(\n  (0): BatchNorm2d(2, eps=-1.0, momentum=0.1, affine=True, track_running_stats=True)\n)\n", "negative", "line 2"},
		{"custom container", "Sequential(\n  (0): BasicBlock(\n    (conv1): Conv2d(1, 1, kernel_size=(3, 3), stride=(1, 1))\n  )\n)\n", `unsupported container "BasicBlock"`, "line 2"},
		{"huge int", "Sequential(\n  (0): Linear(in_features=99999999999, out_features=2)\n)\n", "range", "line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRepr(strings.NewReader(tc.text))
			if err == nil {
				t.Fatal("expected an error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.line) {
				t.Errorf("error %q does not mention %q and %q", err, tc.want, tc.line)
			}
		})
	}
}

func TestJSONErrors(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"not json", `nope`, "json"},
		{"no layers", `{}`, `missing "layers"`},
		{"unknown top", `{"layers": [], "x": 1}`, "unknown field"},
		{"missing name", `{"layers": [{"type": "ReLU"}]}`, `"name"`},
		{"unknown type", `{"layers": [{"name": "0", "type": "LSTM"}]}`, `"LSTM"`},
		{"unknown key", `{"layers": [{"name": "0", "type": "ReLU", "inplac": true}]}`, `"inplac"`},
		{"wrong type", `{"layers": [{"name": "0", "type": "Linear", "in_features": "3", "out_features": 2}]}`, `"in_features"`},
		{"float int", `{"layers": [{"name": "0", "type": "Linear", "in_features": 3.5, "out_features": 2}]}`, `"in_features"`},
		{"missing required", `{"layers": [{"name": "0", "type": "Linear", "in_features": 3}]}`, `"out_features"`},
		{"dup name", `{"layers": [{"name": "0", "type": "ReLU"}, {"name": "0", "type": "Tanh"}]}`, "duplicate"},
		{"nested array", `{"layers": [{"name": "0", "type": "MaxPool2d", "kernel_size": [[2], 2]}]}`, "nested"},
		{"object value", `{"layers": [{"name": "0", "type": "ReLU", "inplace": {}}]}`, `"inplace"`},
		{"trailing", `{"layers": []} {}`, "trailing"},
		{"layer not object", `{"layers": [3]}`, "layers[0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseJSON(strings.NewReader(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want mention of %q", err, tc.want)
			}
		})
	}
}

func TestJSONDefaults(t *testing.T) {
	doc := `{"layers": [
	  {"name": "c", "type": "Conv2d", "in_channels": 3, "out_channels": 4, "kernel_size": 5},
	  {"name": "p", "type": "MaxPool2d", "kernel_size": [2, 3]},
	  {"name": "b", "type": "BatchNorm2d", "num_features": 4, "momentum": null},
	  {"name": "a", "type": "AdaptiveAvgPool2d", "output_size": [null, 7]},
	  {"name": "f", "type": "Flatten"}
	]}`
	got, err := ParseJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{
		conv("c", "Conv2d", 3, 4, 5),
		{Name: "p", Type: "MaxPool2d", KernelSize: [2]int{2, 3}, Stride: [2]int{2, 3}, Dilation: [2]int{1, 1}},
		{Name: "b", Type: "BatchNorm2d", NumFeatures: 4, Eps: 1e-5, Affine: true, TrackRunningStats: true},
		{Name: "a", Type: "AdaptiveAvgPool2d", OutputSize: [2]int{-1, 7}},
		{Name: "f", Type: "Flatten", StartDim: 1, EndDim: -1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

// jsonRoundTrip writes mods with WriteJSON and returns what ParseJSON reads back; the test fails
// at once if either fails.
func jsonRoundTrip(t *testing.T, mods []Module) []Module {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteJSON(&buf, mods); err != nil {
		t.Fatal(err)
	}
	back, err := ParseJSON(&buf)
	if err != nil {
		t.Fatalf("JSON round trip: %v\n%s", err, buf.String())
	}
	return back
}

func FuzzParseRepr(f *testing.F) {
	f.Add(torchRepr)
	f.Add("Sequential(\n  (0): Linear(in_features=1, out_features=1, bias=True)\n)\n")
	f.Fuzz(func(t *testing.T, s string) {
		mods, err := ParseRepr(strings.NewReader(s))
		if err != nil {
			return
		}
		if back := jsonRoundTrip(t, mods); !reflect.DeepEqual(back, mods) {
			t.Fatalf("round trip differs")
		}
	})
}

// TestReprSingleModule: print() of one leaf module is a one-layer network whose module name is ""
// (a bare module's state_dict keys have no prefix).
func TestReprSingleModule(t *testing.T) {
	got, err := ParseRepr(strings.NewReader("Linear(in_features=2, out_features=1, bias=False)\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Module{{Name: "", Type: "Linear", InFeatures: 2, OutFeatures: 1, Bias: false}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
}

// TestModuleCount: an architecture has at most MaxModules leaf modules, printed or JSON; one
// more is refused as it is read, with little allocated: a 15 MB print(net) of 800 000 Tanh lines
// allocated 1.5 GB, and a 16 MB JSON 742 MB, before the runtime refused the layer count.
func TestModuleCount(t *testing.T) {
	repr := func(n int) string {
		var b strings.Builder
		b.WriteString("Sequential(\n")
		for i := range n {
			fmt.Fprintf(&b, "  (%d): Tanh()\n", i)
		}
		b.WriteString(")\n")
		return b.String()
	}
	doc := func(n int) string {
		var b strings.Builder
		b.WriteString(`{"layers": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"name": "%d", "type": "Tanh"}`, i)
		}
		b.WriteString("]}")
		return b.String()
	}
	for _, tc := range []struct {
		form  string
		parse func(string) ([]Module, error)
		text  func(int) string
		want  string
	}{
		{"print", func(s string) ([]Module, error) { return ParseRepr(strings.NewReader(s)) }, repr, "more than 16384 modules"},
		{"json", func(s string) ([]Module, error) { return ParseJSON(strings.NewReader(s)) }, doc, "layers, more than 16384"},
	} {
		if mods, err := tc.parse(tc.text(MaxModules)); err != nil || len(mods) != MaxModules {
			t.Errorf("%s of %d modules: %d, %v", tc.form, MaxModules, len(mods), err)
		}
		if _, err := tc.parse(tc.text(MaxModules + 1)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s of %d modules: %v, want an error saying %q", tc.form, MaxModules+1, err, tc.want)
		}
		// Far beyond the limit, the cost is the limit's (the file's few MB as JSON), not the
		// modules': 131 072 of them were half a gigabyte.
		big := tc.text(8 * MaxModules)
		var before, after goruntime.MemStats
		goruntime.GC()
		goruntime.ReadMemStats(&before)
		_, err := tc.parse(big)
		goruntime.ReadMemStats(&after)
		if err == nil {
			t.Errorf("%s of %d modules: accepted", tc.form, 8*MaxModules)
		}
		if a := after.TotalAlloc - before.TotalAlloc; a > 64<<20 {
			t.Errorf("%s of %d bytes: refusing it allocated %d bytes", tc.form, len(big), a)
		}
	}
}
