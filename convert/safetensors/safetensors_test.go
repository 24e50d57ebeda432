package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// build assembles a raw safetensors file from a header string and data.
func build(header string, data []byte) []byte {
	b := make([]byte, 8, 8+len(header)+len(data))
	binary.LittleEndian.PutUint64(b, uint64(len(header)))
	b = append(b, header...)
	return append(b, data...)
}

func f32le(vs ...float32) []byte {
	b := make([]byte, 4*len(vs))
	for i, v := range vs {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

func TestParseHandMade(t *testing.T) {
	// Header deliberately lists "b" before "a" but "a" first in the data.
	hdr := `{"b":{"dtype":"I64","shape":[2],"data_offsets":[8,24]},` +
		`"__metadata__":{"k":"v"},` +
		`"a":{"dtype":"F32","shape":[2,1],"data_offsets":[0,8]}}  `
	data := append(f32le(1.5, -2), 7, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)
	f, err := Parse(build(hdr, data))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{f.Tensors[0].Name, f.Tensors[1].Name}; !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("file order = %v, want [a b]", got)
	}
	if got := f.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("Names = %v", got)
	}
	if f.Metadata["k"] != "v" || len(f.Metadata) != 1 {
		t.Errorf("metadata = %v", f.Metadata)
	}
	a, ok := f.Tensor("a")
	if !ok || !reflect.DeepEqual(a.Shape, []int{2, 1}) || a.DType != F32 {
		t.Fatalf("a = %+v", a)
	}
	fa, err := a.Float32s()
	if err != nil || !reflect.DeepEqual(fa, []float32{1.5, -2}) {
		t.Errorf("a.Float32s = %v, %v", fa, err)
	}
	b, _ := f.Tensor("b")
	ib, err := b.Int64s()
	if err != nil || !reflect.DeepEqual(ib, []int64{7, -1}) {
		t.Errorf("b.Int64s = %v, %v", ib, err)
	}
	fb, err := b.Float64s()
	if err != nil || !reflect.DeepEqual(fb, []float64{7, -1}) {
		t.Errorf("b.Float64s = %v, %v", fb, err)
	}
	if _, err := b.Float32s(); err == nil {
		t.Error("I64 → Float32s should be refused")
	}
	if _, err := a.Int64s(); err == nil {
		t.Error("F32 → Int64s should be refused")
	}
	if _, ok := f.Tensor("c"); ok {
		t.Error("Tensor(c) found")
	}
}

func TestConversions(t *testing.T) {
	tests := []struct {
		dt   DType
		raw  []byte
		want []float64
	}{
		// 0x3c00 = 1.0, 0xc000 = -2.0, 0x7bff = 65504, 0x0001 = 2^-24 in binary16.
		{F16, []byte{0x00, 0x3c, 0x00, 0xc0, 0xff, 0x7b, 0x01, 0x00}, []float64{1, -2, 65504, math.Ldexp(1, -24)}},
		// bfloat16: 0x3f80 = 1.0, 0xc040 = -3.0, 0x4049 ≈ 3.140625.
		{BF16, []byte{0x80, 0x3f, 0x40, 0xc0, 0x49, 0x40}, []float64{1, -3, 3.140625}},
		{F64, []byte{0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, []float64{1}},
		{I32, []byte{0xfe, 0xff, 0xff, 0xff, 5, 0, 0, 0}, []float64{-2, 5}},
		{I16, []byte{0xff, 0xff, 3, 0}, []float64{-1, 3}},
		{I8, []byte{0x80, 0x7f}, []float64{-128, 127}},
		{U8, []byte{0x80, 0xff}, []float64{128, 255}},
		{BOOL, []byte{0, 1}, []float64{0, 1}},
	}
	for _, tc := range tests {
		t.Run(string(tc.dt), func(t *testing.T) {
			tn := Tensor{Name: "x", DType: tc.dt, Shape: []int{len(tc.want)}, Data: tc.raw}
			got, err := tn.Float64s()
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Float64s = %v, %v; want %v", got, err, tc.want)
			}
			f32, err := tn.Float32s()
			lossless := tc.dt != F64 && tc.dt != I32
			if lossless {
				for i := range f32 {
					if float64(f32[i]) != tc.want[i] {
						t.Errorf("Float32s[%d] = %v, want %v", i, f32[i], tc.want[i])
					}
				}
			} else if err == nil {
				t.Errorf("Float32s of %s should be refused", tc.dt)
			}
			ints, err := tn.Int64s()
			if tc.dt.IsFloat() {
				if err == nil {
					t.Errorf("Int64s of %s should be refused", tc.dt)
				}
			} else {
				for i := range ints {
					if float64(ints[i]) != tc.want[i] {
						t.Errorf("Int64s[%d] = %v, want %v", i, ints[i], tc.want[i])
					}
				}
			}
		})
	}
	notBool := Tensor{Name: "flag", DType: BOOL, Shape: []int{2}, Data: []byte{1, 5}}
	if _, err := notBool.Float32s(); err == nil || !strings.Contains(err.Error(), "element 1 is byte 5, not a BOOL") {
		t.Errorf("BOOL byte 5 as float32: err = %v", err)
	}
	if _, err := notBool.Int64s(); err == nil || !strings.Contains(err.Error(), "element 1 is byte 5, not a BOOL") {
		t.Errorf("BOOL byte 5 as int64: err = %v", err)
	}
	big := Tensor{Name: "big", DType: I64, Shape: []int{1}, Data: []byte{1, 0, 0, 0, 0, 0, 0x20, 0}}
	if _, err := big.Float64s(); err == nil || !strings.Contains(err.Error(), "big") {
		t.Errorf("2^53+1 as float64: err = %v", err)
	}
	bad := Tensor{Name: "bad", DType: F32, Shape: []int{3}, Data: make([]byte, 8)}
	if _, err := bad.Float32s(); err == nil {
		t.Error("size mismatch not detected")
	}
}

func TestWriteGolden(t *testing.T) {
	x, err := NewF32("x", []int{2}, []float32{1, -2})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := Write(&buf, []Tensor{x}, map[string]string{"z": "1", "a": "<&>"}); err != nil {
		t.Fatal(err)
	}
	hdr := `{"__metadata__":{"a":"<&>","z":"1"},"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	for len(hdr)%8 != 0 {
		hdr += " "
	}
	want := build(hdr, []byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0xc0})
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("Write =\n%q\nwant\n%q", buf.Bytes(), want)
	}
}

func TestRoundTrip(t *testing.T) {
	a, _ := NewF64("w", []int{2, 3}, []float64{1, 2, 3, 4, 5, math.Inf(-1)})
	b, _ := NewI64("labels", []int{3}, []int64{0, -9, 1 << 62})
	c, _ := NewF32("scalar", []int{}, []float32{float32(math.NaN())})
	d, _ := NewF32("empty", []int{0, 4}, nil)
	e, _ := NewI32("i", []int{1}, []int32{-7})
	in := []Tensor{a, b, c, d, e}
	var buf bytes.Buffer
	if err := Write(&buf, in, map[string]string{"seed": "1"}); err != nil {
		t.Fatal(err)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != len(in) {
		t.Fatalf("%d tensors, want %d", len(f.Tensors), len(in))
	}
	for i := range in {
		g := f.Tensors[i]
		if g.Name != in[i].Name || g.DType != in[i].DType || !reflect.DeepEqual(g.Shape, in[i].Shape) || !bytes.Equal(g.Data, in[i].Data) {
			t.Errorf("tensor %d: got %s %s %v, want %s %s %v", i, g.Name, g.DType, g.Shape, in[i].Name, in[i].DType, in[i].Shape)
		}
	}
	if f.Metadata["seed"] != "1" {
		t.Errorf("metadata %v", f.Metadata)
	}
	var again bytes.Buffer
	if err := Write(&again, f.Tensors, f.Metadata); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Error("rewrite is not byte-identical")
	}
	path := filepath.Join(t.TempDir(), "x.safetensors")
	if err := WriteFile(path, in, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err != nil {
		t.Fatal(err)
	}
}

func TestWriteErrors(t *testing.T) {
	ok, _ := NewF32("x", []int{1}, []float32{1})
	tests := []struct {
		name string
		ts   []Tensor
		md   map[string]string
	}{
		{"duplicate", []Tensor{ok, ok}, nil},
		{"empty name", []Tensor{{Name: "", DType: F32, Shape: []int{1}, Data: make([]byte, 4)}}, nil},
		{"reserved name", []Tensor{{Name: MetadataKey, DType: F32, Shape: []int{1}, Data: make([]byte, 4)}}, nil},
		{"bad dtype", []Tensor{{Name: "x", DType: "F8", Shape: []int{1}, Data: make([]byte, 1)}}, nil},
		{"size mismatch", []Tensor{{Name: "x", DType: F32, Shape: []int{2}, Data: make([]byte, 4)}}, nil},
		{"negative dim", []Tensor{{Name: "x", DType: F32, Shape: []int{-1}, Data: nil}}, nil},
		{"bad utf8", []Tensor{ok}, map[string]string{"\xff": "x"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := Write(&bytes.Buffer{}, tc.ts, tc.md); err == nil {
				t.Error("expected an error")
			}
		})
	}
	if _, err := NewF32("x", []int{3}, []float32{1}); err == nil {
		t.Error("NewF32 with wrong length accepted")
	}
}

func TestParseHostile(t *testing.T) {
	huge := make([]byte, 16)
	binary.LittleEndian.PutUint64(huge, 1<<62)
	overMax := make([]byte, 16)
	binary.LittleEndian.PutUint64(overMax, MaxHeaderSize+1)
	valid := build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1))
	tests := []struct {
		name string
		file []byte
		want string // substring of the error
	}{
		{"empty", nil, "shorter"},
		{"short", []byte{1, 2, 3}, "shorter"},
		{"huge header length", huge, "exceeds limit"},
		{"header over max", overMax, "exceeds limit"},
		{"header beyond file", build(`{}`, nil)[:9], "exceeds the"},
		{"truncated data", valid[:len(valid)-1], "outside"},
		{"extra data", append(append([]byte{}, valid...), 0), "cover"},
		{"not json", build(`nope`, nil), "header"},
		{"array header", build(`[]`, nil), "not a JSON object"},
		{"trailing junk", build(`{} x`, nil), "trailing"},
		{"bad dtype", build(`{"a":{"dtype":"F8","shape":[1],"data_offsets":[0,1]}}`, []byte{0}), "unknown dtype"},
		{"missing shape", build(`{"a":{"dtype":"F32","data_offsets":[0,4]}}`, f32le(1)), "needs"},
		{"unknown field", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}}`, f32le(1)), "unknown field"},
		{"shape mismatch", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32le(1)), "needs"},
		{"negative dim", build(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}}`, f32le(1)), `"a"`},
		{"float dim", build(`{"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}}`, f32le(1)), `"a"`},
		{"shape overflow", build(`{"a":{"dtype":"F32","shape":[2147483647,2147483647,2147483647,4],"data_offsets":[0,4]}}`, f32le(1)), "overflows"},
		{"size overflow", build(`{"a":{"dtype":"F64","shape":[2147483647,2147483647,3],"data_offsets":[0,4]}}`, f32le(1)), "needs"},
		{"dim too big", build(`{"a":{"dtype":"U8","shape":[4294967296],"data_offsets":[0,4]}}`, f32le(1)), "too large"},
		{"three offsets", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4,8]}}`, f32le(1)), "want 2"},
		{"reversed offsets", build(`{"a":{"dtype":"F32","shape":[0],"data_offsets":[4,0]}}`, f32le(1)), "outside"},
		{"offset past end", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1)), "outside"},
		{"overlap", build(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1, 2)), "overlap"},
		{"same range", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)), "overlap"},
		{"gap", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1, 2)), "gap"},
		{"duplicate key", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)), "duplicate"},
		{"metadata not strings", build(`{"__metadata__":{"a":1}}`, nil), "__metadata__"},
		{"entry not object", build(`{"a":3}`, nil), `"a"`},
		// A shape of 300,000 zero dimensions (a valid empty tensor) would
		// make the reader allocate far more than the header's size.
		{"huge rank", build(`{"a":{"dtype":"F32","shape":[`+strings.Repeat("0,", 300000)+`0],"data_offsets":[0,0]}}`, nil), "more than 64 values"},
		{"long offsets", build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[`+strings.Repeat("0,", 300000)+`4]}}`, f32le(1)), "data_offsets"},
		{"long key", build(`{"`+strings.Repeat("k", 1<<20)+`":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}`, f32le(1)), "… (1048576 bytes)"},
		{"long dtype", build(`{"a":{"dtype":"`+strings.Repeat("k", 1<<20)+`","shape":[1],"data_offsets":[0,4]}}`, f32le(1)), "… (1048576 bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.file)
			if err == nil {
				t.Fatal("expected an error")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %.300q does not mention %q", err, tc.want)
			}
			if len(err.Error()) > 1024 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
			if _, err := Read(bytes.NewReader(tc.file)); err == nil {
				t.Error("Read accepted what Parse refused")
			}
		})
	}
}

func TestEmptyFile(t *testing.T) {
	f, err := Parse(build(`{}      `, nil))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 0 || f.Metadata == nil {
		t.Errorf("got %+v", f)
	}
}

func TestReadFileErrorNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "broken.safetensors")
	if err := os.WriteFile(path, []byte{1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(path)
	if err == nil || !strings.Contains(err.Error(), "broken.safetensors") {
		t.Errorf("err = %v", err)
	}
}

// TestFixtures checks the bayesianize fixtures against facts known
// independently of this code: the tensor layout bayesianize's
// InducingLinear/InducingConv2d produce and the reference contents listed
// in testdata/bayesianize/README.md.
func TestFixtures(t *testing.T) {
	root := filepath.Join("..", "..", "testdata", "bayesianize")
	tests := []struct {
		dir    string
		shapes map[string][]int
	}{
		{"mlp_ffgu", map[string][]int{
			"1.z_row": {16, 128}, "1.z_col": {24, 785}, "1.inducing_mean": {16, 24},
			"1._inducing_sd": {16, 24}, "1._lamda": {1}, "1._d_row": {16}, "1._d_col": {24},
			"3.z_row": {16, 10}, "3.z_col": {24, 129},
		}},
		{"cnn_ensembleu", map[string][]int{"0.z_row": {8, 8}, "0.z_col": {12, 10}, "7.z_col": {32, 577}}},
		{"cnn_noisy_ffgu", map[string][]int{"3.z_row": {8, 16}, "3.z_col": {12, 73}}},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			f, err := ReadFile(filepath.Join(root, tc.dir, "state_dict.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			for name, shape := range tc.shapes {
				tn, ok := f.Tensor(name)
				if !ok {
					t.Errorf("missing %s", name)
					continue
				}
				if !reflect.DeepEqual(tn.Shape, shape) || tn.DType != F32 {
					t.Errorf("%s: %s %v, want F32 %v", name, tn.DType, tn.Shape, shape)
				}
			}
			for i := 1; i < len(f.Tensors); i++ {
				if &f.Tensors[i-1].Data[0] == &f.Tensors[i].Data[0] {
					t.Errorf("tensors %d and %d share data", i-1, i)
				}
			}
			ref, err := ReadFile(filepath.Join(root, tc.dir, "reference.safetensors"))
			if err != nil {
				t.Fatal(err)
			}
			if ref.Metadata["samples"] != "4096" {
				t.Errorf("metadata samples = %q", ref.Metadata["samples"])
			}
			lt, _ := ref.Tensor("labels")
			labels, err := lt.Int64s()
			if err != nil || len(labels) != 256 {
				t.Fatalf("labels: %v (%d)", err, len(labels))
			}
			for i, l := range labels {
				if l < 0 || l > 9 {
					t.Fatalf("label %d = %d", i, l)
				}
			}
			pt, _ := ref.Tensor("probs_mean")
			probs, err := pt.Float64s()
			if err != nil || pt.DType != F64 || !reflect.DeepEqual(pt.Shape, []int{256, 10}) {
				t.Fatalf("probs_mean: %v %s %v", err, pt.DType, pt.Shape)
			}
			for r := 0; r < 256; r++ {
				s := 0.0
				for _, p := range probs[10*r : 10*r+10] {
					s += p
				}
				if !(math.Abs(s-1) <= 1e-9) {
					t.Fatalf("probs_mean row %d sums to %v", r, s)
				}
			}
			in, _ := ref.Tensor("inputs")
			px, err := in.Float32s()
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range px {
				if !(v >= 0) || !(v <= 1) {
					t.Fatalf("input %d = %v outside [0,1]", i, v)
				}
			}
		})
	}
}

// TestLimits: each Limits field refuses what the defaults accept.
func TestLimits(t *testing.T) {
	two := build(`{"a":{"dtype":"F32","shape":[1,1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1, 2))
	if _, err := Parse(two); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		lim  Limits
		want string
	}{
		{"header", Limits{MaxHeaderBytes: 16}, "exceeds limit 16"},
		{"rank", Limits{MaxRank: 1}, "more than 1 values"},
		{"tensors", Limits{MaxTensors: 1}, "more than 1 tensors"},
		{"file", Limits{MaxFileBytes: 20}, "20-byte limit"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLimits(bytes.NewReader(two), tc.lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.name != "file" {
				if _, err := ParseLimits(two, tc.lim); err == nil {
					t.Fatal("ParseLimits accepted")
				}
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	f.Add(build(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, f32le(1)))
	f.Add(build(`{"__metadata__":{"k":"v"},"b":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, []byte{1, 2, 3, 4}))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		// ReadHeader (predict's streaming reader) accepts exactly the files Parse accepts, with
		// the same tensors at the same places.
		h, herr := ReadHeader(bytes.NewReader(data), int64(len(data)), Limits{})
		if (err == nil) != (herr == nil) {
			t.Fatalf("Parse: %v; ReadHeader: %v", err, herr)
		}
		if err != nil {
			return
		}
		if len(h.Tensors) != len(file.Tensors) {
			t.Fatalf("ReadHeader: %d tensors, Parse %d", len(h.Tensors), len(file.Tensors))
		}
		for i, ti := range h.Tensors {
			tn := file.Tensors[i]
			if ti.Name != tn.Name || ti.DType != tn.DType || !slices.Equal(ti.Shape, tn.Shape) || int(ti.End-ti.Begin) != len(tn.Data) ||
				(len(tn.Data) > 0 && &data[h.DataOffset+ti.Begin] != &tn.Data[0]) {
				t.Fatalf("tensor %d: ReadHeader %+v, Parse %s %v %v (%d bytes)", i, ti, tn.Name, tn.DType, tn.Shape, len(tn.Data))
			}
		}
		for i := range file.Tensors {
			tn := &file.Tensors[i]
			_, _ = tn.Float32s()
			_, _ = tn.Float64s()
			_, _ = tn.Int64s()
		}
		var buf bytes.Buffer
		if err := Write(&buf, file.Tensors, file.Metadata); err != nil {
			// Parse accepts escape sequences Write refuses (invalid UTF-8).
			return
		}
		again, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatalf("re-parse of written file: %v", err)
		}
		if len(again.Tensors) != len(file.Tensors) {
			t.Fatalf("round trip lost tensors")
		}
	})
}
