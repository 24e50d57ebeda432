package statedict_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/convert/statedict"
)

func Example() {
	pt, err := statedict.Load("../../testdata/bayesianize/mlp_ffgu/state_dict.pt")
	if err != nil {
		fmt.Println(err)
		return
	}
	st, err := statedict.Load("../../testdata/bayesianize/mlp_ffgu/state_dict.safetensors")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(statedict.Equal(pt, st))
	z, _ := pt.Get("1.z_row")
	fmt.Println(z.DType, z.Shape, len(z.F32))
	l, _ := pt.Get("1._lamda")
	fmt.Println(l.Shape, l.Scalar)
	// Output:
	// <nil>
	// F32 [16 128] 2048
	// [1] true
}
