package quant_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/quant"
)

func Example() {
	keep, why := quant.KeepF32("fc.inducing_mean", 640)
	fmt.Println(keep, why)
	_, rep, err := quant.Quantize("fc.z_col", []float32{1, 0.1, 3.14159}, false)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("max abs %.2g, max rel %.2g\n", rep.MaxAbsErr, rep.MaxRelErr)
	// Output:
	// true statistics of q(U)
	// max abs 0.00097, max rel 0.00031
}
