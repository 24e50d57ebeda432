package format

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestByteFlipDetected flips every byte of a small file (several masks) and
// many random bytes of a larger one; Decode or Verify must report each.
func TestByteFlipDetected(t *testing.T) {
	small := sampleFile(t)
	masks := []byte{0x01, 0x80, 0xff}
	if testing.Short() {
		masks = masks[:1]
	}
	check := func(data []byte, pos int, mask byte) {
		c := bytes.Clone(data)
		c[pos] ^= mask
		f, err := Decode(c)
		if err != nil {
			return
		}
		if err := f.Verify(); err == nil {
			t.Fatalf("flip of byte %d with %#x not detected", pos, mask)
		}
	}
	for pos := range small {
		for _, m := range masks {
			check(small, pos, m)
		}
	}
	// Larger file: mostly payload.
	rng := rand.New(rand.NewPCG(5, 6))
	w := NewWriter()
	for i := 0; i < 20; i++ {
		name := "t" + string(rune('A'+i))
		if _, err := w.AddTensor(name, []int{37, 41}, randTensor(rng, 37*41, 0.2+0.04*float64(i)), AddOptions{Sparse: i%2 == 0, F16: i%3 == 0, Compress: i%4 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	big := encode(t, w)
	trials := 3000
	if testing.Short() {
		trials = 300
	}
	for i := 0; i < trials; i++ {
		check(big, rng.IntN(len(big)), byte(1+rng.IntN(255)))
	}
}

// TestVerifyNamesSection checks that Verify names the corrupted section and
// that the lazy CRC check on access catches it too.
func TestVerifyNamesSection(t *testing.T) {
	data := sampleFile(t)
	f, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var off int64
	for _, s := range f.Sections() {
		if s.Name == "csr" {
			off = s.Offset
		}
	}
	c := bytes.Clone(data)
	c[off+3] ^= 0x10
	f, err = Decode(c)
	if err != nil {
		t.Fatal(err)
	}
	err = f.Verify()
	if !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), `tensor "csr"`) {
		t.Fatalf("Verify = %v", err)
	}
	f, _ = Decode(c)
	tn, _ := f.Tensor("csr")
	if _, err := tn.Float32s(); !errors.Is(err, ErrChecksum) {
		t.Fatalf("Float32s on corrupted section = %v", err)
	}
	if _, err := f.Tensor("dense"); err != nil {
		t.Fatal(err)
	}
	// Padding: the byte just after the first section.
	s0 := f.Sections()[0]
	c = bytes.Clone(data)
	c[s0.Offset+s0.StoredSize] = 1
	f, err = Decode(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(); !errors.Is(err, ErrChecksum) || !strings.Contains(err.Error(), "padding after tensor \"dense\"") {
		t.Fatalf("Verify = %v", err)
	}
}

// TestTruncation: every proper prefix and some extensions are rejected.
func TestTruncation(t *testing.T) {
	data := sampleFile(t)
	for n := 0; n < len(data); n++ {
		if _, err := Decode(data[:n]); err == nil {
			t.Fatalf("prefix of %d/%d bytes accepted", n, len(data))
		}
	}
	for _, extra := range []int{1, 63, 64} {
		if _, err := Decode(append(bytes.Clone(data), make([]byte, extra)...)); err == nil {
			t.Fatalf("file extended by %d zero bytes accepted", extra)
		}
	}
}

// hostile edits a valid file; fix recomputes header_crc afterwards.
type hostile struct {
	name   string
	edit   func(b []byte) []byte
	fix    bool
	kind   error
	msg    string // substring of the error
	access bool   // error appears on access (decodeAll), not on Decode
}

func TestHostileHeaders(t *testing.T) {
	le := binary.LittleEndian
	base := sampleFile(t)
	f, err := Decode(base)
	if err != nil {
		t.Fatal(err)
	}
	idx := map[string]int{}
	for i, s := range f.Sections() {
		idx[s.Name] = i
	}
	ent := func(b []byte, name string) []byte { return entryAt(b, idx[name]) }
	setPayload := func(b []byte, name string, at int, v uint32) {
		e := ent(b, name)
		off := le.Uint64(e[8:])
		le.PutUint32(b[off+uint64(at):], v)
		le.PutUint32(e[40:], crc32c(b[off:off+le.Uint64(e[16:])]))
	}
	cases := []hostile{
		{name: "bad magic", edit: func(b []byte) []byte { b[3] = 'X'; return b }, kind: ErrMalformed, msg: "bad magic"},
		{name: "major 2", edit: func(b []byte) []byte { le.PutUint16(b[8:], 2); return b }, kind: ErrVersion, msg: "major version 2"},
		{name: "bad header crc", edit: func(b []byte) []byte { b[60] ^= 1; return b }, kind: ErrChecksum, msg: "header_crc"},
		{name: "too many sections", edit: func(b []byte) []byte { le.PutUint32(b[12:], MaxSections+1); return b }, fix: true, kind: ErrLimit, msg: "section count = 65537"},
		{name: "table beyond file", edit: func(b []byte) []byte { le.PutUint32(b[12:], 60000); return b }, kind: ErrMalformed, msg: "beyond the end"},
		{name: "entry size", edit: func(b []byte) []byte { le.PutUint32(b[16:], 512); return b }, fix: true, kind: ErrMalformed, msg: "entry_size = 512"},
		{name: "file size", edit: func(b []byte) []byte { le.PutUint64(b[24:], 1<<62); return b }, fix: true, kind: ErrMalformed, msg: "file_size"},
		{name: "flags", edit: func(b []byte) []byte { b[20] = 1; return b }, fix: true, kind: ErrMalformed, msg: "flags"},
		{name: "reserved header", edit: func(b []byte) []byte { b[40] = 1; return b }, fix: true, kind: ErrMalformed, msg: "reserved header"},
		{name: "dim 2^32", edit: func(b []byte) []byte { le.PutUint64(ent(b, "dense")[56:], 1<<32); return b }, fix: true, kind: ErrLimit,
			msg: `tensor "dense": dim 1 = 4294967296 exceeds limit`},
		{name: "element overflow", edit: func(b []byte) []byte {
			e := ent(b, "dense")
			e[2] = 8
			for d := 0; d < 8; d++ {
				le.PutUint64(e[48+8*d:], 1<<28)
			}
			return b
		}, fix: true, kind: ErrLimit, msg: "element count exceeds limit"},
		{name: "rank 9", edit: func(b []byte) []byte { ent(b, "dense")[2] = 9; return b }, fix: true, kind: ErrLimit, msg: "rank = 9"},
		{name: "dim beyond rank", edit: func(b []byte) []byte { le.PutUint64(ent(b, "half")[56:], 3); return b }, fix: true, kind: ErrMalformed, msg: "beyond rank"},
		{name: "unknown encoding", edit: func(b []byte) []byte { ent(b, "dense")[0] = 9; return b }, fix: true, kind: ErrMalformed, msg: "encoding = 9"},
		{name: "unknown compression", edit: func(b []byte) []byte { ent(b, "dense")[1] = 2; return b }, fix: true, kind: ErrMalformed, msg: "compression = 2"},
		{name: "misaligned offset", edit: func(b []byte) []byte { e := ent(b, "half"); le.PutUint64(e[8:], le.Uint64(e[8:])+4); return b }, fix: true, kind: ErrMalformed, msg: "not a multiple of 64"},
		{name: "overlap", edit: func(b []byte) []byte { e := ent(b, "half"); le.PutUint64(e[8:], le.Uint64(e[8:])-64); return b }, fix: true, kind: ErrMalformed, msg: "overlaps"},
		{name: "overlap table", edit: func(b []byte) []byte { le.PutUint64(ent(b, "dense")[8:], 64); return b }, fix: true, kind: ErrMalformed, msg: "overlaps section table"},
		{name: "gap", edit: func(b []byte) []byte { e := ent(b, "half"); le.PutUint64(e[8:], le.Uint64(e[8:])+64); return b }, fix: true, kind: ErrMalformed, msg: "packed"},
		{name: "offset beyond file", edit: func(b []byte) []byte { le.PutUint64(ent(b, "half")[8:], 1<<40); return b }, fix: true, kind: ErrMalformed, msg: "exceeds the"},
		{name: "offset overflow", edit: func(b []byte) []byte { le.PutUint64(ent(b, "half")[8:], ^uint64(63)); return b }, fix: true, kind: ErrMalformed, msg: "exceeds the"},
		{name: "stored huge", edit: func(b []byte) []byte { le.PutUint64(ent(b, "half")[16:], 1<<62); return b }, fix: true, kind: ErrLimit, msg: "stored_size"},
		{name: "raw huge", edit: func(b []byte) []byte { le.PutUint64(ent(b, "zeros")[24:], 1<<31); return b }, fix: true, kind: ErrLimit, msg: "raw_size"},
		{name: "raw mismatch", edit: func(b []byte) []byte {
			e := ent(b, "half")
			le.PutUint64(e[24:], 16)
			le.PutUint64(e[16:], 16)
			return b
		}, fix: true, kind: ErrMalformed},
		{name: "stored != raw uncompressed", edit: func(b []byte) []byte { le.PutUint64(ent(b, "half")[24:], 12); return b }, fix: true, kind: ErrMalformed, msg: "differs"},
		{name: "nnz > n", edit: func(b []byte) []byte { le.PutUint64(ent(b, "bitmap")[32:], 65); return b }, fix: true, kind: ErrMalformed, msg: "nnz = 65"},
		{name: "nnz in dense", edit: func(b []byte) []byte { le.PutUint64(ent(b, "dense")[32:], 1); return b }, fix: true, kind: ErrMalformed, msg: "dense"},
		{name: "name len 0", edit: func(b []byte) []byte { le.PutUint16(ent(b, "dense")[4:], 0); return b }, fix: true, kind: ErrMalformed, msg: "name_len = 0"},
		{name: "name len 200", edit: func(b []byte) []byte { le.PutUint16(ent(b, "dense")[4:], 200); return b }, fix: true, kind: ErrMalformed, msg: "name_len = 200"},
		{name: "name utf8", edit: func(b []byte) []byte { ent(b, "dense")[113] = 0xff; return b }, fix: true, kind: ErrMalformed, msg: "UTF-8"},
		{name: "name NUL", edit: func(b []byte) []byte { ent(b, "dense")[113] = 0; return b }, fix: true, kind: ErrMalformed, msg: "NUL"},
		{name: "name tail", edit: func(b []byte) []byte { ent(b, "dense")[200] = 'x'; return b }, fix: true, kind: ErrMalformed, msg: "after name_len"},
		{name: "duplicate name", edit: func(b []byte) []byte {
			copy(ent(b, "half")[112:116], "csr\x00")
			le.PutUint16(ent(b, "half")[4:], 3)
			return b
		}, fix: true, kind: ErrMalformed, msg: "duplicate"},
		{name: "reserved entry", edit: func(b []byte) []byte { ent(b, "dense")[250] = 1; return b }, fix: true, kind: ErrMalformed, msg: "reserved entry"},
		{name: "blob with rank", edit: func(b []byte) []byte { e := ent(b, "meta"); e[2] = 1; le.PutUint64(e[48:], 3); return b }, fix: true, kind: ErrMalformed, msg: "blob has rank"},
		{name: "compressed empty", edit: func(b []byte) []byte { e := ent(b, "empty"); e[1] = 1; return b }, fix: true, kind: ErrMalformed, msg: "raw_size = 0"},
		{name: "not zstd", edit: func(b []byte) []byte { e := ent(b, "half"); e[1] = 1; return b }, fix: true, kind: ErrMalformed, msg: "zstd", access: true},
		// Structural errors behind a valid CRC: found on access.
		{name: "csr rowptr[0]", edit: func(b []byte) []byte { setPayload(b, "csr", 0, 1); return b }, fix: true, kind: ErrMalformed, msg: "rowptr[0]", access: true},
		{name: "csr rowptr end", edit: func(b []byte) []byte { setPayload(b, "csr", 4*4, 0); return b }, fix: true, kind: ErrMalformed, msg: "rowptr", access: true},
		{name: "csr column", edit: func(b []byte) []byte { setPayload(b, "csr", 4*5, 400); return b }, fix: true, kind: ErrMalformed, msg: "colidx", access: true},
		{name: "csr column order", edit: func(b []byte) []byte { setPayload(b, "csr", 4*6, 5); return b }, fix: true, kind: ErrMalformed, msg: "not increasing", access: true},
		{name: "bitmap popcount", edit: func(b []byte) []byte { setPayload(b, "bitmap", 0, 0); return b }, fix: true, kind: ErrMalformed, msg: "bits set", access: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := c.edit(bytes.Clone(base))
			if c.fix {
				fixHeaderCRC(b)
			}
			f, err := DecodeWith(b, ReadOptions{Name: "model.ebnn"})
			if c.access {
				if err != nil {
					t.Fatalf("Decode: %v", err)
				}
				err = decodeAll(f)
			}
			if !errors.Is(err, c.kind) {
				t.Fatalf("err = %v, want %v", err, c.kind)
			}
			if !strings.HasPrefix(err.Error(), "format: model.ebnn: ") || !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q lacks file name or %q", err, c.msg)
			}
		})
	}
}

// TestZstdBomb: a few compressed bytes declaring a huge raw size must fail
// without allocating it, via the budget or the decoder's exact-size rule.
func TestZstdBomb(t *testing.T) {
	// 64 MiB of zeros compresses to a few KiB.
	w := NewWriter()
	n := 1 << 24
	if testing.Short() {
		n = 1 << 20
	}
	if _, err := w.AddTensor("bomb", []int{n}, make([]float32, n), AddOptions{Compress: true}); err != nil {
		t.Fatal(err)
	}
	data := encode(t, w)
	f, err := DecodeWith(data, ReadOptions{AllocLimit: int64(len(data)) * 4})
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := f.Tensor("bomb")
	if _, err := tn.Float32s(); !errors.Is(err, ErrBudget) {
		t.Fatalf("bomb within a 4x budget: %v", err)
	}
	if used, _ := f.Allocated(); used > int64(len(data))*4 {
		t.Fatalf("used %d > budget", used)
	}
	// Declared raw smaller than the stream: decoder must stop and fail.
	e := entryAt(data, 0)
	binary.LittleEndian.PutUint64(e[24:], 4*1024)
	binary.LittleEndian.PutUint64(e[48:], 1024)
	fixHeaderCRC(data)
	f, err = Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	tn, _ = f.Tensor("bomb")
	if _, err := tn.Float32s(); !errors.Is(err, ErrMalformed) {
		t.Fatalf("stream longer than declared: %v", err)
	}
	// Declared raw larger than the stream.
	binary.LittleEndian.PutUint64(e[24:], uint64(4*(n+1)))
	binary.LittleEndian.PutUint64(e[48:], uint64(n+1))
	fixHeaderCRC(data)
	f, err = DecodeWith(data, ReadOptions{AllocLimit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	tn, _ = f.Tensor("bomb")
	if _, err := tn.Float32s(); !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "ends after") {
		t.Fatalf("stream shorter than declared: %v", err)
	}
}

// TestNewerMinor: a file from a newer minor with an unknown encoding opens;
// the unknown section fails only when accessed.
func TestNewerMinor(t *testing.T) {
	b := sampleFile(t)
	binary.LittleEndian.PutUint16(b[10:], 3)
	entryAt(b, 0)[0] = 42
	b[40] = 9 // reserved header byte: ignored for newer minors
	fixHeaderCRC(b)
	f, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if ma, mi := f.Version(); ma != 1 || mi != 3 {
		t.Fatalf("Version = %d.%d", ma, mi)
	}
	if s := f.Sections()[0]; s.Kind != KindUnknown {
		t.Fatalf("kind = %v", s.Kind)
	}
	if _, err := f.Tensor("dense"); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("unknown encoding access: %v", err)
	}
	if tn, err := f.Tensor("half"); err != nil {
		t.Fatal(err)
	} else if _, err := tn.Float32s(); err != nil {
		t.Fatal(err)
	}
	if err := f.Verify(); err != nil {
		t.Fatal(err)
	}
}

func TestLookupErrors(t *testing.T) {
	f, err := Decode(sampleFile(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Tensor("nope"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := f.Tensor("meta"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	if _, err := f.Blob("dense"); !errors.Is(err, ErrNotFound) {
		t.Fatal(err)
	}
	tn, _ := f.Tensor("half")
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := tn.Float32s(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := f.Verify(); !errors.Is(err, ErrClosed) {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal("second Close:", err)
	}
}
