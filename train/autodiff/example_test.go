package autodiff_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/train/autodiff"
)

// A linear model's squared error and its gradient with respect to the weights.
func Example() {
	w, _ := autodiff.NewParam("w", []float64{0.5, -1}, 1, 2) // (out=1, in=2)
	b, _ := autodiff.NewParam("b", []float64{0.25}, 1)
	x := []float64{1, 2, 3, 4} // two examples of two features
	y := []float64{1, 0}

	tape := autodiff.NewTape[float64]()
	pred := tape.Linear(tape.Const(x, 2, 2), tape.Param(w), tape.Param(b)) // (2, 1)
	diff := tape.Sub(tape.Reshape(pred, 2), tape.Const(y, 2))
	loss := tape.Mean(tape.Square(diff))
	if err := tape.Backward(loss); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("loss %.4f\n", loss.Item())
	fmt.Printf("dL/dw %.4f, dL/db %.4f\n", w.Grad, b.Grad)
	// Output:
	// loss 5.0625
	// dL/dw [-9.0000 -13.5000], dL/db [-4.5000]
}

// Building bayesianize's lower-triangular scale from a vector and using it in a Gaussian
// log-density term: log det and a Cholesky solve.
func ExampleTape_VecToChol() {
	tape := autodiff.NewTape[float64]()
	v := tape.Leaf([]float64{0, 0, 0.5}, 3) // d = 2: softplus diagonal, one off-diagonal entry
	l := tape.VecToChol(v)
	logdet := tape.LogDetChol(l)
	fmt.Printf("L = %.4f\n", l.Value())
	fmt.Printf("log det(LLᵀ) = %.4f\n", logdet.Item())
	// Output:
	// L = [0.6931 0.0000 0.5000 0.6931]
	// log det(LLᵀ) = -1.4661
}

// Errors are kept on the tape instead of panicking.
func ExampleTape_Err() {
	tape := autodiff.NewTape[float32]()
	a := tape.Const([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	tape.MatMul(a, a)
	fmt.Println(tape.Err())
	// Output:
	// autodiff: MatMul: inner dimensions differ: op(a) is 2×3, op(b) is 2×3 (shapes [2 3], [2 3], transA=false, transB=false)
}
