package optim_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/optim"
)

// Fitting y = 3x − 1 by least squares with Adam, a MultiStepLR schedule and gradient clipping.
func Example() {
	w, _ := autodiff.NewParam("w", []float32{0}, 1, 1)
	b, _ := autodiff.NewParam("b", []float32{0}, 1)
	groups := []optim.Group[float32]{
		{Params: []*autodiff.Param[float32]{w}, LR: 0.1},
		{Params: []*autodiff.Param[float32]{b}, LR: 0.1},
	}
	opt, err := optim.NewAdam(groups, optim.DefaultAdamConfig())
	if err != nil {
		fmt.Println(err)
		return
	}
	sched := optim.MultiStepLR{Milestones: []int{300}, Gamma: 0.1}
	x := []float32{-1, 0, 1, 2}
	y := []float32{-4, -1, 2, 5}
	tape := autodiff.NewTape[float32]()
	for step := 0; step < 400; step++ {
		opt.SetLRFactor(sched.Factor(step))
		opt.ZeroGrad()
		tape.Reset()
		pred := tape.Linear(tape.Const(x, 4, 1), tape.Param(w), tape.Param(b))
		loss := tape.Mean(tape.Square(tape.Sub(pred, tape.Const(y, 4, 1))))
		if err := tape.Backward(loss); err != nil {
			fmt.Println(err)
			return
		}
		if _, err := optim.ClipGradNorm(optim.Params(groups), 10); err != nil {
			fmt.Println(err)
			return
		}
		opt.Step()
	}
	fmt.Printf("w = %.2f, b = %.2f\n", w.Value[0], b.Value[0])
	st := opt.State()
	fmt.Println(st.Step, len(st.Buffers))
	// Output:
	// w = 3.00, b = -1.00
	// 400 4
}
