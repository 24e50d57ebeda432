package train

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/train/fa"
)

// TestFAStateEncoderBytes: the train.fa blob faStateEncoder generates in 64 KiB pieces, and the
// checkpoint section AddBlobFunc writes from it, are the bytes of the blob encoded whole (the
// encoding before the encoder), with buffers across piece boundaries; decodeFAState reads them.
func TestFAStateEncoderBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	s := fa.State{Ints: map[string]int64{"steps": 7, "rank": 3}, Bytes: map[string][]byte{"rng": {1, 2, 3}},
		Floats: map[string][]float64{}}
	for name, n := range map[string]int{"c": 20011, "f": 60033, "gamma": 8191, "one": 1, "none": 0} {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		s.Floats[name] = v
	}
	// The whole-blob encoding, as encodeFAState wrote it before faStateEncoder.
	h := faStateHeader{Kind: "vifa", Ints: s.Ints, Bytes: s.Bytes, AvgN: 5}
	var names []string
	for n := range s.Floats {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		h.Buffers = append(h.Buffers, faBuffer{n, len(s.Floats[n])})
	}
	head, err := json.Marshal(&h)
	if err != nil {
		t.Fatal(err)
	}
	want := binary.LittleEndian.AppendUint32(nil, uint32(len(head)))
	want = append(want, head...)
	for _, n := range names {
		for _, v := range s.Floats[n] {
			want = binary.LittleEndian.AppendUint64(want, math.Float64bits(v))
		}
	}
	got, err := encodeFAState("vifa", s, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("the encoder's blob (%d bytes) differs from the whole encoding (%d bytes)", len(got), len(want))
	}
	enc, err := newFAStateEncoder("vifa", s, 5)
	if err != nil {
		t.Fatal(err)
	}
	w := format.NewWriter()
	if err := w.AddBlobFunc(faStateBlob, enc.size, enc.writeTo); err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := w.WriteTo(&file); err != nil {
		t.Fatal(err)
	}
	f, err := format.Decode(file.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	blob, err := f.Blob(faStateBlob)
	if err != nil || !bytes.Equal(blob, want) {
		t.Fatalf("the checkpoint's blob (%d bytes, %v) differs from the whole encoding", len(blob), err)
	}
	kind, back, avgN, err := decodeFAState(blob)
	if err != nil || kind != "vifa" || avgN != 5 || len(back.Floats["f"]) != 60033 || back.Floats["f"][60032] != s.Floats["f"][60032] {
		t.Fatalf("decoded %q, avg_n %d, %v", kind, avgN, err)
	}
}
