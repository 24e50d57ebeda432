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

func ExampleCholeskySolve() {
	// Solve A x = b for the symmetric positive definite A = [[4, 2], [2, 3]].
	a := []float64{
		4, 2,
		2, 3,
	}
	if err := kernels.Cholesky(a, 2); err != nil {
		fmt.Println(err)
		return
	}
	b := []float64{2, 5} // one right-hand side: B is 2×1
	kernels.CholeskySolve(a, 2, b, 1)
	fmt.Printf("L = %v, x = [%.4f %.4f]\n", a, b[0], b[1])
	// Output: L = [2 0 1 1.4142135623730951], x = [-0.5000 2.0000]
}
