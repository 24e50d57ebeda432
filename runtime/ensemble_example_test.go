package runtime_test

import (
	"fmt"
	"log"

	"github.com/edgebnn/edgebnn/runtime"
)

// An Ensemble-W model: two deterministic networks (Spec.Members = 2) that disagree. Member 0's
// tensors have the plain names, member 1's the prefix "member1/". By default a Predictor runs
// each member once and averages their softmax outputs; the disagreement shows as mutual
// information.
func Example_ensembleW() {
	spec := &runtime.Spec{
		Version:    runtime.SpecVersion,
		Task:       runtime.Classification,
		InputShape: []int{1},
		Members:    2,
		Layers:     []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 1, Out: 2}},
	}
	tensors := runtime.Tensors{
		"fc.weight":                           {Shape: []int{2, 1}, Data: []float32{2, -2}},
		runtime.MemberPrefix(1) + "fc.weight": {Shape: []int{2, 1}, Data: []float32{-1, 1}},
	}
	model, err := runtime.New(spec, tensors)
	if err != nil {
		log.Fatal(err)
	}
	p, err := model.NewPredictor(runtime.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d members, %d samples per prediction\n", model.Members(), p.Options().Samples)
	var pred runtime.Prediction
	for _, x := range [][]float32{{1}, {0}} {
		if err := p.Predict(x, &pred); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("x=%v: p=%.3f, mutual information %.3f nats\n", x, pred.Probs, pred.MutualInfo)
	}
	// Output:
	// 2 members, 2 samples per prediction
	// x=[1]: p=[0.551 0.449], mutual information 0.460 nats
	// x=[0]: p=[0.500 0.500], mutual information 0.000 nats
}
