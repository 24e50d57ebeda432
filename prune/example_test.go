package prune_test

import (
	"fmt"

	"github.com/edgebnn/edgebnn/prune"
)

// Example prunes half of the Z entries of two layers globally. Layer 2's z_row keeps its largest
// entry (0.3): a Z matrix is never emptied.
func Example() {
	layers := []prune.Layer{
		{Name: "0", ZRow: []float32{0.9, -0.1, 0.5}, ZCol: []float32{0.05, -0.7}},
		{Name: "2", ZRow: []float32{0.3, 0.2}, ZCol: []float32{-0.6}},
	}
	rep, err := prune.Prune(layers, prune.Options{Fraction: 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, l := range rep.Layers {
		fmt.Printf("%s: %d of %d pruned\n", l.Layer, l.Pruned, l.Entries)
	}
	fmt.Println(layers[0].ZRow, layers[0].ZCol, layers[1].ZRow, layers[1].ZCol)
	// Output:
	// 0: 3 of 5 pruned
	// 2: 1 of 3 pruned
	// [0.9 0 0] [0 -0.7] [0.3 0] [-0.6]
}
