package statedict

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

const fixtures = "../../testdata/bayesianize"

// TestFixturesBothFormats: every fixture's .pt and .safetensors give the
// same names (same order), dtypes, shapes and bit-identical values.
func TestFixturesBothFormats(t *testing.T) {
	for _, name := range []string{"mlp_ffgu", "cnn_ensembleu", "cnn_noisy_ffgu"} {
		t.Run(name, func(t *testing.T) {
			pt, err := Load(filepath.Join(fixtures, name, "state_dict.pt"))
			if err != nil {
				t.Fatal(err)
			}
			st, err := Load(filepath.Join(fixtures, name, "state_dict.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if err := Equal(pt, st); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(pt.SortedNames(), st.SortedNames()) {
				t.Error("sorted names differ")
			}
			for _, n := range pt.Names() {
				a, _ := pt.Get(n)
				b, _ := st.Get(n)
				if a.F32 == nil || len(a.F32) != a.Len() {
					t.Errorf("%s: F32 not set", n)
				}
				if strings.HasSuffix(n, "._lamda") {
					if !a.Scalar || b.Scalar || !reflect.DeepEqual(a.Shape, []int{1}) {
						t.Errorf("%s: scalar handling: pt %v %v, st %v %v", n, a.Scalar, a.Shape, b.Scalar, b.Shape)
					}
				}
				for i := range a.F32 {
					if math.Float32bits(a.F32[i]) != math.Float32bits(b.F32[i]) {
						t.Fatalf("%s[%d]: %v vs %v", n, i, a.F32[i], b.F32[i])
					}
				}
			}
		})
	}
}

func TestDecode(t *testing.T) {
	f, _ := safetensors.NewF32("f", []int{2}, []float32{1.5, -2})
	d, _ := safetensors.NewF64("d", []int{}, []float64{math.Pi})
	i, _ := safetensors.NewI64("i", []int{1, 2}, []int64{-3, 1 << 60})
	h := safetensors.Tensor{Name: "h", DType: safetensors.F16, Shape: []int{2}, Data: []byte{0x00, 0x3c, 0x00, 0xc0}}
	b := safetensors.Tensor{Name: "b", DType: safetensors.BOOL, Shape: []int{2}, Data: []byte{1, 0}}
	sd, err := FromTensors([]safetensors.Tensor{f, d, i, h, b}, nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		dtype string
		shape []int
		sc    bool
		f64   []float64
	}{
		{"f", "F32", []int{2}, false, []float64{1.5, -2}},
		{"d", "F64", []int{1}, true, []float64{math.Pi}},
		{"i", "I64", []int{1, 2}, false, []float64{-3, 1 << 60}},
		{"h", "F16", []int{2}, false, []float64{1, -2}},
		{"b", "BOOL", []int{2}, false, []float64{1, 0}},
	}
	if got := sd.Names(); !reflect.DeepEqual(got, []string{"f", "d", "i", "h", "b"}) {
		t.Errorf("Names = %v", got)
	}
	for _, tc := range tests {
		g, ok := sd.Get(tc.name)
		if !ok {
			t.Fatalf("missing %s", tc.name)
		}
		if g.DType != tc.dtype || !reflect.DeepEqual(g.Shape, tc.shape) || g.Scalar != tc.sc {
			t.Errorf("%s: %s %v %v", tc.name, g.DType, g.Shape, g.Scalar)
		}
		if got := g.Float64s(); !reflect.DeepEqual(got, tc.f64) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.f64)
		}
	}
	if _, err := FromTensors([]safetensors.Tensor{f, f}, nil); err == nil {
		t.Error("duplicate accepted")
	}
}

func TestEqualDetectsDifferences(t *testing.T) {
	a, _ := safetensors.NewF32("a", []int{2}, []float32{1, 2})
	a2, _ := safetensors.NewF32("a", []int{2}, []float32{1, float32(math.Nextafter32(2, 3))})
	a3, _ := safetensors.NewF32("a", []int{1, 2}, []float32{1, 2})
	b, _ := safetensors.NewF32("b", []int{2}, []float32{1, 2})
	x, _ := FromTensors([]safetensors.Tensor{a}, nil)
	for _, other := range [][]safetensors.Tensor{{a2}, {a3}, {b}, {a, b}} {
		y, _ := FromTensors(other, nil)
		if Equal(x, y) == nil {
			t.Errorf("Equal missed a difference with %v", other[0].Shape)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		file string
		data []byte
		want string
	}{
		{"legacy.pt", []byte{0x80, 2, 0x8a, 10, 0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19}, "legacy"},
		{"junk.safetensors", []byte{1, 2, 3}, "shorter"},
		{"junk.pt", []byte("PK\x03\x04garbage"), "zip"},
	}
	for _, tc := range tests {
		p := filepath.Join(dir, tc.file)
		os.WriteFile(p, tc.data, 0o644)
		_, err := Load(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.file) {
			t.Errorf("%s: err = %v", tc.file, err)
		}
	}
	if _, err := Load(filepath.Join(dir, "absent.pt")); err == nil {
		t.Error("missing file accepted")
	}
}
