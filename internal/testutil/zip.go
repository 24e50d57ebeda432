package testutil

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"testing"
)

// ZipMember is one member of a hand-made (torch.save-like) zip: Data stored as is, or, when
// Deflate is set, that raw deflate stream declared to inflate to Declared bytes (which may lie).
type ZipMember struct {
	Name     string
	Data     []byte
	Deflate  []byte
	Declared uint64
}

// Zip returns the zip archive of ms, in order.
func Zip(t testing.TB, ms ...ZipMember) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	for _, m := range ms {
		h := &zip.FileHeader{Name: m.Name, Method: zip.Store}
		body, create := m.Data, w.CreateHeader
		if m.Deflate != nil {
			h.Method, h.CompressedSize64, h.UncompressedSize64 = zip.Deflate, uint64(len(m.Deflate)), m.Declared
			body, create = m.Deflate, w.CreateRaw
		}
		f, err := create(h)
		if err != nil {
			t.Fatal(err)
		}
		f.Write(body)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// ZerosDeflate returns a raw deflate stream that inflates to mib MiB of zeros: one MiB of zeros
// compressed and sync-flushed (so it ends on a byte boundary, not final), that many times, then
// an empty final block. Each copy's back-references reach only zeros.
func ZerosDeflate(mib int) []byte {
	var one bytes.Buffer
	fw, _ := flate.NewWriter(&one, flate.BestCompression)
	fw.Write(make([]byte, 1<<20))
	fw.Flush()
	out := bytes.Repeat(one.Bytes(), mib)
	return append(out, 0x03, 0x00) // final, fixed-Huffman, empty block
}
