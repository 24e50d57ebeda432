package runtime_test

import (
	"fmt"
	"log"

	"github.com/edgebnn/edgebnn/runtime"
)

// A two-class classifier with one mean-field Gaussian ("ffg") linear layer, built in code: New
// checks the tensors against the Spec, NewPredictor sizes all scratch memory, and Predict returns
// the predictive distribution with its uncertainty.
func Example() {
	spec := &runtime.Spec{
		Version:    runtime.SpecVersion,
		Task:       runtime.Classification,
		InputShape: []int{2},
		Layers: []runtime.LayerSpec{{
			Name: "fc", Op: runtime.OpLinear, In: 2, Out: 2, Bias: true,
			Posterior: &runtime.PosteriorSpec{Kind: runtime.KindFFG, PriorSD: 1},
		}},
	}
	// bayesianize's ffg parameters: the standard deviation is softplus(_weight_sd).
	tensors := runtime.Tensors{
		"fc.weight_mean": {Shape: []int{2, 2}, Data: []float32{1, 0, -1, 0}},
		"fc._weight_sd":  {Shape: []int{2, 2}, Data: []float32{0, -3, 0, -3}},
		"fc.bias_mean":   {Shape: []int{2}, Data: []float32{0, 0}},
		"fc._bias_sd":    {Shape: []int{2}, Data: []float32{-3, -3}},
	}
	model, err := runtime.New(spec, tensors)
	if err != nil {
		log.Fatal(err)
	}
	p, err := model.NewPredictor(runtime.Options{Samples: 64, Seed: 1, Strategy: runtime.Local})
	if err != nil {
		log.Fatal(err)
	}
	var pred runtime.Prediction
	for _, x := range [][]float32{{1, 0}, {-1, 0}} {
		if err := p.Predict(x, &pred); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("x=%v: class %d, p=%.2f, mutual information %.2f nats\n", x, pred.Class, pred.Confidence, pred.MutualInfo)
	}
	// Output:
	// x=[1 0]: class 0, p=0.84, mutual information 0.06 nats
	// x=[-1 0]: class 1, p=0.84, mutual information 0.06 nats
}
