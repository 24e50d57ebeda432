package format

import (
	"bytes"
	"testing"
)

// TestAddBlobOwnedSameBytes: AddBlobOwned writes the container AddBlob writes, compressed or not,
// empty or not.
func TestAddBlobOwnedSameBytes(t *testing.T) {
	big := bytes.Repeat([]byte("edgebnn state "), 1000)
	for _, tc := range []struct {
		name     string
		data     []byte
		compress bool
	}{{"empty", nil, false}, {"small", []byte("{}"), false}, {"big", big, false}, {"big zstd", big, true}} {
		var out [2]bytes.Buffer
		for i, owned := range []bool{false, true} {
			w := NewWriter()
			if _, err := w.AddTensor("t", []int{2}, []float32{1, 2}, AddOptions{}); err != nil {
				t.Fatal(err)
			}
			data := append([]byte(nil), tc.data...)
			add := w.AddBlob
			if owned {
				add = w.AddBlobOwned
			}
			if err := add("state", data, tc.compress); err != nil {
				t.Fatal(err)
			}
			if _, err := w.WriteTo(&out[i]); err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
			t.Errorf("%s: AddBlobOwned wrote %d bytes that differ from AddBlob's %d", tc.name, out[1].Len(), out[0].Len())
		}
		f, err := Decode(out[1].Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if b, err := f.Blob("state"); err != nil || !bytes.Equal(b, tc.data) {
			t.Errorf("%s: blob read back %d bytes (%v), want %d", tc.name, len(b), err, len(tc.data))
		}
	}
}
