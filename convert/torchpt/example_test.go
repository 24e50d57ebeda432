package torchpt_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/convert/torchpt"
)

func Example() {
	tensors, err := torchpt.ReadFile("../../testdata/bayesianize/mlp_ffgu/state_dict.pt")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, t := range tensors[:3] {
		fmt.Println(t.Name, t.DType, t.Shape)
	}
	// Output:
	// 1.z_row F32 [16 128]
	// 1.z_col F32 [24 785]
	// 1.inducing_mean F32 [16 24]
}
