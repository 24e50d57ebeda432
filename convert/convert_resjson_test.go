package convert

import (
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// exampleResidualArch is the residual JSON architecture shipped with the benchmarks.
const exampleResidualArch = "../bench/configs/fmnist_resnet_arch.json"

// TestLoadArchResidualJSON: --arch reads the residual JSON file as a tree; the spec needs an
// input shape (the network ends in adaptive pooling) and says so; with one it validates.
func TestLoadArchResidualJSON(t *testing.T) {
	nodes, builtin, err := ParseArch(exampleResidualArch, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	if builtin || len(nodes) != 10 || nodes[3].Name != "layer1.0" || len(nodes[3].Body) != 5 || len(nodes[3].Shortcut) != 2 {
		t.Fatalf("builtin %v, %d top-level nodes (node 3: %q, %d body, %d shortcut)", builtin, len(nodes),
			nodes[3].Name, len(nodes[3].Body), len(nodes[3].Shortcut))
	}
	_, err = specFor(exampleResidualArch, nil, 0, nil, nil)
	for _, want := range []string{`AdaptiveAvgPool2d "avgpool"`, `layer "fc"`, `--input-shape 1,H,W`, `layer "conv1"`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("spec without input shape: error %v, want one containing %s", err, want)
		}
	}
	spec, err := specFor(exampleResidualArch, nil, 10, []int{1, 28, 28}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := spec.Layers[5]; l.Op != runtime.OpResidual || l.Name != "layer2.0" || len(l.Body) != 5 || len(l.Shortcut) != 2 {
		t.Fatalf("layer 5 = %s %q", l.Op, l.Name)
	}
	if _, err := specFor(exampleResidualArch, nil, 7, []int{1, 28, 28}, nil); err == nil || !strings.Contains(err.Error(), "10 outputs") {
		t.Fatalf("--classes 7 for a 10-way fc: error %v", err)
	}
}

// TestInferInputShapeResidual: input shapes of residual networks, with the expected sizes
// worked out by hand from PyTorch's output-size formula ⌊(H + 2p − k)/s⌋ + 1.
func TestInferInputShapeResidual(t *testing.T) {
	conv := func(name string, in, out, k, s, p int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpConv2d, In: in, Out: out, Kernel: [2]int{k, k},
			Stride: [2]int{s, s}, Padding: [2]int{p, p}}
	}
	res := func(name string, body, sc []runtime.LayerSpec) runtime.LayerSpec {
		return runtime.LayerSpec{Name: name, Op: runtime.OpResidual, Body: body, Shortcut: sc}
	}
	lin := func(in int) runtime.LayerSpec {
		return runtime.LayerSpec{Name: "fc", Op: runtime.OpLinear, In: in, Out: 10}
	}
	flat := runtime.LayerSpec{Name: "flatten", Op: runtime.OpFlatten}
	relu := runtime.LayerSpec{Name: "relu", Op: runtime.OpReLU}
	pool := runtime.LayerSpec{Name: "gap", Op: runtime.OpAdaptiveAvgPool2d, OutputSize: [2]int{1, 1}}
	bn := runtime.LayerSpec{Name: "bn0", Op: runtime.OpBatchNorm, In: 1}
	cases := []struct {
		name   string
		layers []runtime.LayerSpec
		want   []int
		errHas []string
	}{
		// H → H (3×3, p1) → ⌊(H−1)/2⌋+1 in both branches; 8·o² = 392 ⇒ o = 7 ⇒ H ∈ {13, 14}: 13.
		{"downsample", []runtime.LayerSpec{conv("conv1", 1, 4, 3, 1, 1), relu,
			res("b", []runtime.LayerSpec{conv("b.conv", 4, 8, 3, 2, 1), relu}, []runtime.LayerSpec{conv("b.down", 4, 8, 1, 2, 0)}),
			flat, lin(392)}, []int{1, 13, 13}, nil},
		// First conv inside the first block; identity shortcut; 3·H² = 75 ⇒ H = 5.
		{"blockFirst", []runtime.LayerSpec{res("b", []runtime.LayerSpec{conv("b.conv", 3, 3, 3, 1, 1)}, nil), flat, lin(75)},
			[]int{3, 5, 5}, nil},
		// Two stride-2 blocks in sequence: 16·o² = 64 ⇒ o = 2 ⇒ ⌊(H'−1)/2⌋ = 1 ⇒ H' ∈ {3, 4} ⇒ H ∈ {5..8}: 5.
		{"twoBlocks", []runtime.LayerSpec{conv("conv1", 2, 4, 3, 1, 1),
			res("b1", []runtime.LayerSpec{conv("b1.conv", 4, 8, 3, 2, 1)}, []runtime.LayerSpec{conv("b1.down", 4, 8, 1, 2, 0)}),
			res("b2", []runtime.LayerSpec{conv("b2.conv", 8, 16, 3, 2, 1)}, []runtime.LayerSpec{conv("b2.down", 8, 16, 1, 2, 0)}),
			flat, lin(64)}, []int{2, 5, 5}, nil},
		{"linearFirst", []runtime.LayerSpec{res("b", []runtime.LayerSpec{lin(12)}, nil)}, []int{12}, nil},
		// The identity shortcut keeps 4 channels, the body makes 8: no input fits.
		{"branchesDisagree", []runtime.LayerSpec{conv("conv1", 1, 4, 3, 1, 1),
			res("b", []runtime.LayerSpec{conv("b.conv", 4, 8, 3, 1, 1)}, nil), flat, lin(8 * 49)},
			nil, []string{`no square input of 1 channels gives layer "fc" its 392 in_features`}},
		{"adaptivePool", []runtime.LayerSpec{conv("conv1", 2, 4, 3, 1, 1),
			res("b", []runtime.LayerSpec{conv("b.conv", 4, 4, 3, 1, 1), pool}, []runtime.LayerSpec{pool}), flat, lin(4)},
			nil, []string{`AdaptiveAvgPool2d "gap"`, `--input-shape 2,H,W`, `in_channels of layer "conv1"`}},
		{"batchNormFirst", []runtime.LayerSpec{bn, conv("conv1", 1, 4, 3, 1, 1), flat, lin(4)},
			nil, []string{`layer "bn0"`, "give the input shape"}},
		{"noLinear", []runtime.LayerSpec{conv("conv1", 3, 4, 3, 1, 1), res("b", []runtime.LayerSpec{relu}, nil)},
			nil, []string{`--input-shape 3,H,W`}},
		{"nothing", []runtime.LayerSpec{relu, flat}, nil, []string{"no Linear or Conv2d"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inferInputShape(tc.layers)
			if tc.errHas != nil {
				for _, w := range tc.errHas {
					if err == nil || !strings.Contains(err.Error(), w) {
						t.Fatalf("error %v, want one containing %s", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("input shape %v, want %v", got, tc.want)
			}
		})
	}
}
