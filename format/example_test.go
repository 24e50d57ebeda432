package format_test

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/edgebnn/edgebnn/format"
)

// Example writes a container with a dense tensor, a pruned tensor and JSON
// metadata, then reads it back.
func Example() {
	w := format.NewWriter()
	if _, err := w.AddTensor("fc.weight", []int{2, 3}, []float32{1, 2, 3, 4, 5, 6}, format.AddOptions{}); err != nil {
		log.Fatal(err)
	}
	pruned := make([]float32, 64*64)
	pruned[5], pruned[700] = 0.5, -1.25
	rep, err := w.AddTensor("fc.mask", []int{64, 64}, pruned, format.AddOptions{Sparse: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s stored as %v: %d bytes instead of %d\n", rep.Name, rep.Encoding, rep.StoredBytes, rep.DenseF32Bytes)
	if err := w.AddBlob("meta", []byte(`{"arch":"mlp"}`), false); err != nil {
		log.Fatal(err)
	}

	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		log.Fatal(err)
	}
	f, err := format.Decode(buf.Bytes())
	if err != nil {
		log.Fatal(err)
	}
	if err := f.Verify(); err != nil {
		log.Fatal(err)
	}
	t, err := f.Tensor("fc.weight")
	if err != nil {
		log.Fatal(err)
	}
	x, err := t.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(t.Shape(), x)
	m, _ := f.Tensor("fc.mask")
	y, err := m.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(y[5], y[700])
	meta, _ := f.Blob("meta")
	fmt.Println(string(meta), f.Tensors())
	// Output:
	// fc.mask stored as CSRF32: 276 bytes instead of 16384
	// [2 3] [1 2 3 4 5 6]
	// 0.5 -1.25
	// {"arch":"mlp"} [fc.weight fc.mask]
}

// ExampleOpen saves a container atomically and memory-maps it back.
func ExampleOpen() {
	dir, err := os.MkdirTemp("", "ebnn")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "model.ebnn")

	w := format.NewWriter()
	if _, err := w.AddTensor("bias", []int{4}, []float32{0.1, 0.2, 0.3, 0.4}, format.AddOptions{F16: true}); err != nil {
		log.Fatal(err)
	}
	if err := w.WriteFile(path, format.WriteOptions{}); err != nil {
		log.Fatal(err)
	}

	f, err := format.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	for _, s := range f.Sections() {
		fmt.Println(s.Name, s.Kind, s.Encoding, s.Shape, s.Offset%64 == 0)
	}
	t, _ := f.Tensor("bias")
	x, err := t.Float32s()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", x)
	// Output:
	// bias tensor F16 [4] true
	// [0.1000 0.2000 0.3000 0.3999]
}

// ExampleWriter_WriteFile shows the writer refusing to replace its source.
func ExampleWriter_WriteFile() {
	dir, _ := os.MkdirTemp("", "ebnn")
	defer os.RemoveAll(dir)
	src := filepath.Join(dir, "model.ebnn")
	w := format.NewWriter()
	_ = w.AddBlob("meta", []byte("{}"), false)
	_ = w.WriteFile(src, format.WriteOptions{})

	err := w.WriteFile(src, format.WriteOptions{Sources: []string{src}})
	fmt.Println(err != nil)
	// Output: true
}
