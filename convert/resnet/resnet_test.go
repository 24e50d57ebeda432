package resnet

import (
	"strings"
	"testing"
)

// TestParameterCounts: the deterministic parameter counts (conv weights, BN affine, fc) equal
// torchvision's with the CIFAR stem: published figures for ResNet-18/34/50 with a 3×3 conv1
// and 10 classes (11,173,962; 21,282,122; 23,520,842), and for 100 classes.
func TestParameterCounts(t *testing.T) {
	tests := []struct {
		name    string
		classes int
		want    int
	}{
		{"resnet18", 10, 11173962},
		{"resnet34", 10, 21282122},
		{"resnet50", 10, 23520842},
		{"resnet18", 100, 11220132},
		{"resnet50", 100, 23705252},
	}
	for _, tc := range tests {
		nodes, err := New(tc.name, tc.classes, 3)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range Modules(nodes) {
			switch m.Type {
			case "Conv2d":
				n += m.OutChannels * m.InChannels * m.KernelSize[0] * m.KernelSize[1]
			case "BatchNorm2d":
				n += 2 * m.NumFeatures
			case "Linear":
				n += m.OutFeatures*m.InFeatures + m.OutFeatures
			}
		}
		if n != tc.want {
			t.Errorf("%s/%d: %d parameters, want %d", tc.name, tc.classes, n, tc.want)
		}
	}
}

func TestNamesAndStructure(t *testing.T) {
	nodes, err := New("resnet50", 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	mods := Modules(nodes)
	byName := map[string]int{}
	convs := 0
	for i, m := range mods {
		byName[m.Name] = i
		if m.Type == "Conv2d" {
			convs++
		}
	}
	for _, n := range []string{"conv1", "bn1", "layer1.0.conv1", "layer1.0.conv3", "layer1.0.downsample.0",
		"layer1.0.downsample.1", "layer2.0.downsample.0", "layer4.2.bn3", "fc"} {
		if _, ok := byName[n]; !ok {
			t.Errorf("module %q missing", n)
		}
	}
	if _, ok := byName["layer1.1.downsample.0"]; ok {
		t.Error("layer1.1 must not have a downsample")
	}
	if convs != 53 {
		t.Errorf("%d convolutions, want 53", convs)
	}
	// Bottleneck stride sits on conv2 (torchvision v1.5).
	m := mods[byName["layer2.0.conv2"]]
	if m.Stride != [2]int{2, 2} || mods[byName["layer2.0.conv1"]].Stride != [2]int{1, 1} {
		t.Errorf("layer2.0 strides: conv1 %v conv2 %v", mods[byName["layer2.0.conv1"]].Stride, m.Stride)
	}
	fc := mods[byName["fc"]]
	if fc.InFeatures != 2048 || fc.OutFeatures != 10 || !fc.Bias {
		t.Errorf("fc = %+v", fc)
	}
	// ResNet-18 layer1 has no downsample (64 → 64, stride 1).
	n18, _ := New("resnet18", 10, 3)
	for _, m := range Modules(n18) {
		if strings.HasPrefix(m.Name, "layer1.") && strings.Contains(m.Name, "downsample") {
			t.Errorf("resnet18 has %s", m.Name)
		}
	}
}

func TestErrors(t *testing.T) {
	if _, err := New("resnet101", 10, 3); err == nil || !strings.Contains(err.Error(), "resnet101") {
		t.Errorf("unknown architecture: %v", err)
	}
	if _, err := New("resnet18", 0, 3); err == nil {
		t.Error("0 classes accepted")
	}
}
