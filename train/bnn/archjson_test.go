package bnn

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/resnet"
	"github.com/edgebnn/edgebnn/convert/torcharch"
	"github.com/edgebnn/edgebnn/runtime"
)

// resJSON is resSpec's network in the JSON architecture format.
const resJSON = `{"layers": [
  {"name": "conv1", "type": "Conv2d", "in_channels": 2, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
  {"name": "bn1", "type": "BatchNorm2d", "num_features": 4},
  {"name": "relu", "type": "ReLU"},
  {"name": "layer1.0", "type": "Residual", "body": [
    {"name": "layer1.0.conv1", "type": "Conv2d", "in_channels": 4, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer1.0.bn1", "type": "BatchNorm2d", "num_features": 4},
    {"name": "layer1.0.relu", "type": "ReLU"},
    {"name": "layer1.0.conv2", "type": "Conv2d", "in_channels": 4, "out_channels": 4, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer1.0.bn2", "type": "BatchNorm2d", "num_features": 4}]},
  {"name": "layer1.0.relu", "type": "ReLU"},
  {"name": "layer2.0", "type": "Residual", "body": [
    {"name": "layer2.0.conv1", "type": "Conv2d", "in_channels": 4, "out_channels": 5, "kernel_size": 3, "stride": 2, "padding": 1, "bias": false},
    {"name": "layer2.0.bn1", "type": "BatchNorm2d", "num_features": 5},
    {"name": "layer2.0.relu", "type": "ReLU"},
    {"name": "layer2.0.conv2", "type": "Conv2d", "in_channels": 5, "out_channels": 5, "kernel_size": 3, "padding": 1, "bias": false},
    {"name": "layer2.0.bn2", "type": "BatchNorm2d", "num_features": 5}],
   "shortcut": [
    {"name": "layer2.0.downsample.0", "type": "Conv2d", "in_channels": 4, "out_channels": 5, "kernel_size": 1, "stride": 2, "bias": false},
    {"name": "layer2.0.downsample.1", "type": "BatchNorm2d", "num_features": 5}]},
  {"name": "layer2.0.relu", "type": "ReLU"},
  {"name": "avgpool", "type": "AdaptiveAvgPool2d", "output_size": 2},
  {"name": "flatten", "type": "Flatten"},
  {"name": "bnfc", "type": "BatchNorm1d", "num_features": 20},
  {"name": "fc", "type": "Linear", "in_features": 20, "out_features": 3}
]}`

// TestArchJSONResidual parses the JSON form of resSpec's network and checks that the trainer's
// spec is the hand-written one, with the BatchNorm momenta as training settings.
func TestArchJSONResidual(t *testing.T) {
	mods, err := ParseArch(resJSON)
	if err != nil {
		t.Fatal(err)
	}
	spec, inits, err := SpecFromModules(mods, nil, []int{2, 6, 6}, runtime.Classification, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := resSpec(nil)
	if !reflect.DeepEqual(spec.Layers, want.Layers) {
		t.Fatalf("layers\n%+v\nwant\n%+v", spec.Layers, want.Layers)
	}
	if in := inits["layer2.0.downsample.1"]; in.Momentum == nil || *in.Momentum != 0.1 || in.CumulativeStats {
		t.Fatalf("downsample BatchNorm init %+v, want momentum 0.1", in)
	}
	if _, err := New[float32](spec, inits, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	// momentum null is PyTorch's cumulative average.
	mods, err = ParseArch(strings.Replace(resJSON, `"name": "bn1", "type": "BatchNorm2d", "num_features": 4}`,
		`"name": "bn1", "type": "BatchNorm2d", "num_features": 4, "momentum": null}`, 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, inits, err = SpecFromModules(mods, nil, []int{2, 6, 6}, runtime.Classification, 0); err != nil {
		t.Fatal(err)
	}
	if in := inits["bn1"]; !in.CumulativeStats {
		t.Fatalf("bn1 with momentum null: init %+v, want cumulative statistics", in)
	}
}

// TestArchJSONFlatIsTorcharch checks that a file without residual blocks reads exactly as
// convert/torcharch reads it.
func TestArchJSONFlatIsTorcharch(t *testing.T) {
	doc := `{"layers": [
  {"name": "0", "type": "InducingConv2d", "in_channels": 1, "out_channels": 8, "kernel_size": [3, 3], "padding": 1, "inducing_cols": 3, "inducing_rows": 2},
  {"name": "1", "type": "BatchNorm2d", "num_features": 8, "eps": 0.001, "momentum": 0.2},
  {"name": "2", "type": "ReLU"},
  {"name": "3", "type": "AdaptiveAvgPool2d", "output_size": [2, 2]},
  {"name": "4", "type": "Flatten"},
  {"name": "5", "type": "Linear", "in_features": 32, "out_features": 10}]}`
	got, err := ParseArchJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	want, err := torcharch.ParseJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}

// TestArchJSONResNetRoundTrip writes convert/resnet's ResNet-18 and ResNet-50 trees in the JSON
// format and reads them back to the same modules and block structure.
func TestArchJSONResNetRoundTrip(t *testing.T) {
	for _, name := range []string{"resnet18", "resnet50"} {
		t.Run(name, func(t *testing.T) {
			nodes, err := resnet.New(name, 10, 3)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := WriteArchJSON(&b, nodes); err != nil {
				t.Fatal(err)
			}
			mods, err := ParseArchJSON(&b)
			if err != nil {
				t.Fatalf("%v\n%s", err, b.String())
			}
			if want := ModulesFromNodes(nodes); !reflect.DeepEqual(mods, want) {
				t.Fatalf("round trip differs: %d modules, want %d", len(mods), len(want))
			}
			back, err := NodesFromModules(mods)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ModulesFromNodes(back), mods) {
				t.Fatal("NodesFromModules does not invert ModulesFromNodes")
			}
			spec, _, err := SpecFromModules(mods, nil, []int{3, 32, 32}, runtime.Classification, 0)
			if err != nil {
				t.Fatal(err)
			}
			blocks, bns := 0, 0
			var walk func([]runtime.LayerSpec)
			walk = func(ls []runtime.LayerSpec) {
				for _, l := range ls {
					switch l.Op {
					case runtime.OpResidual:
						blocks++
						walk(l.Body)
						walk(l.Shortcut)
					case runtime.OpBatchNorm:
						bns++
					}
				}
			}
			walk(spec.Layers)
			wantBlocks, wantBN := 8, 1+8*2+3 // ResNet-18: 8 BasicBlocks, 3 downsampling shortcuts
			if name == "resnet50" {
				wantBlocks, wantBN = 16, 1+16*3+4
			}
			if blocks != wantBlocks || bns != wantBN {
				t.Fatalf("%d residual blocks and %d BatchNorms, want %d and %d", blocks, bns, wantBlocks, wantBN)
			}
		})
	}
}

// TestArchJSONErrors checks that malformed residual architectures are errors that say where.
func TestArchJSONErrors(t *testing.T) {
	relu := `{"name": "r", "type": "ReLU"}`
	lin := `{"name": "fc", "type": "Linear", "in_features": 2, "out_features": 2}`
	cases := []struct{ name, doc, want string }{
		{"unknownBlockKey", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "skip": []}]}`, `unknown field "skip"`},
		{"emptyBody", `{"layers": [{"name": "b", "type": "Residual", "body": []}]}`, `"body" must be a non-empty`},
		{"missingBody", `{"layers": [{"name": "b", "type": "Residual"}]}`, `"body" must be a non-empty`},
		{"noName", `{"layers": [{"type": "Residual", "body": [` + relu + `]}]}`, `"name" must be a non-empty`},
		{"badLeaf", `{"layers": [{"name": "b", "type": "Residual", "body": [{"name": "x", "type": "Conv3d"}]}]}`, `layers[0].body[0]`},
		{"badLeafArg", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "shortcut": [{"name": "fc", "type": "Linear", "in_features": 2}]}]}`, `layers[0].shortcut[0]`},
		{"duplicateParametric", `{"layers": [` + lin + `, {"name": "b", "type": "Residual", "body": [` + lin + `]}]}`, `duplicate name "fc"`},
		{"duplicateBlock", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `]}, {"name": "b", "type": "Residual", "body": [` + relu + `]}]}`, `duplicate name "b"`},
		{"noLayers", `{"blocks": []}`, `unknown field "blocks"`},
		{"tooDeep", `{"layers": [` + strings.Repeat(`{"name": "b", "type": "Residual", "body": [`, 17) + relu + strings.Repeat(`]}`, 17) + `]}`, `nested deeper`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Unique block names for tooDeep.
			doc := tc.doc
			if tc.name == "tooDeep" {
				for i := 0; strings.Contains(doc, `"name": "b",`); i++ {
					doc = strings.Replace(doc, `"name": "b",`, `"name": "b`+string(rune('a'+i))+`",`, 1)
				}
			}
			_, err := ParseArchJSON(strings.NewReader(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A repeated parameter-free module (torchvision's shared ReLU) is fine.
	if _, err := ParseArchJSON(strings.NewReader(`{"layers": [` + relu + `, {"name": "b", "type": "Residual", "body": [` + relu + `]}, ` + relu + `]}`)); err != nil {
		t.Fatal(err)
	}
}

// TestMarkerErrors checks the marker structure SpecFromModules accepts.
func TestMarkerErrors(t *testing.T) {
	relu := torcharch.Module{Name: "r", Type: "ReLU"}
	begin := func(n string) torcharch.Module { return torcharch.Module{Name: n, Type: ResidualBegin} }
	sc := func(n string) torcharch.Module { return torcharch.Module{Name: n, Type: ResidualShortcut} }
	end := func(n string) torcharch.Module { return torcharch.Module{Name: n, Type: ResidualEnd} }
	cases := []struct {
		name string
		mods []torcharch.Module
	}{
		{"unclosed", []torcharch.Module{begin("a"), relu}},
		{"strayEnd", []torcharch.Module{relu, end("a")}},
		{"strayShortcut", []torcharch.Module{relu, sc("a")}},
		{"mismatched", []torcharch.Module{begin("a"), relu, end("b")}},
		{"emptyBody", []torcharch.Module{begin("a"), sc("a"), relu, end("a")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := NodesFromModules(tc.mods); err == nil {
				t.Fatal("no error")
			}
			if _, _, err := SpecFromModules(tc.mods, nil, []int{4}, runtime.Classification, 0); err == nil {
				t.Fatal("SpecFromModules: no error")
			}
		})
	}
}
