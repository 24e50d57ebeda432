// Command fsvisd prints the standard deviations of the mean-field Gaussian q in model files or
// checkpoints of ffg layers: per layer, the median, minimum and maximum of σ = softplus(ρ) over
// the weights (tensor NAME._weight_sd) and over the biases (NAME._bias_sd), as a Markdown table.
// max_sd is not applied (the table's FSVI and MFVI runs set none). Used by docs/results/
// fsvi_table1_s14.md to see whether FSVI's σ moved from its initial value.
//
//	go run ./bench/fsvisd runs/fsvi_table1/fsvi_1.ebnn runs/fsvi_table1/mfvi_1.ebnn
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/f64"
)

func main() {
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: fsvisd FILE.ebnn ...")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	fmt.Println("| file | layer | weights σ: median | min | max | biases σ: median | min | max |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|")
	for _, path := range flag.Args() {
		if err := report(path); err != nil {
			fmt.Fprintln(os.Stderr, "fsvisd:", err)
			os.Exit(1)
		}
	}
}

// report prints one row per ffg layer of the file at path.
func report(path string) error {
	f, err := format.Open(path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer f.Close()
	have := map[string]bool{}
	var layers []string
	for _, name := range f.Tensors() {
		have[name] = true
		if l, ok := strings.CutSuffix(name, "._weight_sd"); ok && !strings.Contains(l, "/") {
			layers = append(layers, l)
		}
	}
	if len(layers) == 0 {
		return fmt.Errorf("%s: no ffg layer (no tensor NAME._weight_sd)", path)
	}
	for _, l := range layers {
		w, err := sdStats(f, l+"._weight_sd")
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		b := "— | — | —"
		if have[l+"._bias_sd"] {
			if b, err = sdStats(f, l+"._bias_sd"); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		fmt.Printf("| %s | %s | %s | %s |\n", filepath.Base(path), l, w, b)
	}
	return nil
}

// sdStats reads the raw tensor name and formats the median, minimum and maximum of its softplus.
func sdStats(f *format.File, name string) (string, error) {
	t, err := f.Tensor(name)
	if err != nil {
		return "", fmt.Errorf("tensor %s: %w", name, err)
	}
	raw, err := t.Float32s()
	if err != nil {
		return "", fmt.Errorf("tensor %s: %w", name, err)
	}
	med, lo, hi := softplusStats(raw)
	return fmt.Sprintf("%.3g | %.3g | %.3g", med, lo, hi), nil
}

// softplusStats returns the median, minimum and maximum of softplus(x) = log(1 + eˣ) over raw
// (the median of an even count is the mean of the middle two). raw must not be empty.
func softplusStats(raw []float32) (med, lo, hi float64) {
	s := make([]float64, len(raw))
	for i, x := range raw {
		s[i] = f64.Softplus(float64(x))
	}
	sort.Float64s(s)
	n := len(s)
	med = s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return med, s[0], s[n-1]
}
