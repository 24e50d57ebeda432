// Command lamda prints, for each model file or checkpoint given, the scale λ =
// softplus(_lamda) of every inducing layer (MATH.md §1; no max_lamda clamp is applied), tab
// separated: the file, then "LAYER=λ" per layer in file order. bench/appg.sh uses it to show
// how the function-space conditional KL (paper 003 appendix G) moves λ.
//
//	go run ./bench/appg/lamda runs/appg/toy/*.ebnn
package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"github.com/edgebnn/edgebnn/format"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: lamda FILE...")
		os.Exit(2)
	}
	for _, p := range os.Args[1:] {
		if err := writeLine(os.Stdout, p); err != nil {
			fmt.Fprintln(os.Stderr, "lamda:", err)
			os.Exit(1)
		}
	}
}

// writeLine writes path's line.
func writeLine(w io.Writer, path string) error {
	f, err := format.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	line := path
	for _, n := range f.Tensors() {
		layer, ok := strings.CutSuffix(n, "._lamda")
		if !ok || strings.Contains(layer, "/") { // optimizer state: optim/exp_avg/…
			continue
		}
		t, err := f.Tensor(n)
		if err != nil {
			return err
		}
		v, err := t.Float32s()
		if err != nil || len(v) != 1 {
			return fmt.Errorf("%s: tensor %s: %d values (%v)", path, n, len(v), err)
		}
		line += fmt.Sprintf("\t%s=%.4g", layer, math.Log1p(math.Exp(float64(v[0]))))
	}
	_, err = fmt.Fprintln(w, line)
	return err
}
