package format

import (
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naiveRawSize is docs/FORMAT.md §5's table, written out independently.
func naiveRawSize(enc Encoding, shape []int, nnz int) int {
	n, rows := 1, 1
	for i, d := range shape {
		n *= d
		if i < len(shape)-1 {
			rows *= d
		}
	}
	switch enc {
	case F32:
		return 4 * n
	case F16:
		return 2 * n
	case SparseBitmapF32, SparseBitmapF16:
		vs := 4
		if enc == SparseBitmapF16 {
			vs = 2
		}
		b := (n + 7) / 8
		for b%4 != 0 {
			b++
		}
		return b + vs*nnz
	case CSRF32:
		return 4*(rows+1) + 8*nnz
	case CSRF16:
		return 4*(rows+1) + 6*nnz
	}
	return -1
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := [][]int{nil, {0}, {1}, {1, 1}, {3, 0}, {0, 3}, {7}, {5, 13}, {2, 3, 4}, {1, 1, 1, 1, 1, 1, 1, 1}, {64, 33}}
	densities := []float64{0, 0.03, 0.5, 1}
	opts := []AddOptions{}
	for _, f16 := range []bool{false, true} {
		for _, sp := range []bool{false, true} {
			for _, c := range []bool{false, true} {
				opts = append(opts, AddOptions{F16: f16, Sparse: sp, Compress: c})
			}
		}
	}
	type want struct {
		name  string
		shape []int
		data  []float32
		opt   AddOptions
	}
	var wants []want
	w := NewWriter()
	seen := map[Encoding]bool{}
	for si, shape := range shapes {
		n := 1
		for _, d := range shape {
			n *= d
		}
		for di, dens := range densities {
			for oi, o := range opts {
				data := randTensor(rng, n, dens)
				if n > 2 && dens > 0 {
					data[1] = float32(math.Copysign(0, -1)) // -0 must survive sparse encodings
					data[2] = float32(math.NaN())
				}
				name := string(rune('a'+si)) + "." + string(rune('a'+di)) + "." + string(rune('a'+oi))
				rep, err := w.AddTensor(name, shape, data, o)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				seen[rep.Encoding] = true
				// Independent check of the encoding choice.
				nnz := 0
				for _, x := range data {
					v := x
					if o.F16 {
						v = refF16(x)
					}
					if math.Float32bits(v) != 0 {
						nnz++
					}
				}
				if rep.NonZeros != int64(nnz) {
					t.Errorf("%s: NonZeros = %d, want %d", name, rep.NonZeros, nnz)
				}
				if rep.RawBytes != int64(naiveRawSize(rep.Encoding, shape, nnz)) {
					t.Errorf("%s: RawBytes = %d, want %d for %v", name, rep.RawBytes, naiveRawSize(rep.Encoding, shape, nnz), rep.Encoding)
				}
				if o.Sparse {
					cands := []Encoding{F32, SparseBitmapF32, CSRF32}
					if o.F16 {
						cands = []Encoding{F16, SparseBitmapF16, CSRF16}
					}
					best := cands[0]
					for _, c := range cands[1:] {
						if naiveRawSize(c, shape, nnz) < naiveRawSize(best, shape, nnz) {
							best = c
						}
					}
					if rep.Encoding != best {
						t.Errorf("%s: encoding %v, want smallest %v", name, rep.Encoding, best)
					}
				} else if rep.Encoding != F32 && rep.Encoding != F16 {
					t.Errorf("%s: dense requested, got %v", name, rep.Encoding)
				}
				if rep.Compressed && rep.StoredBytes >= rep.RawBytes {
					t.Errorf("%s: compressed to %d >= raw %d", name, rep.StoredBytes, rep.RawBytes)
				}
				wants = append(wants, want{name, shape, data, o})
			}
		}
	}
	for _, e := range []Encoding{F32, F16, SparseBitmapF32, SparseBitmapF16, CSRF32, CSRF16} {
		if !seen[e] {
			t.Errorf("round trip never exercised %v", e)
		}
	}
	blob := []byte("hello, blob")
	if err := w.AddBlob("meta", blob, true); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob("empty", nil, true); err != nil {
		t.Fatal(err)
	}
	data := encode(t, w)
	for _, zc := range []bool{true, false} {
		f, err := DecodeWith(data, ReadOptions{noZeroCopy: !zc, AllocLimit: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Verify(); err != nil {
			t.Fatal(err)
		}
		if got := f.Tensors(); len(got) != len(wants) || got[0] != wants[0].name || got[len(got)-1] != wants[len(wants)-1].name {
			t.Fatalf("Tensors() order/length wrong: %d names", len(got))
		}
		for _, wt := range wants {
			tn, err := f.Tensor(wt.name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tn.Float32s()
			if err != nil {
				t.Fatalf("%s: %v", wt.name, err)
			}
			if !slices.Equal(tn.Shape(), wt.shape) && !(len(wt.shape) == 0 && len(tn.Shape()) == 0) {
				t.Errorf("%s: shape %v, want %v", wt.name, tn.Shape(), wt.shape)
			}
			if tn.NumElements() != len(wt.data) || len(got) != len(wt.data) {
				t.Fatalf("%s: %d elements, want %d", wt.name, len(got), len(wt.data))
			}
			for i, x := range wt.data {
				exp := x
				if wt.opt.F16 {
					exp = refF16(x)
				}
				// bit-exact, except that NaN payloads may change in f16
				if math.Float32bits(got[i]) != math.Float32bits(exp) && !(math.IsNaN(float64(exp)) && math.IsNaN(float64(got[i]))) {
					t.Fatalf("%s[%d] = %g (%#x), want %g (%#x)", wt.name, i, got[i], math.Float32bits(got[i]), exp, math.Float32bits(exp))
				}
			}
		}
		b, err := f.Blob("meta")
		if err != nil || string(b) != string(blob) {
			t.Fatalf("Blob(meta) = %q, %v", b, err)
		}
		if b, err := f.Blob("empty"); err != nil || len(b) != 0 {
			t.Fatalf("Blob(empty) = %q, %v", b, err)
		}
		for _, s := range f.Sections() {
			if s.Offset%64 != 0 {
				t.Errorf("section %q at offset %d, not 64-aligned", s.Name, s.Offset)
			}
		}
		if f.Size()%64 != 0 {
			t.Errorf("file size %d not a multiple of 64", f.Size())
		}
	}
}

func TestEncodingChoice(t *testing.T) {
	vec := make([]float32, 1000)
	for i := 0; i < 10; i++ {
		vec[i*97] = 1
	}
	half := make([]float32, 10000)
	for i := 0; i < 10000; i += 2 {
		half[i] = 3
	}
	onePct := make([]float32, 10000)
	for i := 0; i < 100; i++ {
		onePct[i*100] = -2
	}
	full := make([]float32, 64)
	for i := range full {
		full[i] = 1
	}
	cases := []struct {
		name  string
		shape []int
		data  []float32
		f16   bool
		want  Encoding
		raw   int64
	}{
		// rank 1: bitmap 128+40 = 168 vs CSR 8+80 = 88 vs dense 4000
		{"vec1pct", []int{1000}, vec, false, CSRF32, 88},
		// 100x100 at 1%: bitmap 1252+400 = 1652, CSR 404+800 = 1204
		{"mat1pct", []int{100, 100}, onePct, false, CSRF32, 1204},
		// 50%: bitmap 1252+20000 = 21252 < dense 40000 < CSR 404+40000
		{"mat50", []int{100, 100}, half, false, SparseBitmapF32, 21252},
		// f16 50%: bitmap 1252+10000 = 11252 < dense 20000
		{"mat50h", []int{100, 100}, half, true, SparseBitmapF16, 11252},
		{"full", []int{8, 8}, full, false, F32, 256},
		// tie: 8 zeros -> dense 0? no: dense 32, bitmap 4, CSR 8
		{"allzero", []int{8}, make([]float32, 8), false, SparseBitmapF32, 4},
		{"empty", []int{0}, nil, false, F32, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep, err := NewWriter().AddTensor(c.name, c.shape, c.data, AddOptions{Sparse: true, F16: c.f16})
			if err != nil {
				t.Fatal(err)
			}
			if rep.Encoding != c.want || rep.RawBytes != c.raw {
				t.Errorf("got %v (%d bytes), want %v (%d bytes)", rep.Encoding, rep.RawBytes, c.want, c.raw)
			}
		})
	}
}

// TestGoldenLayout checks the writer's bytes against docs/FORMAT.md by hand.
func TestGoldenLayout(t *testing.T) {
	w := NewWriter()
	if _, err := w.AddTensor("w", []int{2, 3}, []float32{1, 0, -2, 0, 0, 4}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob("meta", []byte("{}"), false); err != nil {
		t.Fatal(err)
	}
	b := encode(t, w)
	le := binary.LittleEndian
	// header 64 + 2 entries 512 = 576 (aligned); tensor 24 bytes at 576;
	// blob at align64(600) = 640, 2 bytes; file = align64(642) = 704.
	if len(b) != 704 {
		t.Fatalf("file is %d bytes, want 704", len(b))
	}
	if string(b[:8]) != "EBNN\x00\r\n\x1a" || le.Uint16(b[8:]) != 1 || le.Uint16(b[10:]) != 0 ||
		le.Uint32(b[12:]) != 2 || le.Uint32(b[16:]) != 256 || le.Uint64(b[24:]) != 704 {
		t.Fatalf("bad header % x", b[:32])
	}
	e := entryAt(b, 0)
	if e[0] != 1 || e[1] != 0 || e[2] != 2 || le.Uint16(e[4:]) != 1 || le.Uint64(e[8:]) != 576 ||
		le.Uint64(e[16:]) != 24 || le.Uint64(e[24:]) != 24 || le.Uint64(e[32:]) != 0 ||
		le.Uint64(e[48:]) != 2 || le.Uint64(e[56:]) != 3 || e[112] != 'w' {
		t.Fatalf("bad entry 0 % x", e)
	}
	if le.Uint32(e[40:]) != crc32Checksum(b[576:600]) {
		t.Fatal("entry 0 crc")
	}
	e = entryAt(b, 1)
	if e[0] != 7 || le.Uint64(e[8:]) != 640 || le.Uint64(e[16:]) != 2 || string(e[112:116]) != "meta" {
		t.Fatalf("bad entry 1 % x", e)
	}
	if math.Float32frombits(le.Uint32(b[576+8:])) != -2 || string(b[640:642]) != "{}" {
		t.Fatal("bad payload")
	}
	for _, r := range [][2]int{{600, 640}, {642, 704}} {
		if !allZero(b[r[0]:r[1]]) {
			t.Fatalf("padding %v not zero", r)
		}
	}
	want := crc32Checksum(append(append([]byte{}, b[:60]...), b[64:576]...))
	if le.Uint32(b[60:]) != want {
		t.Fatal("header crc")
	}
}

func crc32Checksum(b []byte) uint32 {
	return crc32Update(0, b) // crc32.Update(0, ...) == Checksum
}

func TestCRC32CCheckValue(t *testing.T) {
	if got := crc32c([]byte("123456789")); got != 0xE3069283 {
		t.Fatalf("CRC-32C check value = %#x", got)
	}
	if crc32c(nil) != 0 {
		t.Fatal("CRC-32C of nothing != 0")
	}
}

func TestDeterministic(t *testing.T) {
	a, b := sampleFile(t), sampleFile(t)
	if string(a) != string(b) {
		t.Fatal("two writes of the same content differ")
	}
}

func TestWriterRejects(t *testing.T) {
	long := make([]byte, MaxNameLen+1)
	for i := range long {
		long[i] = 'x'
	}
	cases := []struct {
		name  string
		tname string
		shape []int
		data  []float32
		kind  error
	}{
		{"empty name", "", []int{1}, []float32{1}, ErrInvalid},
		{"long name", string(long), []int{1}, []float32{1}, ErrInvalid},
		{"bad utf8", "a\xffb", []int{1}, []float32{1}, ErrInvalid},
		{"nul", "a\x00b", []int{1}, []float32{1}, ErrInvalid},
		{"dup", "dup", []int{1}, []float32{1}, ErrInvalid},
		{"negative dim", "neg", []int{-1}, nil, ErrInvalid},
		{"rank 9", "r9", []int{1, 1, 1, 1, 1, 1, 1, 1, 1}, []float32{1}, ErrLimit},
		{"huge dim", "huge", []int{0, MaxElements + 1}, nil, ErrLimit},
		{"too many elements", "many", []int{1 << 15, 1 << 14}, nil, ErrLimit},
		{"data length", "len", []int{2, 2}, []float32{1, 2, 3}, ErrInvalid},
	}
	w := NewWriter()
	if _, err := w.AddTensor("dup", []int{1}, []float32{1}, AddOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := w.AddTensor(c.tname, c.shape, c.data, AddOptions{})
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
		})
	}
	if err := w.AddBlob("dup", nil, false); !errors.Is(err, ErrInvalid) {
		t.Fatalf("duplicate blob name: %v", err)
	}
	if len(w.sections) != 1 {
		t.Fatalf("rejected tensors were queued: %d sections", len(w.sections))
	}
}

func TestF16OverflowReport(t *testing.T) {
	rep, err := NewWriter().AddTensor("x", []int{4}, []float32{1e5, -1e6, float32(math.Inf(1)), 3}, AddOptions{F16: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.F16Overflows != 2 {
		t.Fatalf("F16Overflows = %d, want 2", rep.F16Overflows)
	}
}
