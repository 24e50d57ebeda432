package format

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"
)

// Test helpers. References here are deliberately naive and independent of the
// code under test: CRCs come straight from hash/crc32, float16 rounding from
// float64 arithmetic, offsets from docs/FORMAT.md.

var tcast = crc32.MakeTable(crc32.Castagnoli)

// fixHeaderCRC recomputes header_crc of a (possibly edited) file.
func fixHeaderCRC(b []byte) {
	count := uint64(binary.LittleEndian.Uint32(b[12:]))
	es := uint64(binary.LittleEndian.Uint32(b[16:]))
	end := 64 + count*es // u64: no overflow on 32-bit hosts
	if end > uint64(len(b)) {
		end = uint64(len(b))
	}
	c := crc32.Update(crc32.Checksum(b[:60], tcast), tcast, b[64:end])
	binary.LittleEndian.PutUint32(b[60:], c)
}

// entryAt returns the bytes of table entry i.
func entryAt(b []byte, i int) []byte { return b[64+256*i : 64+256*(i+1)] }

// refF16 rounds x to the nearest binary16 value (ties to even), computed in
// float64 without bit tricks.
func refF16(x float32) float32 {
	v := float64(x)
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return x
	}
	a := math.Abs(v)
	e := math.Floor(math.Log2(a))
	if math.Ldexp(1, int(e)) > a { // guard against log2 rounding
		e--
	} else if math.Ldexp(1, int(e)+1) <= a {
		e++
	}
	if e < -14 {
		e = -14 // subnormal range: fixed quantum 2^-24
	}
	q := math.Ldexp(1, int(e)-10)
	r := math.RoundToEven(a/q) * q
	if r >= 65520 || r > 65504 {
		r = math.Inf(1)
	}
	return float32(math.Copysign(r, v))
}

// randTensor returns n values of which about density are non-zero.
func randTensor(rng *rand.Rand, n int, density float64) []float32 {
	d := make([]float32, n)
	for i := range d {
		if rng.Float64() < density {
			d[i] = float32(rng.NormFloat64())
			if d[i] == 0 {
				d[i] = 1
			}
		}
	}
	return d
}

// encode writes w to memory.
func encode(t testing.TB, w *Writer) []byte {
	t.Helper()
	var buf bytes.Buffer
	n, err := w.WriteTo(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(buf.Len()) {
		t.Fatalf("WriteTo returned %d, wrote %d", n, buf.Len())
	}
	return buf.Bytes()
}

// sampleFile is a small container with every encoding, compression and a blob.
func sampleFile(t testing.TB) []byte {
	t.Helper()
	w := NewWriter()
	rng := rand.New(rand.NewPCG(1, 2))
	add := func(name string, shape []int, data []float32, o AddOptions) {
		t.Helper()
		if _, err := w.AddTensor(name, shape, data, o); err != nil {
			t.Fatal(err)
		}
	}
	add("dense", []int{3, 5}, randTensor(rng, 15, 1), AddOptions{})
	add("half", []int{7}, randTensor(rng, 7, 1), AddOptions{F16: true})
	add("bitmap", []int{4, 16}, randTensor(rng, 64, 0.3), AddOptions{Sparse: true})
	csr := make([]float32, 4*400)
	csr[5], csr[7], csr[2*400+100], csr[3*400+399] = 1, -2, 3, 4
	add("csr", []int{4, 400}, csr, AddOptions{Sparse: true, F16: true})
	add("zeros", []int{2, 300}, make([]float32, 600), AddOptions{Compress: true})
	add("scalar", nil, []float32{2.5}, AddOptions{})
	if err := w.AddBlob("meta", []byte(`{"model":"sample","layers":[1,2,3]}`), false); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob("empty", nil, true); err != nil {
		t.Fatal(err)
	}
	if err := w.AddBlob("notes", bytes.Repeat([]byte("abc"), 100), true); err != nil {
		t.Fatal(err)
	}
	return encode(t, w)
}

// decodeAll decodes every tensor and blob, returning the first error.
func decodeAll(f *File) error {
	for _, s := range f.Sections() {
		switch s.Kind {
		case KindTensor:
			t, err := f.Tensor(s.Name)
			if err != nil {
				return err
			}
			if _, err := t.Float32s(); err != nil {
				return err
			}
		case KindBlob:
			if _, err := f.Blob(s.Name); err != nil {
				return err
			}
		}
	}
	return nil
}
