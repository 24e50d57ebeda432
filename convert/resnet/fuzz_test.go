package resnet

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/edgebnn/edgebnn/internal/clip"
)

// fuzzJSONSeeds are the seed inputs of FuzzParseJSON (also in testdata/fuzz/FuzzParseJSON):
// the shipped residual architecture, a flat torcharch document, nesting, and broken documents.
func fuzzJSONSeeds(tb testing.TB) [][]byte {
	example, err := os.ReadFile(exampleArch)
	if err != nil {
		tb.Fatal(err)
	}
	return [][]byte{
		example,
		[]byte(`{"layers": [{"name": "0", "type": "Linear", "in_features": 4, "out_features": 2},` +
			` {"name": "1", "type": "ReLU"}, {"name": "2", "type": "InducingLinear", "in_features": 2,` +
			` "out_features": 1, "inducing_rows": 2, "inducing_cols": 2}]}`),
		[]byte(`{"layers": [{"name": "b", "type": "Residual", "body": [{"name": "b.r", "type": "Residual",` +
			` "body": [{"name": "b.r.l", "type": "Linear", "in_features": 3, "out_features": 3}]}],` +
			` "shortcut": [{"name": "b.s", "type": "Identity"}]}, {"name": "r", "type": "ReLU"}, {"name": "r", "type": "ReLU"}]}`),
		[]byte(`{"layers": [{"name": "b", "type": "Residual", "body": []}]}`),
		[]byte(`{"layers": [{"name": "x", "type": "Linear", "in_features": 1, "out_features": 1},` +
			` {"name": "b", "type": "Residual", "body": [{"name": "x", "type": "Linear", "in_features": 1, "out_features": 1}]}]}`),
		[]byte(`{"layers": [{"name": "c", "type": "Conv2d", "in_channels": 1, "out_channels": 2, "kernel_size": [3, 5],` +
			` "stride": 2, "padding": [1, 2], "dilation": 1, "groups": 1, "bias": true}], "extra": 1}`),
		[]byte(`{"layers": null}`),
		[]byte(`{"layers": []} {}`),
	}
}

// TestWriteParseJSONCorpus regenerates testdata/fuzz/FuzzParseJSON when EBNN_WRITE_CORPUS=1.
func TestWriteParseJSONCorpus(t *testing.T) {
	if os.Getenv("EBNN_WRITE_CORPUS") != "1" {
		t.Skip("set EBNN_WRITE_CORPUS=1 to regenerate the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParseJSON")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range fuzzJSONSeeds(t) {
		h := fnv.New64a()
		h.Write(b)
		content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%016x", h.Sum64())), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// FuzzParseJSON: ParseJSON never panics, its errors stay short whatever the input's size, and
// a tree it accepts is written by WriteJSON and read back as the same tree.
func FuzzParseJSON(f *testing.F) {
	for _, b := range fuzzJSONSeeds(f) {
		f.Add(b)
	}
	// Room for the "resnet: json architecture: " prefix and a layer path of MaxNesting levels
	// around a message clipped to clip.MaxMessage.
	const maxErr = 2 * clip.MaxMessage
	f.Fuzz(func(t *testing.T, data []byte) {
		nodes, err := ParseJSON(bytes.NewReader(data))
		if err != nil {
			if n := len(err.Error()); n > maxErr {
				t.Fatalf("a %d-byte error for a %d-byte input: %.200s…", n, len(data), err)
			}
			return
		}
		var buf bytes.Buffer
		if err := WriteJSON(&buf, nodes); err != nil {
			t.Fatalf("WriteJSON of an accepted tree: %v", err)
		}
		back, err := ParseJSON(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("round trip: %v\n%s", err, buf.String())
		}
		if !reflect.DeepEqual(back, nodes) {
			t.Fatalf("round trip differs:\n%s\nwant\n%s", shape(back), shape(nodes))
		}
	})
}
