package convert_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/edgebnn/edgebnn/convert"
)

func Example() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	fx := filepath.Join("..", "testdata", "bayesianize", "mlp_ffgu")
	rep, err := convert.Convert(convert.Options{
		Checkpoint: filepath.Join(fx, "state_dict.pt"),
		Config:     filepath.Join(fx, "inference_config.json"),
		Arch:       filepath.Join(fx, "model.txt"),
		Out:        filepath.Join(dir, "mlp.ebnn"),
		DType:      "f16",
		Prune:      0.5,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range rep.Layers {
		fmt.Printf("layer %s (%s): %d parameters, %.1f%% of Z pruned\n", l.Name, l.Kind, l.Parameters, 100*l.PrunedFraction)
	}
	in, err := convert.Inspect(filepath.Join(dir, "mlp.ebnn"), true)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(in.Parameters, in.DeterministicParameters, in.Verified)
	// Output:
	// layer 1 (inducing): 11345 parameters, 49.6% of Z pruned
	// layer 3 (inducing): 2345 parameters, 52.8% of Z pruned
	// 13690 101770 true
}
