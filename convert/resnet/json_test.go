package resnet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/torcharch"
)

// exampleArch is the residual JSON architecture shipped with the benchmarks.
const exampleArch = "../../bench/configs/fmnist_resnet_arch.json"

// shape summarises a tree as names and nesting, e.g. "conv1 layer1.0{a b|c}".
func shape(nodes []Node) string {
	var parts []string
	for _, n := range nodes {
		if n.Module != nil {
			parts = append(parts, n.Module.Name)
			continue
		}
		s := n.Name + "{" + shape(n.Body)
		if len(n.Shortcut) > 0 {
			s += "|" + shape(n.Shortcut)
		}
		parts = append(parts, s+"}")
	}
	return strings.Join(parts, " ")
}

// TestJSONRoundTrip: JSON → tree → JSON → tree gives the same tree (and the same bytes the
// second time) for the example file and for New's ResNet-18 and ResNet-50; the example file's
// structure is the one written in it.
func TestJSONRoundTrip(t *testing.T) {
	load := func(name string) ([]Node, error) {
		if name == "example" {
			return ParseJSONFile(exampleArch)
		}
		return New(name, 10, 3)
	}
	for _, tc := range []struct {
		name          string
		leaves, block int
	}{
		{"example", 22, 2},
		{"resnet18", 4 + 8*5 + 3*2 + 8 + 3, 8},
		{"resnet50", 4 + 16*8 + 4*2 + 16 + 3, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := load(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			leaves, blocks := 0, 0
			var walk func([]Node)
			walk = func(ns []Node) {
				for _, n := range ns {
					if n.Module != nil {
						leaves++
						continue
					}
					blocks++
					walk(n.Body)
					walk(n.Shortcut)
				}
			}
			walk(nodes)
			if leaves != tc.leaves || blocks != tc.block {
				t.Fatalf("%d leaves and %d blocks, want %d and %d", leaves, blocks, tc.leaves, tc.block)
			}
			var b bytes.Buffer
			if err := WriteJSON(&b, nodes); err != nil {
				t.Fatal(err)
			}
			first := b.String()
			back, err := ParseJSON(&b)
			if err != nil {
				t.Fatalf("%v\n%s", err, first)
			}
			if !reflect.DeepEqual(back, nodes) {
				t.Fatalf("round trip differs:\n%s\nwant\n%s", shape(back), shape(nodes))
			}
			var b2 bytes.Buffer
			if err := WriteJSON(&b2, back); err != nil {
				t.Fatal(err)
			}
			if b2.String() != first {
				t.Fatal("writing the read-back tree gives different JSON")
			}
		})
	}
	nodes, err := ParseJSONFile(exampleArch)
	if err != nil {
		t.Fatal(err)
	}
	want := "conv1 bn1 relu " +
		"layer1.0{layer1.0.conv1 layer1.0.bn1 layer1.0.relu layer1.0.conv2 layer1.0.bn2|layer1.0.downsample.0 layer1.0.downsample.1} layer1.0.relu " +
		"layer2.0{layer2.0.conv1 layer2.0.bn1 layer2.0.relu layer2.0.conv2 layer2.0.bn2|layer2.0.downsample.0 layer2.0.downsample.1} layer2.0.relu " +
		"avgpool flatten fc"
	if got := shape(nodes); got != want {
		t.Fatalf("example structure\n%s\nwant\n%s", got, want)
	}
	// Spot-check leaf arguments against the file, including torcharch's defaults.
	ds := nodes[3].Shortcut[0].Module
	if ds.Type != "Conv2d" || ds.InChannels != 16 || ds.OutChannels != 16 || ds.KernelSize != [2]int{1, 1} ||
		ds.Stride != [2]int{2, 2} || ds.Padding != [2]int{} || ds.Bias || ds.Groups != 1 {
		t.Fatalf("layer1.0.downsample.0 = %+v", *ds)
	}
	if bn := nodes[1].Module; bn.NumFeatures != 16 || bn.Eps != 1e-5 || bn.Momentum == nil || *bn.Momentum != 0.1 || !bn.Affine {
		t.Fatalf("bn1 = %+v", *bn)
	}
	if fc := nodes[len(nodes)-1].Module; fc.InFeatures != 32 || fc.OutFeatures != 10 || !fc.Bias {
		t.Fatalf("fc = %+v", *fc)
	}
}

// TestJSONFlatIsTorcharch: a document without residual blocks reads exactly as
// torcharch.ParseJSON reads it, and a tree of leaves is written exactly as torcharch.WriteJSON
// writes the modules.
func TestJSONFlatIsTorcharch(t *testing.T) {
	doc := `{"layers": [
  {"name": "0", "type": "InducingConv2d", "in_channels": 1, "out_channels": 8, "kernel_size": [3, 3], "padding": 1, "inducing_cols": 3, "inducing_rows": 2},
  {"name": "1", "type": "BatchNorm2d", "num_features": 8, "eps": 0.001, "momentum": 0.2},
  {"name": "2", "type": "ReLU"},
  {"name": "3", "type": "AdaptiveAvgPool2d", "output_size": [2, 2]},
  {"name": "4", "type": "Flatten"},
  {"name": "5", "type": "Linear", "in_features": 32, "out_features": 10}]}`
	nodes, err := ParseJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	mods, err := torcharch.ParseJSON(strings.NewReader(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes) != len(mods) {
		t.Fatalf("%d nodes, want %d", len(nodes), len(mods))
	}
	for i := range mods {
		if nodes[i].Module == nil || !reflect.DeepEqual(*nodes[i].Module, mods[i]) {
			t.Fatalf("node %d = %+v, want leaf %+v", i, nodes[i], mods[i])
		}
	}
	var a, b bytes.Buffer
	if err := WriteJSON(&a, nodes); err != nil {
		t.Fatal(err)
	}
	if err := torcharch.WriteJSON(&b, mods); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("WriteJSON\n%s\ntorcharch.WriteJSON\n%s", a.String(), b.String())
	}
	// Flat documents keep torcharch's rules, e.g. no repeated names at all.
	if _, err := ParseJSON(strings.NewReader(`{"layers": [{"name": "r", "type": "ReLU"}, {"name": "r", "type": "ReLU"}]}`)); err == nil {
		t.Fatal("flat document with a repeated name: no error")
	}
}

// TestJSONErrors: malformed residual architectures are errors that name the layer's path.
func TestJSONErrors(t *testing.T) {
	relu := `{"name": "r", "type": "ReLU"}`
	lin := `{"name": "fc", "type": "Linear", "in_features": 2, "out_features": 2}`
	block := func(name, body string) string {
		return `{"name": "` + name + `", "type": "Residual", "body": [` + body + `]}`
	}
	cases := []struct{ name, doc, want string }{
		{"unknownBlockKey", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "skip": []}]}`, `layers[0]: residual block "b": json: unknown field "skip"`},
		{"emptyBody", `{"layers": [{"name": "b", "type": "Residual", "body": []}]}`, `layers[0]: residual block "b": "body" must be a non-empty`},
		{"missingBody", `{"layers": [` + relu + `, {"name": "b", "type": "Residual"}]}`, `layers[1]: residual block "b": "body" must be a non-empty`},
		{"noName", `{"layers": [{"type": "Residual", "body": [` + relu + `]}]}`, `layers[0]: residual block: field "name" must be a non-empty`},
		{"badLeaf", `{"layers": [{"name": "b", "type": "Residual", "body": [{"name": "x", "type": "Conv3d"}]}]}`, `layers[0].body[0]: layer "x": unknown module type "Conv3d"`},
		{"badLeafArg", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "shortcut": [{"name": "fc", "type": "Linear", "in_features": 2}]}]}`, `layers[0].shortcut[0]: layer "fc"`},
		{"nestedPath", `{"layers": [` + relu + `, ` + block("outer", relu+`, `+block("inner", `{"name": "c", "type": "Conv2d"}`)) + `]}`, `layers[1].body[1].body[0]: layer "c"`},
		{"duplicateParametric", `{"layers": [` + lin + `, {"name": "b", "type": "Residual", "body": [` + lin + `]}]}`, `layers[1].body[0]: duplicate name "fc"`},
		{"duplicateBlock", `{"layers": [` + block("b", relu) + `, ` + block("b", relu) + `]}`, `layers[1]: duplicate name "b"`},
		{"leafNamedLikeBlock", `{"layers": [` + block("b", relu) + `, {"name": "b", "type": "ReLU"}]}`, `layers[1]: duplicate name "b"`},
		{"noLayers", `{"blocks": []}`, `unknown field "blocks"`},
		{"missingLayers", `{}`, `missing "layers"`},
		{"trailing", `{"layers": [` + block("b", relu) + `]} {}`, `trailing data`},
		{"notJSON", `{"layers": [`, `unexpected EOF`},
		{"tooDeep", `{"layers": [` + strings.Repeat(`{"name": "b", "type": "Residual", "body": [`, MaxNesting+1) + relu + strings.Repeat(`]}`, MaxNesting+1) + `]}`, `nested deeper than 16`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			doc := tc.doc
			if tc.name == "tooDeep" { // unique block names
				for i := 0; strings.Contains(doc, `"name": "b",`); i++ {
					doc = strings.Replace(doc, `"name": "b",`, `"name": "b`+string(rune('A'+i))+`",`, 1)
				}
			}
			_, err := ParseJSON(strings.NewReader(doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	// A repeated parameter-free module (torchvision's shared ReLU) is fine.
	if _, err := ParseJSON(strings.NewReader(`{"layers": [` + relu + `, ` + block("b", relu) + `, ` + relu + `]}`)); err != nil {
		t.Fatal(err)
	}
	// WriteJSON refuses a block it could not read back, naming its path.
	bad := []Node{{Module: &torcharch.Module{Name: "r", Type: "ReLU"}}, {Name: "b", Body: []Node{{Name: "inner"}}}}
	if err := WriteJSON(new(bytes.Buffer), bad); err == nil || !strings.Contains(err.Error(), "layers[1].body[0]") {
		t.Fatalf("WriteJSON of an empty block: error %v, want one naming layers[1].body[0]", err)
	}
}

// TestParseJSONFileErrors: errors name the file.
func TestParseJSONFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.json")
	if _, err := ParseJSONFile(missing); err == nil || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing file: error %v, want one naming %s", err, missing)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"layers": [{"name": "b", "type": "Residual", "body": [{"name": "x", "type": "Conv3d"}]}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ParseJSONFile(bad)
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "layers[0].body[0]") {
		t.Fatalf("bad file: error %v, want one naming %s and layers[0].body[0]", err, bad)
	}
}

// TestParseJSONNodeCount: a JSON architecture has at most torcharch.MaxModules layers and blocks,
// residual blocks' bodies and shortcuts included; more is refused naming where the count ran
// out (a 16 MB file of 500 000 layers allocated 742 MB before the runtime refused it).
func TestParseJSONNodeCount(t *testing.T) {
	relu := func(i int) string { return fmt.Sprintf(`{"name": "r%d", "type": "ReLU"}`, i) }
	list := func(from, n int) string {
		s := make([]string, n)
		for i := range s {
			s[i] = relu(from + i)
		}
		return strings.Join(s, ", ")
	}
	half := torcharch.MaxModules / 2
	// One block (a node) with half the budget in its body, and the rest at the top level.
	at := `{"layers": [{"name": "b", "type": "Residual", "body": [` + list(0, half) + `]}, ` + list(half, torcharch.MaxModules-half-1) + `]}`
	if _, err := ParseJSON(strings.NewReader(at)); err != nil {
		t.Fatalf("%d nodes: %v", torcharch.MaxModules, err)
	}
	over := `{"layers": [{"name": "b", "type": "Residual", "body": [` + list(0, half) + `]}, ` + list(half, torcharch.MaxModules-half) + `]}`
	if _, err := ParseJSON(strings.NewReader(over)); err == nil || !strings.Contains(err.Error(), "more than 16384 layers and blocks") {
		t.Errorf("%d nodes: %v", torcharch.MaxModules+1, err)
	}
	flat := `{"layers": [` + list(0, torcharch.MaxModules+1) + `]}`
	if _, err := ParseJSON(strings.NewReader(flat)); err == nil || !strings.Contains(err.Error(), "16385 layers, more than 16384") {
		t.Errorf("%d top-level layers: %v", torcharch.MaxModules+1, err)
	}
}
