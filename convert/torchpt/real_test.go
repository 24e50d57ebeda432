package torchpt

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// TestRealTorchViews reads testdata/views.pt, written by PyTorch 1.13
// (testdata/make_fixtures.py), and compares every tensor with the logical
// values torch itself printed to views_expected.json.
func TestRealTorchViews(t *testing.T) {
	raw, err := os.ReadFile("testdata/views_expected.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var expected map[string]struct {
		DType  string        `json:"dtype"`
		Shape  []int         `json:"shape"`
		Values []json.Number `json:"values"`
	}
	if err := dec.Decode(&expected); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile("testdata/views.pt")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(expected) {
		t.Fatalf("%d tensors, want %d", len(got), len(expected))
	}
	dtypes := map[string]safetensors.DType{
		"torch.float32": safetensors.F32, "torch.float64": safetensors.F64, "torch.float16": safetensors.F16,
		"torch.bfloat16": safetensors.BF16, "torch.int64": safetensors.I64, "torch.bool": safetensors.BOOL,
	}
	for _, g := range got {
		want, ok := expected[g.Name]
		if !ok {
			t.Errorf("unexpected key %s", g.Name)
			continue
		}
		if g.DType != dtypes[want.DType] || !reflect.DeepEqual(g.Shape, want.Shape) {
			t.Errorf("%s: %s %v, want %s %v", g.Name, g.DType, g.Shape, want.DType, want.Shape)
			continue
		}
		if g.DType == safetensors.I64 || g.DType == safetensors.BOOL {
			ints, err := g.Int64s()
			if err != nil {
				t.Fatal(err)
			}
			for i, w := range want.Values {
				wi, err := w.Int64()
				if err != nil {
					t.Fatalf("%s[%d]: %v", g.Name, i, err)
				}
				if ints[i] != wi {
					t.Errorf("%s[%d] = %d, want %d", g.Name, i, ints[i], wi)
				}
			}
			continue
		}
		vals, err := g.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		if len(vals) != len(want.Values) {
			t.Fatalf("%s: %d values, want %d", g.Name, len(vals), len(want.Values))
		}
		for i, w := range want.Values {
			wf, err := w.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if math.Float64bits(vals[i]) != math.Float64bits(wf) {
				t.Errorf("%s[%d] = %v, want %v", g.Name, i, vals[i], wf)
			}
		}
	}
}

func TestRealTorchRefusals(t *testing.T) {
	tests := []struct {
		file string
		is   error
		want string
	}{
		{"testdata/module.pt", ErrNotStateDict, "torch.nn.modules.container.Sequential"},
		{"testdata/legacy.pt", ErrLegacyFormat, "legacy.pt"},
	}
	for _, tc := range tests {
		_, err := ReadFile(tc.file)
		if !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v", tc.file, err)
		}
	}
}
