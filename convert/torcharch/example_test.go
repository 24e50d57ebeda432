package torcharch_test

import (
	"fmt"
	"os"
	"strings"

	"github.com/edgebnn/edgebnn/convert/torcharch"
)

func Example() {
	text := `Sequential(
  (0): Flatten(start_dim=1, end_dim=-1)
  (1): InducingLinear(in_features=784, out_features=10, bias=True, inducing_cols=24, inducing_rows=16)
)`
	mods, err := torcharch.ParseRepr(strings.NewReader(text))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range mods {
		fmt.Printf("%s %s %s %q\n", m.Name, m.Type, m.BaseType(), m.Inference())
	}
	if err := torcharch.WriteJSON(os.Stdout, mods); err != nil {
		fmt.Println(err)
	}
	// Output:
	// 0 Flatten Flatten ""
	// 1 InducingLinear Linear "inducing"
	// {"layers": [
	//   {"name": "0", "type": "Flatten", "start_dim": 1, "end_dim": -1},
	//   {"name": "1", "type": "InducingLinear", "in_features": 784, "out_features": 10, "bias": true, "inducing_cols": 24, "inducing_rows": 16}
	// ]}
}
