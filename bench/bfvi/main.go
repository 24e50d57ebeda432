// Command bfvi runs paper 002's experiments (Dürr et al., "Bernstein Flows for Flexible Posteriors
// in Variational Bayes") with train/bfvi and writes, per experiment, a Markdown table (mean ±
// standard error over seeds, the paper's number beside ours) to stdout and to
// <out>/<experiment>.md, and PNG figures to <img>/:
//
//	go run ./bench/bfvi -exp bernoulli      # Fig. 2: KL(q‖p) vs M, densities M = 1, 10, 30
//	go run ./bench/bfvi -exp cauchy         # Fig. 3: densities M = 1, 20, 30, 50 vs NUTS and grid, KL vs M
//	go run ./bench/bfvi -exp linreg         # Fig. 4: k̂ of BF-VI (MAF, M = 10) vs Gaussian VI, pair plots vs NUTS
//	go run ./bench/bfvi -exp linreg-ref     # the same k̂ against the reference script's target (no Jacobian of σ)
//	go run ./bench/bfvi -exp linreg-paperopt  # MAF and mean-field Gaussian k̂ with the paper's S = 600, lr 0.001
//	go run ./bench/bfvi -exp linreg-refsamples -ref DIR  # k̂ of the reference repository's saved mean-field run
//	go run ./bench/bfvi -exp eightschools   # k̂ on 8 schools CP and NCP, four families
//	go run ./bench/bfvi -exp eightschools-ref   # the same against the reference scripts' target
//	go run ./bench/bfvi -exp nnreg          # Fig. 5: 3-unit network, BF-VI and Gaussian VI vs NUTS predictive
//	go run ./bench/bfvi -exp semistruct     # Melanoma M1–M3 rebuilt on Fashion-MNIST: CNN + interpretable β
//	go run ./bench/bfvi -exp all -quick     # every experiment on reduced sizes (seconds)
//
// -seeds N overrides every experiment's number of seeds (runs); seeds are 1…N. The reference
// posterior is exact (Bernoulli), a quadrature grid (Cauchy) or NUTS (train/mcmc) where the
// paper used MCMC. Each table ends with the experiment's CPU and wall time.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/internal/outfile"
)

// options are the command-line settings shared by the experiments.
type options struct {
	seeds  int  // 0: per-experiment default
	quick  bool // reduced sizes, sanity only
	outDir string
	imgDir string
	refDir string // a checkout of tensorchiefs/bfvi (linreg-refsamples)
}

// n returns the number of seeds: the -seeds override, else def (full) or quick (quick mode).
func (o options) n(def, quick int) int {
	switch {
	case o.seeds > 0:
		return o.seeds
	case o.quick:
		return quick
	}
	return def
}

// img returns the path of a figure.
func (o options) img(name string) string { return filepath.Join(o.imgDir, name) }

type experiment struct {
	name string
	run  func(o options) (string, error)
	// needs, if set, reports why the experiment cannot run on this host (missing data); "all"
	// then skips it with a note, while naming it alone is an error.
	needs func(o options) error
}

var experiments = []experiment{
	{"bernoulli", runBernoulli, nil},
	{"bernoulli-ref", runBernoulliRef, nil},
	{"cauchy", runCauchy, nil},
	{"linreg", runLinReg, nil},
	{"linreg-ref", runLinRegRef, nil},
	{"linreg-paperopt", runLinRegPaperOpt, nil},
	{"linreg-refsamples", runLinRegRefSamples, needRefSamples},
	{"eightschools", runEightSchools, nil},
	{"eightschools-ref", runEightSchoolsRef, nil},
	{"nnreg", runNNReg, nil},
	{"semistruct", runSemiStruct, needFashionMNIST},
}

// runExperiments runs the named experiment (or "all"), writing <outDir>/<name>.md for each, and
// returns the Markdown it wrote.
func runExperiments(name string, o options) (string, error) {
	var chosen []experiment
	for _, e := range experiments {
		if name == "all" || name == e.name {
			chosen = append(chosen, e)
		}
	}
	if len(chosen) == 0 {
		return "", fmt.Errorf("unknown experiment %q (bernoulli, bernoulli-ref, cauchy, linreg, linreg-ref, linreg-paperopt, linreg-refsamples, eightschools, eightschools-ref, nnreg, semistruct or all)", name)
	}
	for _, d := range []string{o.outDir, o.imgDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", fmt.Errorf("output directory: %w", err)
		}
	}
	var all strings.Builder
	for _, e := range chosen {
		if e.needs != nil {
			if err := e.needs(o); err != nil {
				if name != "all" {
					return "", fmt.Errorf("%s: %w", e.name, err)
				}
				fmt.Fprintf(&all, "%s skipped: %v\n\n", e.name, err)
				continue
			}
		}
		c0, w0 := cpuTime(), time.Now()
		md, err := e.run(o)
		if err != nil {
			return all.String(), fmt.Errorf("%s: %w", e.name, err)
		}
		mode := "full"
		if o.quick {
			mode = "quick"
		}
		md += fmt.Sprintf("\n%s run: CPU time %.1f s, wall time %.1f s (GOMAXPROCS-limited host, %s).\n",
			mode, (cpuTime() - c0).Seconds(), time.Since(w0).Seconds(), time.Now().UTC().Format("2006-01-02"))
		if err := outfile.WriteBytes(context.Background(), filepath.Join(o.outDir, e.name+".md"), []byte(md)); err != nil {
			return all.String(), fmt.Errorf("%s: %w", e.name, err)
		}
		all.WriteString(md)
		all.WriteString("\n")
	}
	return all.String(), nil
}

func main() {
	var o options
	exp := flag.String("exp", "all", "experiment: bernoulli, bernoulli-ref, cauchy, linreg, linreg-ref, linreg-paperopt, linreg-refsamples, eightschools, eightschools-ref, nnreg, semistruct or all")
	flag.IntVar(&o.seeds, "seeds", 0, "number of seeds (runs) per setting; 0 = each experiment's default")
	flag.BoolVar(&o.quick, "quick", false, "reduced sizes: checks that the experiments run, not their numbers")
	flag.StringVar(&o.outDir, "out", "docs/results/bfvi", "directory for the Markdown tables")
	flag.StringVar(&o.imgDir, "img", "docs/img/bfvi", "directory for the PNG figures")
	flag.StringVar(&o.refDir, "ref", "", "linreg-refsamples: a checkout of tensorchiefs/bfvi (its "+refMFGDir+" draws)")
	flag.Parse()
	if o.seeds < 0 {
		fmt.Fprintln(os.Stderr, "bfvi: -seeds must be ≥ 0")
		os.Exit(2)
	}
	md, err := runExperiments(*exp, o)
	fmt.Print(md)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bfvi:", err)
		os.Exit(1)
	}
}
