package torchpt

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

// dict wraps key/value pickles into OrderedDict + SETITEMS + STOP.
func dict(items func(p *testutil.Pickle)) []byte {
	p := &testutil.Pickle{}
	p.Op(0x80, 2).Global("collections", "OrderedDict").Op(')', 'R', '(')
	items(p)
	p.Op('u', '.')
	return p.B
}

// archiveZip writes a torch.save-like zip: prefix/data.pkl, prefix/data/<k>.
func archiveZip(t testing.TB, pkl []byte, storages map[string][]byte, extra map[string][]byte) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	add := func(name string, b []byte) {
		f, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Store})
		if err != nil {
			t.Fatal(err)
		}
		f.Write(b)
	}
	add("archive/data.pkl", pkl)
	for k, b := range storages {
		add("archive/data/"+k, b)
	}
	for k, b := range extra {
		add(k, b)
	}
	add("archive/version", []byte("3\n"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func f32s(vs ...float64) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(float32(v)))
	}
	return b
}

// naiveView computes a strided view with explicit index arithmetic.
func naiveView(storage []float64, offset int, size, stride []int) []float64 {
	n := 1
	for _, d := range size {
		n *= d
	}
	out := make([]float64, 0, n)
	idx := make([]int, len(size))
	for k := 0; k < n; k++ {
		rem := k
		for d := len(size) - 1; d >= 0; d-- {
			idx[d] = rem % size[d]
			rem /= size[d]
		}
		pos := offset
		for d := range size {
			pos += idx[d] * stride[d]
		}
		out = append(out, storage[pos])
	}
	return out
}

func TestViews(t *testing.T) {
	storage := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	tests := []struct {
		name         string
		offset       int
		size, stride []int
	}{
		{"contiguous", 0, []int{3, 4}, []int{4, 1}},
		{"transposed", 0, []int{4, 3}, []int{1, 4}},
		{"offset slice", 2, []int{5}, []int{2}},
		{"scalar", 7, []int{}, []int{}},
		{"broadcast", 1, []int{3, 2}, []int{0, 1}},
		{"3d permuted", 1, []int{2, 2, 2}, []int{1, 6, 3}},
		{"empty", 3, []int{0, 5}, []int{5, 1}},
		{"column", 3, []int{3, 1}, []int{4, 1}},
	}
	pkl := dict(func(p *testutil.Pickle) {
		for _, tc := range tests {
			p.Str(tc.name).Tensor("FloatStorage", "0", len(storage), tc.offset, tc.size, tc.stride)
		}
	})
	data := archiveZip(t, pkl, map[string][]byte{"0": f32s(storage...)}, nil)
	got, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(tests) {
		t.Fatalf("%d tensors, want %d", len(got), len(tests))
	}
	for i, tc := range tests {
		g := got[i]
		if g.Name != tc.name || g.DType != safetensors.F32 || !reflect.DeepEqual(g.Shape, append([]int{}, tc.size...)) {
			t.Errorf("%d: %s %s %v, want %s F32 %v", i, g.Name, g.DType, g.Shape, tc.name, tc.size)
			continue
		}
		vals, err := g.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		want := naiveView(storage, tc.offset, tc.size, tc.stride)
		if len(want) == 0 {
			want = []float64{}
		}
		if !reflect.DeepEqual(vals, want) {
			t.Errorf("%s = %v, want %v", tc.name, vals, want)
		}
	}
}

func TestDTypes(t *testing.T) {
	f64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(f64, math.Float64bits(math.Pi))
	binary.LittleEndian.PutUint64(f64[8:], math.Float64bits(-1e300))
	i64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(i64, uint64(1<<40))
	binary.LittleEndian.PutUint64(i64[8:], uint64(0xffffffffffffffff))
	tests := []struct {
		class string
		dt    safetensors.DType
		raw   []byte
	}{
		{"DoubleStorage", safetensors.F64, f64},
		{"LongStorage", safetensors.I64, i64},
		{"HalfStorage", safetensors.F16, []byte{0x00, 0x3c, 0x00, 0xc0}},
		{"BFloat16Storage", safetensors.BF16, []byte{0x80, 0x3f, 0x40, 0xc0}},
		{"IntStorage", safetensors.I32, []byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}},
		{"BoolStorage", safetensors.BOOL, []byte{1, 0}},
		{"ByteStorage", safetensors.U8, []byte{200, 7}},
	}
	for _, tc := range tests {
		t.Run(tc.class, func(t *testing.T) {
			pkl := dict(func(p *testutil.Pickle) {
				p.Str("x").Tensor(tc.class, "k", 2, 0, []int{2}, []int{1})
				p.Str("y").Tensor(tc.class, "k", 2, 1, []int{}, []int{})
			})
			got, err := Parse(archiveZip(t, pkl, map[string][]byte{"k": tc.raw}, nil))
			if err != nil {
				t.Fatal(err)
			}
			es := tc.dt.Size()
			if got[0].DType != tc.dt || !bytes.Equal(got[0].Data, tc.raw) {
				t.Errorf("x = %s %x, want %s %x", got[0].DType, got[0].Data, tc.dt, tc.raw)
			}
			if !bytes.Equal(got[1].Data, tc.raw[es:]) || len(got[1].Shape) != 0 {
				t.Errorf("y = %v %x, want scalar %x", got[1].Shape, got[1].Data, tc.raw[es:])
			}
		})
	}
}

func TestParameterAndPlainDict(t *testing.T) {
	p := &testutil.Pickle{}
	p.Op(0x80, 2, '}', '(')
	p.Str("w").Global("torch._utils", "_rebuild_parameter").Op('(')
	p.Tensor("FloatStorage", "0", 2, 0, []int{2}, []int{1})
	p.Op(0x89).Global("collections", "OrderedDict").Op(')', 'R', 't', 'R')
	p.Op('u', '.')
	got, err := Parse(archiveZip(t, p.B, map[string][]byte{"0": f32s(1, 2)}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Name != "w" || !bytes.Equal(got[0].Data, f32s(1, 2)) {
		t.Errorf("got %+v", got)
	}
}

func TestErrors(t *testing.T) {
	okPkl := dict(func(p *testutil.Pickle) { p.Str("a.weight").Tensor("FloatStorage", "0", 2, 0, []int{2}, []int{1}) })
	okZip := archiveZip(t, okPkl, map[string][]byte{"0": f32s(1, 2)}, nil)
	module := &testutil.Pickle{}
	module.Op(0x80, 2).Global("torch.nn.modules.container", "Sequential").Op(')', 0x81, '}', 'b', '.')
	hugeStr := &testutil.Pickle{}
	hugeStr.Op(0x80, 2, 'X', 0xff, 0xff, 0xff, 0xf0, '.')
	tests := []struct {
		name string
		data []byte
		want []string // substrings of the error
		is   error
	}{
		{"legacy pickle", append([]byte{0x80, 0x02, 0x8a, 0x0a}, make([]byte, 20)...), []string{"legacy"}, ErrLegacyFormat},
		{"not zip", []byte("hello world"), []string{"zip"}, nil},
		{"truncated zip", okZip[:len(okZip)/2], []string{"zip"}, nil},
		{"truncated zip tail", okZip[:len(okZip)-10], []string{"zip"}, nil},
		{"whole module", archiveZip(t, module.B, nil, nil), []string{"torch.nn.modules.container.Sequential", "state_dict"}, ErrNotStateDict},
		{"other global", archiveZip(t, dict(func(p *testutil.Pickle) { p.Str("k").Global("os", "system") }), nil, nil), []string{"os.system"}, ErrNotStateDict},
		{"list", archiveZip(t, []byte{0x80, 2, ']', '.'}, nil, nil), []string{"a list"}, ErrNotStateDict},
		{"non-tensor value", archiveZip(t, dict(func(p *testutil.Pickle) { p.Str("epoch").Int(3) }), nil, nil), []string{`"epoch"`, "value 3"}, ErrNotStateDict},
		{"non-string key", archiveZip(t, dict(func(p *testutil.Pickle) { p.Int(1).Int(3) }), nil, nil), []string{"key 1"}, ErrNotStateDict},
		{"unknown storage", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("z").Tensor("ComplexFloatStorage", "0", 1, 0, []int{1}, []int{1})
		}), map[string][]byte{"0": make([]byte, 8)}, nil), []string{`"z"`, "torch.ComplexFloatStorage"}, nil},
		{"short storage", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("s").Tensor("FloatStorage", "0", 3, 0, []int{3}, []int{1})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"s"`, `storage "0"`}, nil},
		{"long storage", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("s").Tensor("FloatStorage", "0", 1, 0, []int{1}, []int{1})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"s"`, "archive/data/0"}, nil},
		{"missing storage", archiveZip(t, okPkl, nil, nil), []string{`"a.weight"`, "missing"}, nil},
		{"view out of bounds", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("v").Tensor("FloatStorage", "0", 2, 1, []int{2}, []int{1})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"v"`, "reaches element 2"}, nil},
		{"negative stride", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("v").Tensor("FloatStorage", "0", 2, 1, []int{2}, []int{-1})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"v"`, "stride"}, nil},
		{"rank mismatch", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("v").Tensor("FloatStorage", "0", 2, 0, []int{2}, []int{1, 1})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"v"`, "rank"}, nil},
		{"huge stride", archiveZip(t, dict(func(p *testutil.Pickle) {
			p.Str("v").Tensor("FloatStorage", "0", 2, 0, []int{2, 2}, []int{math.MaxInt32, math.MaxInt32})
		}), map[string][]byte{"0": f32s(1, 2)}, nil), []string{`"v"`}, nil},
		{"hostile length", archiveZip(t, hugeStr.B, nil, nil), []string{"data.pkl", "needs 4043309059 bytes"}, nil},
		{"no stop", archiveZip(t, okPkl[:len(okPkl)-1], map[string][]byte{"0": f32s(1, 2)}, nil), []string{"STOP"}, nil},
		{"bad opcode", archiveZip(t, []byte{0x80, 2, 0xff, '.'}, nil, nil), []string{"opcode 0xff"}, nil},
		{"torchscript", archiveZip(t, okPkl, map[string][]byte{"0": f32s(1, 2)}, map[string][]byte{"archive/constants.pkl": {'.'}}), []string{"TorchScript"}, nil},
		{"big endian", archiveZip(t, okPkl, map[string][]byte{"0": f32s(1, 2)}, map[string][]byte{"archive/byteorder": []byte("big")}), []string{"little-endian"}, nil},
		{"no data.pkl", func() []byte {
			var buf bytes.Buffer
			w := zip.NewWriter(&buf)
			w.Create("x/other")
			w.Close()
			return buf.Bytes()
		}(), []string{"no data.pkl"}, nil},
		{"duplicate key", archiveZip(t, func() []byte {
			p := &testutil.Pickle{}
			p.Op(0x80, 2, '}', '(').Str("a").Int(1).Str("a").Int(2).Op('u', '.')
			return p.B
		}(), nil, nil), []string{`"a"`}, ErrNotStateDict},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".pt")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := ReadFile(path)
			if err == nil {
				t.Fatal("expected an error")
			}
			msg := err.Error()
			for _, w := range append(tc.want, filepath.Base(path)) {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not mention %q", msg, w)
				}
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %q is not %v", msg, tc.is)
			}
		})
	}
}

const fixtures = "../../testdata/bayesianize"

// TestFixtures: each fixture's state_dict.pt must give the same names,
// order, dtypes and bit-identical bytes as its state_dict.safetensors. The
// only permitted difference is the rank of 0-d scalars, which the
// safetensors export stored with shape [1].
func TestFixtures(t *testing.T) {
	dirs, _ := filepath.Glob(filepath.Join(fixtures, "*", "state_dict.pt"))
	if len(dirs) != 3 {
		t.Fatalf("found %d fixtures, want 3", len(dirs))
	}
	for _, pt := range dirs {
		dir := filepath.Dir(pt)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			got, err := ReadFile(pt)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := safetensors.ReadFile(filepath.Join(dir, "state_dict.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(ref.Tensors) {
				t.Fatalf("%d tensors vs %d", len(got), len(ref.Tensors))
			}
			scalars := 0
			for i, g := range got {
				r := ref.Tensors[i]
				if g.Name != r.Name || g.DType != r.DType {
					t.Errorf("%d: %s %s vs %s %s", i, g.Name, g.DType, r.Name, r.DType)
				}
				shapeOK := reflect.DeepEqual(g.Shape, r.Shape)
				if len(g.Shape) == 0 && reflect.DeepEqual(r.Shape, []int{1}) {
					shapeOK = true
					scalars++
					if !strings.HasSuffix(g.Name, "._lamda") {
						t.Errorf("unexpected scalar %s", g.Name)
					}
				}
				if !shapeOK {
					t.Errorf("%s: shape %v vs %v", g.Name, g.Shape, r.Shape)
				}
				if !bytes.Equal(g.Data, r.Data) {
					t.Errorf("%s: data differ", g.Name)
				}
			}
			if scalars == 0 {
				t.Error("expected the 0-d _lamda scalars")
			}
		})
	}
}

// TestTruncations cuts a real fixture at many points: never a panic, and
// every cut must be refused.
func TestTruncations(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(fixtures, "mlp_ffgu", "state_dict.pt"))
	if err != nil {
		t.Fatal(err)
	}
	step := 97
	if testing.Short() {
		step = 997
	}
	for n := 0; n < len(data); n += step {
		if _, err := Parse(data[:n]); err == nil {
			t.Fatalf("truncated at %d accepted", n)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(archiveZip(f, dict(func(p *testutil.Pickle) {
		p.Str("a").Tensor("FloatStorage", "0", 2, 0, []int{2}, []int{1})
	}), map[string][]byte{"0": f32s(1, 2)}, nil))
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, err := Parse(data)
		if err != nil {
			if len(err.Error()) > 4096 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		// What is accepted stays within the file's budget.
		total := int64(0)
		for _, tn := range ts {
			total += int64(len(tn.Data))
		}
		if b := DefaultLimits.budget(len(data)); total > b {
			t.Fatalf("%d tensor bytes from a %d-byte file (budget %d)", total, len(data), b)
		}
	})
}

// FuzzPickle feeds arbitrary pickles through a valid zip wrapper.
func FuzzPickle(f *testing.F) {
	f.Add(dict(func(p *testutil.Pickle) { p.Str("a").Tensor("FloatStorage", "0", 2, 0, []int{2}, []int{1}) }))
	f.Add([]byte{0x80, 2, 'X', 0xff, 0xff, 0xff, 0xf0, '.'})
	f.Fuzz(func(t *testing.T, pkl []byte) {
		_, _ = Parse(archiveZip(t, pkl, map[string][]byte{"0": f32s(1, 2)}, nil))
	})
}
