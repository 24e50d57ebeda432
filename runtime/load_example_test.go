package runtime_test

import (
	"fmt"
	"log"
	"os"

	"github.com/edgebnn/edgebnn/runtime"
)

// demoModel is the model built into the edgebnn binary: a mean-field Gaussian MLP (784-48-48-10)
// trained on Fashion-MNIST by function-space VI, converted to f16 and calibrated.
const demoModel = "../cmd/edgebnn/demo/model.ebnn"

// Load a converted model file, make a Predictor (all scratch memory is allocated here, none
// afterwards) and predict a batch of inputs with their uncertainty.
func ExampleLoad() {
	model, err := runtime.Load(demoModel)
	if err != nil {
		log.Fatal(err)
	}
	defer model.Close()
	p, err := model.NewPredictor(runtime.Options{Samples: 32, Seed: 1, MaxBatch: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	// Two inputs, one after the other: an all-black image and an all-white one.
	xs := make([]float32, 2*model.InputSize())
	for i := model.InputSize(); i < len(xs); i++ {
		xs[i] = 1
	}
	preds := make([]runtime.Prediction, 2)
	if err := p.PredictBatch(xs, preds); err != nil {
		log.Fatal(err)
	}
	fmt.Println(model.Task(), model.InputSize(), "inputs,", model.OutputSize(), "classes")
	for i, pr := range preds {
		fmt.Printf("input %d: %d probabilities summing to %.2f, mutual information ≥ 0: %v\n",
			i, len(pr.Probs), sum(pr.Probs), pr.MutualInfo >= 0)
	}
	// Output:
	// classification 784 inputs, 10 classes
	// input 0: 10 probabilities summing to 1.00, mutual information ≥ 0: true
	// input 1: 10 probabilities summing to 1.00, mutual information ≥ 0: true
}

// A model whose bytes are already in memory — for example embedded in the program with
//
//	//go:embed model.ebnn
//	var modelFile []byte
//
// — loads with LoadBytes, without a file system.
func ExampleLoadBytes() {
	data, err := os.ReadFile(demoModel) // or the go:embed variable
	if err != nil {
		log.Fatal(err)
	}
	model, err := runtime.LoadBytes(data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(model.Layers()), "weight layers")
	for _, l := range model.Layers() {
		fmt.Printf("%s: %s %d×%d\n", l.Name, l.Kind, l.Rows, l.Cols)
	}
	// Output:
	// 3 weight layers
	// 1: ffg 48×785
	// 3: ffg 48×49
	// 5: ffg 10×49
}

func sum(v []float32) float64 {
	s := 0.0
	for _, x := range v {
		s += float64(x)
	}
	return s
}
