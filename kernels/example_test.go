package kernels_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/kernels"
)

func ExampleGemm() {
	// C = A·Bᵀ with A 2×3 and B 2×3 (so op(B) = Bᵀ is 3×2).
	a := []float32{
		1, 2, 3,
		4, 5, 6,
	}
	b := []float32{
		1, 0, 1,
		0, 1, 0,
	}
	c := make([]float32, 2*2)
	kernels.Gemm(false, true, 2, 2, 3, 1, a, 3, b, 3, 0, c, 2)
	fmt.Println(c)
	// Output: [4 2 10 5]
}

func ExampleStream() {
	// One stream per (sample, layer): the same identifiers always give the same numbers.
	s := kernels.NewStream(2024, 0, 3)
	z := make([]float32, 4)
	s.Normal(z)

	again := kernels.NewStream(2024, 0, 3)
	z2 := make([]float32, 4)
	again.Normal(z2)

	other := kernels.NewStream(2024, 1, 3)
	z3 := make([]float32, 4)
	other.Normal(z3)

	fmt.Println(z[0] == z2[0] && z[3] == z2[3], z[0] == z3[0])
	// Output: true false
}
