package runtime_test

import (
	"fmt"
	"log"
	"os"

	"github.com/edgebnn/edgebnn/runtime"
)

// demoImages holds six Fashion-MNIST test images of the demo, 784 bytes each.
const demoImages = "../cmd/edgebnn/demo/images.bin"

// NewPredictor sizes all scratch memory for the options once; Predict then allocates nothing.
// The Predictor takes the network's inputs: for the demo model, pixels scaled to [0, 1]
// (Model.Normalize makes them from raw pixels with the preprocessing the model file records).
func ExampleModel_NewPredictor() {
	m, err := runtime.Load(demoModel)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	p, err := m.NewPredictor(runtime.Options{Samples: 32, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	img, err := os.ReadFile(demoImages)
	if err != nil {
		log.Fatal(err)
	}
	x := make([]float32, m.InputSize())
	for i := range x {
		x[i] = float32(img[i]) / 255 // the first test image
	}
	var pred runtime.Prediction
	if err := p.Predict(x, &pred); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("class %d (9 is ankle boot): %s (%s)\n", pred.Class, pred.Decision, pred.Decision.Reason)
	// Output: class 9 (9 is ankle boot): act (certain)
}

// PredictBatch predicts many inputs, laid out one after the other, in one call; each prediction
// carries its uncertainty and the model's act-or-abstain decision.
func ExamplePredictor_PredictBatch() {
	m, p := demoPredictor() // runtime.Load and Model.NewPredictor, as in NewPredictor's example
	defer m.Close()
	img, err := os.ReadFile(demoImages)
	if err != nil {
		log.Fatal(err)
	}
	n, d := 3, m.InputSize()
	xs := make([]float32, n*d) // three images, one after the other
	for i := range xs {
		xs[i] = float32(img[i]) / 255
	}
	preds := make([]runtime.Prediction, n)
	if err := p.PredictBatch(xs, preds); err != nil {
		log.Fatal(err)
	}
	for i, pr := range preds {
		fmt.Printf("image %d: class %d, %s (%s)\n", i, pr.Class, pr.Decision, pr.Decision.Reason)
	}
	// Output:
	// image 0: class 9, act (certain)
	// image 1: class 2, act (certain)
	// image 2: class 1, act (certain)
}

// demoPredictor loads the demo model and makes its Predictor, 32 samples with seed 1, as
// Model.NewPredictor's example does.
func demoPredictor() (*runtime.Model, *runtime.Predictor) {
	m, err := runtime.Load(demoModel)
	if err != nil {
		log.Fatal(err)
	}
	p, err := m.NewPredictor(runtime.Options{Samples: 32, Seed: 1})
	if err != nil {
		log.Fatal(err)
	}
	return m, p
}
