package safetensors_test

import (
	"bytes"
	"fmt"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

func Example() {
	w, _ := safetensors.NewF32("layer.weight", []int{2, 2}, []float32{1, 2, 3, 4})
	n, _ := safetensors.NewI64("layer.count", []int{}, []int64{7})
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, []safetensors.Tensor{w, n}, map[string]string{"format": "pt"}); err != nil {
		fmt.Println(err)
		return
	}

	f, err := safetensors.Parse(buf.Bytes())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(f.Names(), f.Metadata["format"])
	t, _ := f.Tensor("layer.weight")
	vals, _ := t.Float32s()
	fmt.Println(t.DType, t.Shape, vals)
	// Output:
	// [layer.count layer.weight] pt
	// F32 [2 2] [1 2 3 4]
}
