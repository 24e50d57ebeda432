package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// allocDelta returns the bytes allocated by fn (runtime.MemStats.TotalAlloc).
func allocDelta(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// minAllocDelta is allocDelta for an fn that allocates the same every time it runs: TotalAlloc is
// process-wide, so other goroutines (the runtime's background work, parallel tests) can add to one
// measurement, and the smallest of a few runs is what fn itself allocates.
func minAllocDelta(fn func()) uint64 {
	best := ^uint64(0)
	for try := 0; try < 5; try++ {
		best = min(best, allocDelta(fn))
	}
	return best
}

// TestDecodeAllocAccounting: what Decode really allocates for the table is at
// most what it charges to the budget.
func TestDecodeAllocAccounting(t *testing.T) {
	counts := []int{1, 100, 5000}
	if testing.Short() {
		counts = counts[:2]
	}
	for _, count := range counts {
		w := NewWriter()
		for i := 0; i < count; i++ {
			name := fmt.Sprintf("%0128d", i)
			if _, err := w.AddTensor(name, []int{1}, []float32{1}, AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		data := encode(t, w)
		// Warm up one-time process state (hash/crc32 builds its tables on
		// first use on hosts without CRC instructions).
		if _, err := Decode(data); err != nil {
			t.Fatal(err)
		}
		var f *File
		var err error
		got := minAllocDelta(func() { f, err = Decode(data) })
		if err != nil {
			t.Fatal(err)
		}
		used, _ := f.Allocated()
		if got > uint64(used) {
			t.Errorf("%d sections: Decode allocated %d bytes, charged only %d", count, got, used)
		}
		t.Logf("%d sections: allocated %d, charged %d", count, got, used)
	}
}

// TestZstdAllocAccounting: creating a File's zstd decoder (which allocates
// its ring buffer at once) allocates at most zstdDecoderCharge, and each
// later decompression with it, of any size up to its window, at most
// zstdCallCost: the ring is never reallocated.
func TestZstdAllocAccounting(t *testing.T) {
	sizes := []int{1, 100, 5000, 1 << 20, 9 << 20}
	if testing.Short() {
		sizes = sizes[:4]
	}
	var c compressor
	payload := func(n int) []byte {
		src := make([]byte, n)
		for i := range src {
			src[i] = byte(i * i >> 7)
		}
		return src
	}
	for _, n := range sizes {
		window, _ := zstdFrameWindow(zstdWindowLimit(uint64(n)))
		// The largest section first, then smaller ones.
		var srcs, zs [][]byte
		for _, m := range []int{n, n / 2, n / 3, 1, n} {
			if m < 1 {
				continue
			}
			src := payload(m)
			z, err := c.compress(src)
			if err != nil {
				t.Fatal(err)
			}
			srcs, zs = append(srcs, src), append(zs, z)
		}
		dsts := make([][]byte, len(srcs))
		for i := range srcs {
			dsts[i] = make([]byte, len(srcs[i]))
		}
		var z *inflater
		var err error
		got := allocDelta(func() {
			if z, err = newInflater(window); err == nil {
				err = z.inflate(zs[0], dsts[0])
			}
		})
		if err != nil || !bytes.Equal(dsts[0], srcs[0]) {
			t.Fatalf("n=%d: %v", n, err)
		}
		first := got
		got = allocDelta(func() {
			for i := 1; i < len(zs) && err == nil; i++ {
				err = z.inflate(zs[i], dsts[i])
			}
		})
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		for i := range srcs {
			if !bytes.Equal(dsts[i], srcs[i]) {
				t.Fatalf("n=%d: section %d (%d bytes) differs", n, i, len(srcs[i]))
			}
		}
		charge := zstdDecoderCharge(window) + uint64(len(zs))*zstdCallCost
		if first+got > charge {
			t.Errorf("n=%d: decoder and %d decompressions allocated %d + %d > charge %d", n, len(zs), first, got, charge)
		}
		// The ring is allocated once: later decompressions allocate
		// less than the fixed-state allowance.
		if got > zstdOverhead {
			t.Errorf("n=%d: %d further decompressions allocated %d (ring reallocated?)", n, len(zs)-1, got)
		}
		t.Logf("n=%d: window %d: decoder + first decompression allocated %d, %d more %d; charge %d", n, window, first, len(zs)-1, got, charge)
		z.close()
	}
}

// TestZstdFrameWindow: the rounded window is the smallest value of the form
// 2^(10+e)·(1+m/8) that is at least w, and the descriptor encodes it.
func TestZstdFrameWindow(t *testing.T) {
	tests := []struct{ w, want uint64 }{
		{1024, 1024}, {1025, 1152}, {2048, 2048}, {2049, 2304},
		{3 << 20, 3 << 20}, {5<<20 + 1, 5<<20 + 1<<19}, {8 << 20, 8 << 20},
	}
	for _, tc := range tests {
		got, desc := zstdFrameWindow(tc.w)
		base := uint64(1) << (10 + desc>>3)
		if got != tc.want || base+base/8*uint64(desc&7) != got {
			t.Errorf("zstdFrameWindow(%d) = %d, %#x; want %d", tc.w, got, desc, tc.want)
		}
	}
}

func TestBudgetEnforced(t *testing.T) {
	data := sampleFile(t)
	f, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tableCharge, _ := f.Allocated()
	// Enough for the table and the small decodes, not for zstd state.
	f, err = DecodeWith(data, ReadOptions{AllocLimit: tableCharge + 4096})
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := f.Tensor("half")
	if _, err := tn.Float32s(); err != nil {
		t.Fatalf("small decode within budget: %v", err)
	}
	tn, _ = f.Tensor("zeros")
	_, err = tn.Float32s()
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), `tensor "zeros"`) {
		t.Fatalf("decode beyond budget: %v", err)
	}
	if used, limit := f.Allocated(); used > limit {
		t.Fatalf("used %d > limit %d", used, limit)
	}
	// The table alone over budget.
	if _, err := DecodeWith(data, ReadOptions{AllocLimit: 100}); !errors.Is(err, ErrBudget) {
		t.Fatalf("table beyond budget: %v", err)
	}
	if DefaultAllocLimit(1000) != 4000+64<<20 || DefaultAllocLimit(1<<62) <= 0 {
		t.Fatal("DefaultAllocLimit")
	}
}

// TestSparseExpansionBudget: a tiny CSR tensor declaring 2^28 zeros would
// decode to 1 GiB; the default budget of a tiny file refuses.
func TestSparseExpansionBudget(t *testing.T) {
	w := NewWriter()
	if _, err := w.AddTensor("z", []int{1, 8}, make([]float32, 8), AddOptions{Sparse: true}); err != nil {
		t.Fatal(err)
	}
	data := encode(t, w)
	e := entryAt(data, 0)
	if Encoding(e[0]) != SparseBitmapF32 {
		t.Fatalf("encoding %v", Encoding(e[0]))
	}
	// Turn it into CSR [1, 2^28] with nnz 0: raw = 8 bytes (same as the
	// 4-byte bitmap padded to 64 in the file).
	e[0] = byte(CSRF32)
	binary.LittleEndian.PutUint64(e[56:], MaxElements)
	binary.LittleEndian.PutUint64(e[16:], 8)
	binary.LittleEndian.PutUint64(e[24:], 8)
	off := binary.LittleEndian.Uint64(e[8:])
	copy(data[off:], make([]byte, 8))
	binary.LittleEndian.PutUint32(e[40:], crc32c(data[off:off+8]))
	fixHeaderCRC(data)
	f, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := f.Tensor("z")
	if _, err := tn.Float32s(); !errors.Is(err, ErrBudget) {
		t.Fatalf("1 GiB expansion: %v", err)
	}
}

// fuzzSeeds are the seed inputs of FuzzDecode (also in testdata/fuzz).
func fuzzSeeds(t testing.TB) map[string][]byte {
	le := binary.LittleEndian
	valid := sampleFile(t)
	seeds := map[string][]byte{
		"valid":      valid,
		"empty":      {},
		"header":     valid[:64],
		"truncated1": valid[:100],
		"truncated2": valid[:len(valid)-64],
	}
	edit := func(name string, fn func(b []byte)) {
		b := bytes.Clone(valid)
		fn(b)
		fixHeaderCRC(b)
		seeds[name] = b
	}
	edit("huge_count", func(b []byte) { le.PutUint32(b[12:], 0xffffffff) })
	edit("huge_stored", func(b []byte) { le.PutUint64(entryAt(b, 0)[16:], 1<<63) })
	edit("huge_raw", func(b []byte) { le.PutUint64(entryAt(b, 0)[24:], ^uint64(0)) })
	edit("overflow_offset", func(b []byte) { le.PutUint64(entryAt(b, 1)[8:], ^uint64(63)) })
	edit("misaligned_offset", func(b []byte) { e := entryAt(b, 1); le.PutUint64(e[8:], le.Uint64(e[8:])+8) })
	edit("overlap", func(b []byte) { e := entryAt(b, 1); le.PutUint64(e[8:], le.Uint64(e[8:])-64) })
	edit("too_many_dims", func(b []byte) { entryAt(b, 0)[2] = 200 })
	edit("dim_2_32", func(b []byte) { le.PutUint64(entryAt(b, 0)[56:], 1<<32) })
	edit("bad_section_crc", func(b []byte) { entryAt(b, 0)[40] ^= 1 })
	bad := bytes.Clone(valid)
	bad[61] ^= 0x55
	seeds["bad_header_crc"] = bad
	// zstd bomb: a few hundred bytes declaring 16 MiB.
	w := NewWriter()
	if _, err := w.AddTensor("bomb", []int{1 << 22}, make([]float32, 1<<22), AddOptions{Compress: true}); err != nil {
		t.Fatal(err)
	}
	seeds["zstd_bomb"] = encode(t, w)
	// Newer minor with an unknown encoding.
	edit("newer_minor", func(b []byte) { le.PutUint16(b[10:], 1); entryAt(b, 0)[0] = 99 })
	return seeds
}

// TestWriteFuzzCorpus regenerates testdata/fuzz/FuzzDecode when
// EBNN_WRITE_CORPUS=1.
func TestWriteFuzzCorpus(t *testing.T) {
	if os.Getenv("EBNN_WRITE_CORPUS") != "1" {
		t.Skip("set EBNN_WRITE_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range fuzzSeeds(t) {
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, "seed_"+name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzDecode: Decode and every access never panic and never allocate more
// than the budget (checked with the reader's accounting and with
// runtime.MemStats).
func FuzzDecode(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	const slack = 256 << 10 // error strings, Tensor handles, runtime noise
	f.Fuzz(func(t *testing.T, data []byte) {
		// 4 MiB: room for one zstd decoder (zstdDecoderCharge).
		limit := int64(4*len(data) + 4<<20)
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		file, err := DecodeWith(data, ReadOptions{AllocLimit: limit})
		if err == nil {
			for i := range file.sections {
				s := &file.sections[i]
				switch s.kind {
				case KindTensor:
					if tn, err := file.Tensor(s.name); err == nil {
						if x, err := tn.Float32s(); err == nil && len(x) != tn.NumElements() {
							t.Fatalf("tensor %q: %d values for %d elements", s.name, len(x), tn.NumElements())
						}
					}
				case KindBlob:
					if bl, err := file.Blob(s.name); err == nil && uint64(len(bl)) != s.raw {
						t.Fatalf("blob %q: %d bytes, raw_size %d", s.name, len(bl), s.raw)
					}
				}
			}
			_ = file.Verify()
			if used, lim := file.Allocated(); used > lim {
				t.Fatalf("budget accounting: used %d > limit %d", used, lim)
			}
		}
		runtime.ReadMemStats(&b)
		if d := b.TotalAlloc - a.TotalAlloc; d > uint64(limit)+slack {
			t.Fatalf("allocated %d bytes for a %d-byte input (bound %d)", d, len(data), limit+slack)
		}
	})
}
