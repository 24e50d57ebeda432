//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/internal/testutil"
)

// This file builds the hostile inputs of TestHostileInputsCLI: byte-level builders for
// .ebnn containers, safetensors files, torch.save zips and pickles, independent of the code
// under test (only the container writer is used, to craft files whose checksums are right but
// whose metadata lies).

var lendian = binary.LittleEndian

// writeFile writes b to dir/name and returns the path.
func writeHostile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	if len(b) > hostileMaxInput {
		t.Fatalf("%s: hostile input of %d bytes exceeds %d", name, len(b), hostileMaxInput)
	}
	p := filepath.Join(dir, name)
	mustWrite(t, p, b)
	return p
}

// randomBytes returns n bytes from a fixed seed.
func seededBytes(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// --- .ebnn containers (docs/FORMAT.md) ---

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// ebnnEntry is one 256-byte section-table entry (FORMAT.md §4).
type ebnnEntry struct {
	encoding, compression, rank uint8
	name                        string
	offset, stored, raw, nnz    uint64
	crc                         uint32
	dims                        []uint64
}

func (e ebnnEntry) bytes() []byte {
	b := make([]byte, 256)
	b[0], b[1], b[2] = e.encoding, e.compression, e.rank
	lendian.PutUint16(b[4:], uint16(len(e.name)))
	lendian.PutUint64(b[8:], e.offset)
	lendian.PutUint64(b[16:], e.stored)
	lendian.PutUint64(b[24:], e.raw)
	lendian.PutUint64(b[32:], e.nnz)
	lendian.PutUint32(b[40:], e.crc)
	for i, d := range e.dims {
		lendian.PutUint64(b[48+8*i:], d)
	}
	copy(b[112:240], e.name)
	return b
}

// ebnnFile returns a 64-byte header declaring count entries of entrySize bytes and fileSize
// bytes, with a correct header CRC over it and table, followed by table and then body.
func ebnnFile(count, entrySize uint32, fileSize uint64, table, body []byte) []byte {
	h := make([]byte, 64)
	copy(h, "EBNN\x00\r\n\x1a")
	lendian.PutUint16(h[8:], 1)
	lendian.PutUint32(h[12:], count)
	lendian.PutUint32(h[16:], entrySize)
	lendian.PutUint64(h[24:], fileSize)
	crc := crc32.Update(crc32.Checksum(h[:60], crc32c), crc32c, table)
	lendian.PutUint32(h[60:], crc)
	return append(append(h, table...), body...)
}

// sectionsFile is a container of the sections entries holding payloads (stored bytes) at
// their canonical offsets, with every checksum right; each entry gives the rest of its table
// entry.
func sectionsFile(entries []ebnnEntry, payloads [][]byte) []byte {
	var table, body []byte
	off := uint64(64+256*len(entries)+63) &^ 63
	base := off
	for i, e := range entries {
		e.offset = off
		e.stored = uint64(len(payloads[i]))
		e.crc = crc32.Checksum(payloads[i], crc32c)
		table = append(table, e.bytes()...)
		body = append(body, payloads[i]...)
		off = (off + e.stored + 63) &^ 63
		body = append(body, make([]byte, off-base-uint64(len(body)))...)
	}
	pad := make([]byte, base-64-uint64(len(table)))
	return ebnnFile(uint32(len(entries)), 256, off, table, append(pad, body...))
}

// sectionFile is sectionsFile of one section.
func sectionFile(entry ebnnEntry, payload []byte) []byte {
	return sectionsFile([]ebnnEntry{entry}, [][]byte{payload})
}

// zstdZeros returns a zstd frame (RFC 8878) that decompresses to n zero bytes, n a multiple
// of 128 KiB, made of RLE blocks; contentSize is the frame's declared content size.
func zstdZeros(n, contentSize uint64) []byte {
	const block = 128 << 10
	b := lendian.AppendUint32(nil, 0xFD2FB528)
	b = append(b, 0xC0)       // Frame_Content_Size in 8 bytes, a window descriptor, no checksum
	b = append(b, (17-10)<<3) // window 2^17 bytes
	b = lendian.AppendUint64(b, contentSize)
	for left := n; left > 0; left -= block {
		h := uint32(1<<1 | block<<3) // RLE block of 128 KiB
		if left == block {
			h |= 1 // last
		}
		b = append(b, byte(h), byte(h>>8), byte(h>>16), 0)
	}
	return b
}

// rewriteMeta copies the model file src to dst with its "meta" blob replaced by edit(meta),
// through the format writer (so every checksum is right).
func rewriteMeta(t *testing.T, src, dst string, edit func(meta string) string) {
	t.Helper()
	f := modeltest.Open(t, src)
	w := format.NewWriter()
	for _, name := range f.Tensors() {
		tn := modeltest.Tensor(t, f, name)
		if _, err := w.AddTensor(name, tn.Shape, tn.Data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	meta, err := f.Blob("meta")
	if err != nil {
		t.Fatal(err)
	}
	edited := edit(string(meta))
	if edited == string(meta) {
		t.Fatal("rewriteMeta: the edit changed nothing")
	}
	if err := w.AddBlob("meta", []byte(edited), false); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(dst, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// metaOnly writes a model file with just a "meta" blob and the given tensors (name → shape,
// zero-filled).
func metaOnly(t *testing.T, dst, meta string, tensors map[string][]int) {
	t.Helper()
	w := format.NewWriter()
	for name, shape := range tensors {
		n := 1
		for _, d := range shape {
			n *= d
		}
		if _, err := w.AddTensor(name, shape, make([]float32, n), format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddBlob("meta", []byte(meta), false); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(dst, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// --- safetensors ---

// safetensorsFile returns an 8-byte header length n, then header, then data.
func safetensorsFile(n uint64, header string, data []byte) []byte {
	b := lendian.AppendUint64(nil, n)
	return append(append(b, header...), data...)
}

// --- torch.save zips and pickles (protocol 2) ---

// tensorDict returns the pickle of {key: a FloatStorage view (numel, offset, size, stride)}
// as torch.save writes it.
func tensorDict(key string, numel, offset int, size, stride []int) []byte {
	return (&testutil.Pickle{}).Op(0x80, 2, '}').Str(key).Tensor("FloatStorage", "0", numel, offset, size, stride).Op('s', '.').B
}

// repeatedPickle is PROTO 2, prefix, then body repeated up to about n bytes, then STOP.
func repeatedPickle(prefix, body []byte, n int) []byte {
	b := append([]byte{0x80, 2}, prefix...)
	for len(b) < n {
		b = append(b, body...)
	}
	return append(b, '.')
}

// --- text inputs ---

// nested returns open repeated n times, then inner, then close repeated n times.
func nestText(open, inner, close string, n int) []byte {
	return []byte(strings.Repeat(open, n) + inner + strings.Repeat(close, n))
}

// manyKeys returns a JSON object of about n bytes of distinct keys.
func manyKeys(n int) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i := 0; b.Len() < n-40; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`"k` + strconv.Itoa(i) + `":1`)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// csvRow returns width copies of v joined by commas and a newline.
func csvRow(v string, width int) string {
	return strings.TrimSuffix(strings.Repeat(v+",", width), ",") + "\n"
}

// --- the cases ---

// oneInput writes a CSV with one all-zero input of width values and returns its path.
func oneInput(t *testing.T, in string, width int) string {
	return writeHostile(t, in, "x.csv", []byte(csvRow("0", width)))
}

// modelCase is a hostile model file run through cmd (predict, bench or inspect).
func modelCase(name, cmd string, build func(t *testing.T, e hostileEnv, path string)) hostileCase {
	return hostileCase{name: cmd + ": " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := filepath.Join(in, "m.ebnn")
		build(t, e, p)
		if fi, err := os.Stat(p); err != nil || fi.Size() > hostileMaxInput {
			t.Fatalf("model file: %v, %d bytes", err, fi.Size())
		}
		var args []string
		switch cmd {
		case "predict":
			args = []string{"predict", "--model", p, "--input", oneInput(t, in, 784), "--samples", "4"}
		case "bench":
			args = []string{"bench", "--model", p, "--samples", "4", "--count", "1"}
		case "inspect":
			args = []string{"inspect", "--verify", p}
		default:
			t.Fatalf("no command %q", cmd)
		}
		return hostileRun{args: args, blame: []string{p}}
	}}
}

// bytesModel returns a model builder writing fixed bytes.
func bytesModel(f func(t *testing.T, e hostileEnv) []byte) func(t *testing.T, e hostileEnv, path string) {
	return func(t *testing.T, e hostileEnv, path string) {
		writeHostile(t, filepath.Dir(path), filepath.Base(path), f(t, e))
	}
}

// truncatedModel keeps the first n(len) bytes of the real model.
func truncatedModel(n func(size int) int) func(t *testing.T, e hostileEnv, path string) {
	return bytesModel(func(t *testing.T, e hostileEnv) []byte {
		b, err := os.ReadFile(e.model)
		if err != nil {
			t.Fatal(err)
		}
		return b[:n(len(b))]
	})
}

// flippedModel is the real model with the bytes of its "meta" JSON where old occurs replaced
// by new (of the same length), checksums left as they are.
func flippedModel(old, new string) func(t *testing.T, e hostileEnv, path string) {
	return bytesModel(func(t *testing.T, e hostileEnv) []byte {
		b, err := os.ReadFile(e.model)
		if err != nil {
			t.Fatal(err)
		}
		i := bytes.Index(b, []byte(old))
		if i < 0 || len(old) != len(new) {
			t.Fatalf("model has no %q", old)
		}
		copy(b[i:], new)
		return b
	})
}

// editedModel is the real model with its meta JSON edited and every checksum right.
func editedModel(old, new string) func(t *testing.T, e hostileEnv, path string) {
	return func(t *testing.T, e hostileEnv, path string) {
		rewriteMeta(t, e.model, path, func(m string) string { return strings.Replace(m, old, new, 1) })
	}
}

// specModel is a model file with the given meta JSON and zero tensors of the given shapes.
func specModel(meta string, tensors map[string][]int) func(t *testing.T, e hostileEnv, path string) {
	return func(t *testing.T, e hostileEnv, path string) { metaOnly(t, path, meta, tensors) }
}

// hugeSection is a header and table of one section claiming stored bytes at the canonical
// offset, with correct checksums of header and table, padded to pad bytes; fileSize is the
// header's claim (0: the real length).
func hugeSection(entry ebnnEntry, fileSize uint64, pad int) func(t *testing.T, e hostileEnv) []byte {
	return func(t *testing.T, e hostileEnv) []byte {
		entry.offset = 64 + 256
		if fileSize == 0 {
			fileSize = uint64(pad)
		}
		return ebnnFile(1, 256, fileSize, entry.bytes(), make([]byte, pad-64-256))
	}
}

// checkpointCase is a hostile checkpoint (file) for convert with the fixture's config and
// architecture.
func checkpointCase(name, file string, build func(t *testing.T) []byte) hostileCase {
	return hostileCase{name: "convert checkpoint: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, file, build(t))
		return hostileRun{args: []string{"convert", "--checkpoint", p, "--config", e.fx("inference_config.json"),
			"--arch", e.fx("model.txt"), "--out", filepath.Join(out, "m.ebnn")}, blame: []string{p}}
	}}
}

// configCase is a hostile inference config for convert or plan.
func configCase(name, cmd string, build func() []byte) hostileCase {
	return hostileCase{name: cmd + " config: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, "config.json", build())
		return hostileRun{args: withCheckpoint(cmd, e, "--config", p, "--arch", e.fx("model.txt"), "--out", filepath.Join(out, "m.ebnn")), blame: []string{p}}
	}}
}

// archCase is a hostile printed architecture for convert or plan, with extra flags.
func archCase(name, cmd string, build func() []byte, extra ...string) hostileCase {
	return hostileCase{name: cmd + " arch: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, "model.txt", build())
		args := withCheckpoint(cmd, e, "--arch", p, "--config", e.fx("inference_config.json"), "--out", filepath.Join(out, "m.ebnn"))
		return hostileRun{args: append(args, extra...), blame: []string{p}}
	}}
}

// withCheckpoint returns cmd's command line: convert gets the fixture's checkpoint.
func withCheckpoint(cmd string, e hostileEnv, args ...string) []string {
	if cmd == "convert" {
		args = append([]string{"--checkpoint", e.fx("state_dict.safetensors")}, args...)
	}
	return append([]string{cmd}, args...)
}

// inputCase is a hostile prediction input file for predict on the real model.
func inputCase(name, file string, build func() []byte) hostileCase {
	return hostileCase{name: "predict input: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, file, build())
		return hostileRun{args: []string{"predict", "--model", e.model, "--input", p, "--samples", "4"}, blame: []string{p}}
	}}
}

// boardsCase is a hostile profile in the directory of boards --dir.
func boardsCase(name string, make func(t *testing.T, path string)) hostileCase {
	return hostileCase{name: "boards --dir: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := filepath.Join(in, "evil.json")
		make(t, p)
		return hostileRun{args: []string{"boards", "--dir", in}, blame: []string{p}}
	}}
}

// trainCase is a hostile train config file; flags are added to the command line.
func trainCase(name, config, blame string) hostileCase {
	return hostileCase{name: "train config: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, "train.json", []byte(config))
		return hostileRun{args: []string{"train", "--quiet", "--no-plots", "--config", p, "--out", filepath.Join(out, "m.ebnn")}, blame: []string{blame}}
	}}
}

// trainBase is a small valid train config; hostile cases add one key.
const trainBase = `"data": "toy1d", "task": "regression", "arch": "mlp:1-8-1", "posterior": "deterministic", "test_fraction": 0`

// hostileCases is the table of TestHostileInputsCLI.
func hostileCases() []hostileCase {
	const mib = 1 << 20
	half := func(n int) int { return n / 2 }
	var cs []hostileCase
	for _, cmd := range []string{"predict", "bench", "inspect"} {
		cs = append(cs,
			modelCase("empty", cmd, bytesModel(func(*testing.T, hostileEnv) []byte { return nil })),
			modelCase("header only", cmd, truncatedModel(func(int) int { return 64 })),
			modelCase("truncated in half", cmd, truncatedModel(half)),
			modelCase("last byte cut", cmd, truncatedModel(func(n int) int { return n - 1 })),
			modelCase("random 1 MB", cmd, bytesModel(func(*testing.T, hostileEnv) []byte { return seededBytes(mib, 14) })),
		)
	}
	magicRandom := func(*testing.T, hostileEnv) []byte {
		b := seededBytes(mib, 15)
		copy(b, "EBNN\x00\r\n\x1a\x01\x00")
		return b
	}
	cs = append(cs,
		modelCase("magic then random", "predict", bytesModel(magicRandom)),
		modelCase("count 2^32-1", "inspect", bytesModel(func(*testing.T, hostileEnv) []byte {
			return ebnnFile(1<<32-1, 256, mib, nil, make([]byte, mib-64))
		})),
		modelCase("count 65536, table beyond the file", "predict", bytesModel(func(*testing.T, hostileEnv) []byte {
			return ebnnFile(65536, 256, 64+65536*256, nil, make([]byte, mib-64))
		})),
		modelCase("entry size 2^32-1", "inspect", bytesModel(func(*testing.T, hostileEnv) []byte {
			return ebnnFile(16, 1<<32-1, mib, nil, make([]byte, mib-64))
		})),
		modelCase("file size 2^64-1", "predict", bytesModel(func(*testing.T, hostileEnv) []byte {
			return ebnnFile(0, 256, 1<<64-1, nil, nil)
		})),
		modelCase("blob of 2^30 bytes claimed", "predict", bytesModel(hugeSection(
			ebnnEntry{encoding: 7, name: "meta", stored: 1 << 30, raw: 1 << 30}, 320+1<<30, mib))),
		modelCase("blob of 2^62 bytes, true file size", "inspect", bytesModel(hugeSection(
			ebnnEntry{encoding: 7, name: "meta", stored: 1 << 62, raw: 1 << 62}, 0, mib))),
		modelCase("zstd meta declaring 2^30 bytes", "predict", bytesModel(func(*testing.T, hostileEnv) []byte {
			return sectionFile(ebnnEntry{encoding: 7, compression: 1, name: "meta", raw: 1 << 30}, zstdZeros(1<<30, 1<<30))
		})),
		modelCase("zstd meta of 1 KiB inflating to 2^30 bytes", "inspect", bytesModel(func(*testing.T, hostileEnv) []byte {
			return sectionFile(ebnnEntry{encoding: 7, compression: 1, name: "meta", raw: 1 << 10}, zstdZeros(1<<30, 1<<10))
		})),
		modelCase("zstd weight inflating to 2^30 bytes", "predict", bytesModel(func(*testing.T, hostileEnv) []byte {
			// A deterministic 784 → 512 linear layer whose weight (declared 1.6 MB) inflates to 1 GiB.
			meta := `{"version":1,"task":"regression","noise_var":1,"input_shape":[784],` +
				`"layers":[{"name":"fc","op":"linear","in":784,"out":512}]}`
			return sectionsFile([]ebnnEntry{
				{encoding: 1, compression: 1, rank: 2, name: "fc.weight", raw: 4 * 784 * 512, dims: []uint64{512, 784}},
				{encoding: 7, name: "meta", raw: uint64(len(meta))},
			}, [][]byte{zstdZeros(1<<30, 4*784*512), []byte(meta)})
		})),
		modelCase("tensor of 2^28 x 2^28", "inspect", bytesModel(hugeSection(
			ebnnEntry{encoding: 1, rank: 2, name: "w", stored: 1 << 30, raw: 1 << 30, dims: []uint64{1 << 28, 1 << 28}}, 0, mib))),
		modelCase("meta bytes flipped", "predict", flippedModel(`"in":784`, `"in":999`)),
		modelCase("meta widths 1e9", "predict", editedModel(`"in":784,"out":128`, `"in":1000000000,"out":1000000000`)),
		modelCase("meta input shape 1e9", "predict", editedModel(`"input_shape":[784]`, `"input_shape":[1000000000]`)),
		modelCase("meta input shape 1e9", "bench", editedModel(`"input_shape":[784]`, `"input_shape":[1000000000]`)),
		modelCase("meta conv input 65536^3", "bench", specModel(`{"version":1,"task":"classification","input_shape":[65536,65536,65536],`+
			`"layers":[{"name":"0","op":"flatten"}]}`, nil)),
		modelCase("spec of 1e9 features, no tensors", "bench", specModel(`{"version":1,"task":"regression","noise_var":1,"input_shape":[1000000000],`+
			`"layers":[{"name":"0","op":"relu"}]}`, nil)),
		modelCase("linear 1e9 x 1e9, tiny tensors", "bench", specModel(`{"version":1,"task":"classification","input_shape":[1000000000],`+
			`"layers":[{"name":"fc","op":"linear","in":1000000000,"out":1000000000,"bias":true}]}`,
			map[string][]int{"fc.weight": {2, 2}, "fc.bias": {2}})),
		modelCase("meta deeply nested", "inspect", specModel(string(nestText(`{"a":`, "1", "}", 100000)), nil)),
		modelCase("meta of 20000 layers", "predict", specModel(`{"version":1,"task":"classification","input_shape":[784],"layers":[`+
			strings.TrimSuffix(strings.Repeat(`{"name":"r","op":"relu"},`, 20000), ",")+`]}`, nil)),
	)

	// safetensors checkpoints for convert.
	cs = append(cs,
		checkpointCase("header length 2^62", "c.safetensors", func(*testing.T) []byte {
			return safetensorsFile(1<<62, "{}", nil)
		}),
		checkpointCase("header length beyond the file", "c.safetensors", func(*testing.T) []byte {
			return safetensorsFile(100*mib, `{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`, make([]byte, 4))
		}),
		checkpointCase("huge shapes and offsets", "c.safetensors", func(*testing.T) []byte {
			h := `{"1.z_row":{"dtype":"F32","shape":[1000000000,1000000000],"data_offsets":[0,4000000000000000000]}}`
			return safetensorsFile(uint64(len(h)), h, make([]byte, 64))
		}),
		checkpointCase("shape product overflows", "c.safetensors", func(*testing.T) []byte {
			h := `{"1.z_row":{"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,0]}}`
			return safetensorsFile(uint64(len(h)), h, nil)
		}),
		checkpointCase("deeply nested header", "c.safetensors", func(*testing.T) []byte {
			h := nestText("[", "", "]", mib/2-8)
			return safetensorsFile(uint64(len(h)), string(h), nil)
		}),
		checkpointCase("deeply nested objects in the header", "c.safetensors", func(*testing.T) []byte {
			h := nestText(`{"a":`, "1", "}", mib/8)
			return safetensorsFile(uint64(len(h)), string(h), nil)
		}),
		checkpointCase("name claimed 50 MB", "c.safetensors", func(*testing.T) []byte {
			h := `{"` + strings.Repeat("n", mib-64)
			return safetensorsFile(50*mib, h, nil)
		}),
		checkpointCase("name of 1 MB", "c.safetensors", func(*testing.T) []byte {
			h := `{"` + strings.Repeat("n", mib-128) + `":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}`
			return safetensorsFile(uint64(len(h)), h, make([]byte, 4))
		}).alsoBlames("checkpoint"),
		checkpointCase("15000 tensors", "c.safetensors", func(*testing.T) []byte {
			var h strings.Builder
			h.WriteByte('{')
			for i := range 15000 {
				if i > 0 {
					h.WriteByte(',')
				}
				fmt.Fprintf(&h, `"t%d":{"dtype":"F32","shape":[1],"data_offsets":[%d,%d]}`, i, 4*i, 4*i+4)
			}
			h.WriteByte('}')
			return safetensorsFile(uint64(h.Len()), h.String(), make([]byte, 4*15000))
		}).alsoBlames("checkpoint"),
	)

	// torch.save zips for convert.
	cs = append(cs,
		checkpointCase("zip bomb, declared", "c.pt", func(t *testing.T) []byte {
			const numel = 900 << 20 / 4
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: tensorDict("1.z_row", numel, 0, []int{2}, []int{1})},
				testutil.ZipMember{Name: "archive/data/0", Deflate: testutil.ZerosDeflate(900), Declared: numel * 4})
		}),
		checkpointCase("zip bomb, undeclared", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: tensorDict("1.z_row", 2, 0, []int{2}, []int{1})},
				testutil.ZipMember{Name: "archive/data/0", Deflate: testutil.ZerosDeflate(900), Declared: 8})
		}),
		checkpointCase("pickle bomb", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Deflate: testutil.ZerosDeflate(900), Declared: 900 << 20})
		}),
		checkpointCase("stride-0 view", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: tensorDict("1.z_row", 1, 0, []int{400_000_000}, []int{0})},
				testutil.ZipMember{Name: "archive/data/0", Data: make([]byte, 4)})
		}),
		checkpointCase("stride-0 2-d view", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: tensorDict("1.z_row", 4, 0, []int{30000, 30000}, []int{0, 0})},
				testutil.ZipMember{Name: "archive/data/0", Data: make([]byte, 16)})
		}),
		checkpointCase("offset 2^30", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: tensorDict("1.z_row", 4, 1<<30, []int{2}, []int{1})},
				testutil.ZipMember{Name: "archive/data/0", Data: make([]byte, 16)})
		}),
		checkpointCase("repeated DUP", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: repeatedPickle([]byte{'}'}, []byte{'2'}, mib-200)})
		}),
		checkpointCase("repeated MARK", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: repeatedPickle(nil, []byte{'('}, mib-200)})
		}),
		checkpointCase("repeated MARK EMPTY_DICT DUP", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: repeatedPickle(nil, []byte{'(', '}', '2'}, mib-200)})
		}),
		checkpointCase("list appended to itself", "c.pt", func(t *testing.T) []byte {
			return testutil.Zip(t, testutil.ZipMember{Name: "archive/data.pkl", Data: repeatedPickle([]byte{']', '2'}, []byte{'2', 'a'}, mib-200)})
		}),
		checkpointCase("random bytes", "c.pt", func(*testing.T) []byte { return seededBytes(mib, 16) }),
	)

	// Inference configs and printed architectures for convert and plan.
	for _, cmd := range []string{"convert", "plan"} {
		cs = append(cs,
			configCase("deeply nested", cmd, func() []byte { return nestText("[", "", "]", mib/2-1) }),
			configCase("deeply nested objects", cmd, func() []byte { return nestText(`{"inference":`, "1", "}", mib/16) }),
			configCase("numbers 1e308", cmd, func() []byte {
				return []byte(`{"inference": {"Linear": {"inference": "inducing", "inducing_rows": 1e308, "inducing_cols": 1e308, "prior_sd": 1e308}}}`)
			}),
			configCase("NaN-ish strings", cmd, func() []byte {
				return []byte(`{"inference": {"Linear": {"inference": "inducing", "inducing_rows": "NaN", "inducing_cols": "Infinity", "prior_sd": "-Inf"}}}`)
			}),
			configCase("1 MB of keys", cmd, func() []byte { return manyKeys(mib) }),
		)
		// convert finds the architecture and the checkpoint disagree; plan must refuse the
		// 10¹⁰ parameters by memory.
		huge := archCase("Linear 100000 x 100000", cmd, func() []byte {
			return []byte("Sequential(\n  (0): Linear(in_features=100000, out_features=100000, bias=True)\n)\n")
		}, "--classes", "100000")
		deepIndented := archCase("deep nesting, indented", cmd, func() []byte {
			const depth = 600
			var b strings.Builder
			b.WriteString("Sequential(\n")
			for i := 1; i < depth; i++ {
				b.WriteString(strings.Repeat("  ", i) + "(0): Sequential(\n")
			}
			b.WriteString(strings.Repeat("  ", depth) + "(0): Linear(in_features=784, out_features=10, bias=True)\n")
			for i := depth - 1; i >= 0; i-- {
				b.WriteString(strings.Repeat("  ", i) + ")\n")
			}
			return []byte(b.String())
		})
		if cmd == "convert" {
			huge = huge.alsoBlames("checkpoint")
			deepIndented = deepIndented.alsoBlames("checkpoint")
		}
		cs = append(cs, huge, deepIndented,
			archCase("deep nesting", cmd, func() []byte {
				return nestText("Sequential(\n", "  (0): ReLU()\n", ")\n", mib/16)
			}),
			archCase("1 MB line", cmd, func() []byte {
				return []byte("Sequential(\n  (0): Linear(in_features=784, " + strings.Repeat("x", mib-100) + "\n)\n")
			}),
			archCase("100000 layers", cmd, func() []byte {
				var b strings.Builder
				b.WriteString("Sequential(\n")
				for i := 0; b.Len() < mib-40; i++ {
					fmt.Fprintf(&b, "  (%d): ReLU()\n", i)
				}
				b.WriteString(")\n")
				return []byte(b.String())
			}, "--input-shape", "784"),
		)
	}

	// plan without a config: 10¹⁰ deterministic parameters must be refused by memory.
	cs = append(cs, hostileCase{name: "plan arch: Linear 100000 x 100000, deterministic", setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
		p := writeHostile(t, in, "model.txt", []byte("Sequential(\n  (0): Linear(in_features=100000, out_features=100000, bias=True)\n)\n"))
		return hostileRun{args: []string{"plan", "--arch", p, "--classes", "100000", "--out", filepath.Join(out, "m.ebnn")}, blame: []string{p, "architecture"}}
	}})

	// Prediction inputs.
	cs = append(cs,
		inputCase("1 MB single line", "x.csv", func() []byte { return []byte(csvRow("0.5", mib/4-1)) }),
		inputCase("1 MB line without newline", "x.csv", func() []byte { return bytes.Repeat([]byte("9"), mib) }),
		inputCase("ragged rows", "x.csv", func() []byte { return []byte(csvRow("0.5", 784) + csvRow("0.5", 783) + csvRow("0.5", 784)) }),
		inputCase("1e20 values", "x.csv", func() []byte { return []byte(csvRow("1e20", 784)) }),
		inputCase("1e39 values", "x.csv", func() []byte { return []byte(csvRow("1e39", 784)) }),
		inputCase("NaN values", "x.csv", func() []byte { return []byte(csvRow("NaN", 784)) }),
		inputCase("zero rows", "x.csv", func() []byte { return nil }),
		inputCase("header only", "x.csv", func() []byte { return []byte(csvRow("a", 784)) }),
		inputCase("safetensors zero rows", "x.safetensors", func() []byte {
			h := `{"inputs":{"dtype":"F32","shape":[0,784],"data_offsets":[0,0]}}`
			return safetensorsFile(uint64(len(h)), h, nil)
		}),
		inputCase("safetensors huge shape", "x.safetensors", func() []byte {
			h := `{"inputs":{"dtype":"F32","shape":[1000000000000,784],"data_offsets":[0,3136]}}`
			return safetensorsFile(uint64(len(h)), h, make([]byte, 3136))
		}),
		inputCase("safetensors header length 2^62", "x.safetensors", func() []byte { return safetensorsFile(1<<62, "{}", nil) }),
		inputCase("safetensors 1e20 values", "x.safetensors", func() []byte {
			h := `{"inputs":{"dtype":"F64","shape":[1,784],"data_offsets":[0,6272]}}`
			data := make([]byte, 0, 6272)
			for range 784 {
				data = lendian.AppendUint64(data, 0x4415AF1D78B58C40) // 1e20
			}
			return safetensorsFile(uint64(len(h)), h, data)
		}),
	)

	// Board profiles.
	cs = append(cs,
		boardsCase("1 MB JSON", func(t *testing.T, p string) {
			writeHostile(t, filepath.Dir(p), filepath.Base(p), manyKeys(mib))
		}),
		boardsCase("deeply nested JSON", func(t *testing.T, p string) {
			writeHostile(t, filepath.Dir(p), filepath.Base(p), nestText("[", "", "]", mib/2))
		}),
		boardsCase("60 KB deeply nested JSON", func(t *testing.T, p string) {
			writeHostile(t, filepath.Dir(p), filepath.Base(p), nestText("[", "", "]", 30000))
		}),
		boardsCase("60 KB of keys", func(t *testing.T, p string) {
			writeHostile(t, filepath.Dir(p), filepath.Base(p), manyKeys(60000))
		}),
		boardsCase("symlink to /dev/zero", func(t *testing.T, p string) { testutil.DevZero(t, p) }),
		boardsCase("FIFO", func(t *testing.T, p string) { testutil.Mkfifo(t, p) }),
	)

	// Flags: huge values are refused, naming the flag (or the setting), before anything is
	// allocated for them.
	flagCase := func(name, blame string, args func(t *testing.T, e hostileEnv, in, out string) []string) hostileCase {
		return hostileCase{name: "flags: " + name, setup: func(t *testing.T, e hostileEnv, in, out string) hostileRun {
			return hostileRun{args: args(t, e, in, out), blame: []string{blame}}
		}}
	}
	const huge = "2000000000"
	cs = append(cs,
		flagCase("predict --samples 2e9", "--samples", func(_ *testing.T, e hostileEnv, _, _ string) []string {
			return []string{"predict", "--model", e.model, "--input", e.fx("reference.safetensors"), "--samples", huge}
		}),
		flagCase("predict --batch 2e9 --threads 100000", "--batch", func(_ *testing.T, e hostileEnv, _, _ string) []string {
			return []string{"predict", "--model", e.model, "--input", e.fx("reference.safetensors"), "--batch", huge, "--threads", "100000"}
		}),
		flagCase("bench --samples 2e9", "--samples", func(_ *testing.T, e hostileEnv, _, _ string) []string {
			return []string{"bench", "--model", e.model, "--samples", huge, "--count", "1"}
		}),
		flagCase("plan --samples 2e9 --batch 2e9", "samples", func(_ *testing.T, e hostileEnv, _, out string) []string {
			return []string{"plan", "--arch", e.fx("model.txt"), "--config", e.fx("inference_config.json"), "--samples", huge, "--batch", huge,
				"--out", filepath.Join(out, "m.ebnn")}
		}),
		flagCase("convert --input-shape 65536,65536,65536", "input_shape", func(_ *testing.T, e hostileEnv, _, out string) []string {
			return []string{"convert", "--checkpoint", e.fx("state_dict.safetensors"), "--config", e.fx("inference_config.json"),
				"--arch", e.fx("model.txt"), "--input-shape", "65536,65536,65536", "--out", filepath.Join(out, "m.ebnn")}
		}),
		flagCase("convert --validate with a 2^62 header", "v.safetensors", func(t *testing.T, e hostileEnv, in, out string) []string {
			v := writeHostile(t, in, "v.safetensors", safetensorsFile(1<<62, "{}", nil))
			return []string{"convert", "--checkpoint", e.fx("state_dict.safetensors"), "--config", e.fx("inference_config.json"),
				"--arch", e.fx("model.txt"), "--validate", v, "--out", filepath.Join(out, "m.ebnn")}
		}),
	)

	// Train configs.
	cs = append(cs,
		trainCase("epochs 1e12", `{`+trainBase+`, "epochs": 1000000000000}`, "epochs"),
		trainCase("batch_size 1e12", `{`+trainBase+`, "batch_size": 1000000000000}`, "batch_size"),
		trainCase("train_samples 1e12", `{`+trainBase+`, "train_samples": 1000000000000}`, "train_samples"),
		trainCase("arch width 1e9", `{`+trainBase[:strings.Index(trainBase, `"arch"`)]+`"arch": "mlp:1-1000000000-1", "posterior": "deterministic"}`, "arch"),
		trainCase("deeply nested", string(nestText("[", "", "]", mib/2)), "train.json"),
	)
	return cs
}
