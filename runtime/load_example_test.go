package runtime_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/edgebnn/edgebnn/format"
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

// A model file whose deterministic weights are stored in fp16 (convert --dtype f16; written here
// with format.Writer) can keep them so at run time: KeepF16 widens a layer's weights each time
// it runs instead of holding a float32 copy of every one, with the same predictions.
func ExampleLoadBytesWith() {
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 3, Bias: true}}}
	meta, err := json.Marshal(spec)
	if err != nil {
		log.Fatal(err)
	}
	w := format.NewWriter()
	if _, err := w.AddTensor("fc.weight", []int{3, 2}, []float32{1, -0.5, 0.25, 2, -1, 0.75}, format.AddOptions{F16: true}); err != nil {
		log.Fatal(err)
	}
	if _, err := w.AddTensor("fc.bias", []int{3}, []float32{0, 0.5, -0.5}, format.AddOptions{F16: true}); err != nil {
		log.Fatal(err)
	}
	if err := w.AddBlob(runtime.MetaBlob, meta, false); err != nil {
		log.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := w.WriteTo(&file); err != nil {
		log.Fatal(err)
	}
	x := []float32{0.5, -1}
	for _, keep := range []bool{false, true} {
		model, err := runtime.LoadBytesWith(file.Bytes(), runtime.LoadOptions{KeepF16: keep})
		if err != nil {
			log.Fatal(err)
		}
		p, err := model.NewPredictor(runtime.Options{})
		if err != nil {
			log.Fatal(err)
		}
		var pred runtime.Prediction
		if err := p.Predict(x, &pred); err != nil {
			log.Fatal(err)
		}
		fmt.Printf("KeepF16 %v: class %d, p = %.4f\n", keep, pred.Class, pred.Probs)
	}
	// The logits W x + b are 1, −1.375 and −1.75 (every value exact in fp16): softmax
	// 0.8643, 0.0804, 0.0553.

	// Output:
	// KeepF16 false: class 0, p = [0.8643 0.0804 0.0553]
	// KeepF16 true: class 0, p = [0.8643 0.0804 0.0553]
}
