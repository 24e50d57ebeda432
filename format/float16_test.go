package format_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/edgebnn/edgebnn/format"
)

// TestFloat16s: a dense fp16 tensor read as binary16 bit patterns, uncompressed (no allocation:
// the file's bytes) and zstd-compressed (decompressed once, 2 bytes per element charged), in
// either order with Float32s, which widens the same values; other encodings, a closed file and
// a corrupted section are errors naming the tensor.
func TestFloat16s(t *testing.T) {
	const n = 4096
	vals := make([]float32, n)
	want := make([]uint16, n)
	for i := range vals {
		vals[i] = float32(i%64)/4 - 7 // compressible, exact in fp16
		want[i] = float16.Fromfloat32(vals[i]).Bits()
	}
	w := format.NewWriter()
	for _, a := range []struct {
		name string
		opt  format.AddOptions
	}{{"plain", format.AddOptions{F16: true}}, {"zstd", format.AddOptions{F16: true, Compress: true}},
		{"zstd2", format.AddOptions{F16: true, Compress: true}}, {"f32", format.AddOptions{}}} {
		rep, err := w.AddTensor(a.name, []int{n / 64, 64}, vals, a.opt)
		if err != nil {
			t.Fatal(err)
		}
		if a.opt.Compress && !rep.Compressed {
			t.Fatalf("%s was not compressed", a.name)
		}
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	f, err := format.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tensor := func(name string) *format.Tensor {
		tn, err := f.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		return tn
	}
	check16 := func(name string, wantCharge, slack int64) {
		t.Helper()
		before, _ := f.Allocated()
		got, err := tensor(name).Float16s()
		if err != nil {
			t.Fatal(err)
		}
		after, _ := f.Allocated()
		if len(got) != n {
			t.Fatalf("%s: %d values, want %d", name, len(got), n)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s[%d] = %#04x, want %#04x", name, i, got[i], want[i])
			}
		}
		if after-before < wantCharge || after-before > wantCharge+slack {
			t.Errorf("%s: Float16s charged %d bytes, want %d (+ at most %d for the decoder)", name, after-before, wantCharge, slack)
		}
		if again, _ := tensor(name).Float16s(); &again[0] != &got[0] {
			t.Errorf("%s: a second Float16s decoded again", name)
		}
	}
	check32 := func(name string) {
		t.Helper()
		got, err := tensor(name).Float32s()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(vals) {
			t.Fatalf("%s: %d values, want %d", name, len(got), len(vals))
		}
		for i := range got {
			if got[i] != vals[i] {
				t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], vals[i])
			}
		}
	}
	check16("plain", 0, 0)
	check32("plain")
	check16("zstd", 2*n, 8<<20) // and the zstd decoder
	check32("zstd")             // widened from the cached copy
	check32("zstd2")
	check16("zstd2", 2*n, 0) // narrowed from the float32 copy
	if _, err := tensor("f32").Float16s(); !errors.Is(err, format.ErrUnsupported) || !strings.Contains(err.Error(), "f32") {
		t.Errorf("Float16s of a float32 tensor: %v", err)
	}
	f.Close()
	if _, err := tensor("plain").Float16s(); !errors.Is(err, format.ErrClosed) {
		t.Errorf("Float16s after Close: %v", err)
	}

	// A flipped byte in the fp16 payload: a checksum error naming the tensor, before any value.
	var off int64
	g, _ := format.Decode(data)
	for _, s := range g.Sections() {
		if s.Name == "plain" {
			off = s.Offset
		}
	}
	bad := append([]byte(nil), data...)
	bad[off+10] ^= 0x40
	g, err = format.Decode(bad)
	if err != nil {
		t.Fatal(err)
	}
	tn, err := g.Tensor("plain")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Float16s(); !errors.Is(err, format.ErrChecksum) || !strings.Contains(err.Error(), "plain") {
		t.Errorf("Float16s of a corrupted section: %v", err)
	}
}
