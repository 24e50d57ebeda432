package bnn_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/autodiff"
	"github.com/edgebnn/edgebnn/train/bnn"
)

// Building an inducing-weight MLP from an architecture and a bayesianize inference config,
// sampling one forward pass with its KL, and deploying the parameters to the runtime.
func Example() {
	mods, _ := bnn.MLPModules([]int{4, 8, 3}, "relu")
	cfg, _ := bnnconfig.Parse([]byte(`{"inference": "inducing", "inducing_rows": 2, "inducing_cols": 3, "sqrt_width_scaling": true}`))
	spec, inits, err := bnn.SpecFromModules(mods, cfg, []int{4}, runtime.Classification, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	net, err := bnn.New[float32](spec, inits, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		fmt.Println(err)
		return
	}
	tape := autodiff.NewTape[float32]()
	net.Seed(7, 0)
	out := net.Forward(tape, tape.Const(make([]float32, 2*4), 2, 4), true)
	kl := net.KL(tape)
	fmt.Println("outputs", out.Shape(), "KL > 0:", kl.Item() > 0)
	for _, p := range net.Params()[:3] {
		fmt.Println(p.Name, p.Shape)
	}
	m, err := net.Model() // the same parameters in the deployed runtime
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runtime layers:", len(m.Layers()))
	// Output:
	// outputs [2 3] KL > 0: true
	// 1.z_row [2 8]
	// 1.z_col [3 5]
	// 1.inducing_mean [2 3]
	// runtime layers: 2
}
