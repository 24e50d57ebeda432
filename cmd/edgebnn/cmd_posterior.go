package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/edgebnn/edgebnn/runtime"
)

const posteriorUsage = `Usage: edgebnn posterior --model FILE [--json] [--max-dim N]

Prints the posterior mean and covariance of a model's flattened parameter
vector θ: every linear and conv layer in network order, each layer's weight
(PyTorch layout, row-major) followed by its bias. Every weight posterior kind
has a closed form: deterministic layers have zero covariance, FFG layers a diagonal
one, FA layers c and F Fᵀ + diag ψ, inducing layers the exact moments of the
extended Matheron rule, ensembles the exact mixture moments. A model that
samples MC dropout (Bernoulli masks, not a Gaussian) or a global inducing
posterior is refused.

The covariance is dense (D×D), so models with more than --max-dim parameters
are refused.

With --json, one object {"dim": D, "mean": [...], "cov": [[...]], "exact": true,
"layers": [{"name", "kind", "offset", "size", "exact"}]}. Without it, a
per-layer summary (mean |θ|, mean posterior standard deviation).`

type posteriorLayerJSON struct {
	Name   string `json:"name"`
	Kind   string `json:"kind"`
	Offset int    `json:"offset"`
	Size   int    `json:"size"`
	Exact  bool   `json:"exact"`
}

type posteriorJSON struct {
	Dim    int                  `json:"dim"`
	Mean   []float64            `json:"mean"`
	Cov    [][]float64          `json:"cov"`
	Exact  bool                 `json:"exact"`
	Layers []posteriorLayerJSON `json:"layers"`
}

func runPosterior(_ context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("posterior")
	model := fs.String("model", "", "the model `FILE` (from edgebnn convert)")
	maxDim := fs.Int("max-dim", 2000, "refuse models with more than `N` parameters")
	asJSON := fs.Bool("json", false, "print the mean and covariance as JSON")
	if err := parseFlagsOnly(fs, posteriorUsage, args, stdout); err != nil {
		return err
	}
	if *model == "" {
		return usagef("--model is required")
	}
	if *maxDim < 1 || *maxDim > runtime.MaxPosteriorDim {
		return usagef("--max-dim must be from 1 to %d (the covariance is dense: D² entries)", runtime.MaxPosteriorDim)
	}
	m, err := runtime.Load(*model)
	if err != nil {
		return err
	}
	defer m.Close()
	p, err := m.Posterior(*maxDim)
	if de := (*runtime.PosteriorDimError)(nil); errors.As(err, &de) {
		if de.Params <= runtime.MaxPosteriorDim {
			return fmt.Errorf("%s: %w (--max-dim %d allows it)", *model, err, de.Params)
		}
		return fmt.Errorf("%s: %w (--max-dim allows at most %d)", *model, err, runtime.MaxPosteriorDim)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", *model, err)
	}
	if *asJSON {
		out := posteriorJSON{Dim: p.Dim, Mean: p.Mean, Cov: make([][]float64, p.Dim), Exact: p.Exact}
		for i := range out.Cov {
			out.Cov[i] = p.Cov[i*p.Dim : (i+1)*p.Dim]
		}
		for _, l := range p.Layers {
			out.Layers = append(out.Layers, posteriorLayerJSON{l.Name, l.Kind, l.Offset, l.Size, l.Exact})
		}
		return json.NewEncoder(stdout).Encode(out)
	}
	fmt.Fprintf(stdout, "%s: %d parameters, exact moments: %v\n\n", *model, p.Dim, p.Exact)
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "LAYER\tKIND\tOFFSET\tSIZE\tMEAN |θ|\tMEAN SD\tEXACT")
	for _, l := range p.Layers {
		absMean, sd := 0.0, 0.0
		for i := l.Offset; i < l.Offset+l.Size; i++ {
			absMean += math.Abs(p.Mean[i])
			sd += math.Sqrt(math.Max(p.Cov[i*p.Dim+i], 0))
		}
		n := float64(l.Size)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.4g\t%.4g\t%v\n", l.Name, l.Kind, l.Offset, l.Size, absMean/n, sd/n, l.Exact)
	}
	return tw.Flush()
}
