package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train"
	"github.com/edgebnn/edgebnn/train/eval"
)

// variant is one controlled change to the toy1d configuration of FSVI (or MFVI) in a sweep.
type variant struct {
	name, method string
	steps        int
	set          func(c *train.Config) error
}

// priorSD sets the N(0, s²) prior of every weight and bias.
func priorSD(s float64) func(c *train.Config) error {
	return func(c *train.Config) error {
		return c.Inference.Set(fmt.Sprintf(`{"inference": "ffg", "prior_weight_sd": %g, "prior_bias_sd": %g, "init_sd": 1e-3}`, s, s))
	}
}

func chain(fs ...func(c *train.Config) error) func(c *train.Config) error {
	return func(c *train.Config) error {
		for _, f := range fs {
			if err := f(c); err != nil {
				return err
			}
		}
		return nil
	}
}

func none(*train.Config) error { return nil }

// variants are the sweep's settings, each one change (or a named combination) from "fsvi", the
// bench's earlier toy1d setting: prior N(0, 1), uniform context on the inputs' range widened by
// 0.5 of it per side, 32 points, joint, J fixed in the gradient (fsvi_jacobian_grad false), Adam
// 3·10⁻³, 4000 steps. jgrad* let the gradient flow through every J (both), jgradq* through q̃'s
// (q).
var variants = []variant{
	{"mfvi", "MFVI", 4000, none},
	{"fsvi", "FSVI", 4000, none},
	{"prior3", "FSVI", 4000, priorSD(3)},
	{"prior10", "FSVI", 4000, priorSD(10)},
	{"mfvi-prior3", "MFVI", 4000, priorSD(3)},
	{"margin0", "FSVI", 4000, func(c *train.Config) error { c.ContextMargin = 0; return nil }},
	{"margin1", "FSVI", 4000, func(c *train.Config) error { c.ContextMargin = 1; return nil }},
	{"ctx8", "FSVI", 4000, func(c *train.Config) error { c.ContextSize = 8; return nil }},
	{"ctx128", "FSVI", 4000, func(c *train.Config) error { c.ContextSize = 128; return nil }},
	{"steps16k", "FSVI", 16000, none},
	{"mfvi-steps16k", "MFVI", 16000, none},
	{"jitter1e-3", "FSVI", 4000, func(c *train.Config) error { c.FSVIJitter = 1e-3; return nil }},
	{"init0.1", "FSVI", 4000, func(c *train.Config) error {
		return c.Inference.Set(`{"inference": "ffg", "prior_weight_sd": 1, "prior_bias_sd": 1, "init_sd": 0.1}`)
	}},
	{"lr1e-2", "FSVI", 4000, lr(1e-2)},
	{"jgrad", "FSVI", 4000, jgrad},
	{"jgrad-steps16k", "FSVI", 16000, jgrad},
	{"jgrad-prior3", "FSVI", 4000, chain(jgrad, priorSD(3))},
	{"jgrad-lr1e-2", "FSVI", 4000, chain(jgrad, lr(1e-2))},
	{"lr1e-2-steps16k", "FSVI", 16000, lr(1e-2)},
	{"jgrad-lr1e-2-steps16k", "FSVI", 16000, chain(jgrad, lr(1e-2))},
	{"jgradq", "FSVI", 4000, jgradQ},
	{"jgradq-lr1e-2-steps16k", "FSVI", 16000, chain(jgradQ, lr(1e-2))},
	{"mfvi-lr1e-2", "MFVI", 4000, lr(1e-2)},
	{"mfvi-lr1e-2-steps16k", "MFVI", 16000, lr(1e-2)},
	{"relu", "FSVI", 4000, arch("mlp:1-50-1:relu")},
	{"mfvi-relu", "MFVI", 4000, arch("mlp:1-50-1:relu")},
	{"relu2", "FSVI", 4000, arch("mlp:1-50-50-1:relu")},
	{"mfvi-relu2", "MFVI", 4000, arch("mlp:1-50-50-1:relu")},
	{"relu2-prior3", "FSVI", 4000, chain(arch("mlp:1-50-50-1:relu"), priorSD(3))},
	{"linearized-lr1e-2-steps16k", "FSVI", 16000, chain(kl("linearized"), lr(1e-2))},
	{"lastlayer", "FSVI", 4000, kl("last_layer")},
	{"lastlayer-lr1e-2-steps16k", "FSVI", 16000, chain(kl("last_layer"), lr(1e-2))},
}

// kl sets the form of the function-space KL (fsvi_kl).
func kl(form string) func(c *train.Config) error {
	return func(c *train.Config) error { c.FSVIKL = form; return nil }
}

// jgrad lets the KL's gradient flow through every Jacobian (fsvi_jacobian_grad both); jgradQ
// through q̃'s only (q).
func jgrad(c *train.Config) error { c.FSVIJacobianGrad = "both"; return nil }

func jgradQ(c *train.Config) error { c.FSVIJacobianGrad = "q"; return nil }

// lr sets Adam's learning rate.
func lr(v float64) func(c *train.Config) error {
	return func(c *train.Config) error { c.LR = v; return nil }
}

// arch sets the network.
func arch(a string) func(c *train.Config) error {
	return func(c *train.Config) error { c.Arch = a; return nil }
}

// runSweep trains each named variant on toy1d with seeds 1..n and prints the mean ± standard
// error over seeds of the RMSE and of the mean epistemic sd in the data, the gap and outside.
func runSweep(names string, n int, quick bool) error {
	want := map[string]bool{}
	for _, s := range strings.Split(names, ",") {
		want[strings.TrimSpace(s)] = true
	}
	tmp, err := os.MkdirTemp("", "fsvi-sweep")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	fmt.Printf("toy1d, seeds 1..%d (data, initialisation and context draws): mean ± standard error\n\n", n)
	fmt.Println("| variant | method | steps | RMSE | sd in data | sd in gap | sd outside | gap/data | train s |")
	fmt.Println("|---|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, v := range variants {
		if !want["all"] && !want[v.name] {
			continue
		}
		steps := v.steps
		if quick {
			steps = 200
		}
		var cols [5][]float64
		var secs float64
		for seed := 1; seed <= n; seed++ {
			c, err := config(v.method, "toy1d", steps, uint64(seed), tmp)
			if err != nil {
				return err
			}
			// The sweep's base is the earlier bench setting: Adam 3·10⁻³, J fixed in the gradient.
			c.LR, c.Epochs, c.FSVIJacobianGrad = 3e-3, steps, "none"
			if err := v.set(&c); err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			tr, err := train.New(c)
			if err != nil {
				return fmt.Errorf("%s: %w", v.name, err)
			}
			start := time.Now()
			if err := tr.Run(context.Background(), train.Hooks{}); err != nil {
				return fmt.Errorf("%s seed %d: %w", v.name, seed, err)
			}
			secs += time.Since(start).Seconds()
			m, err := tr.Model()
			if err != nil {
				return err
			}
			r, err := toy(m, runtime.Options{Samples: c.TestSamples, Seed: 7, MaxBatch: 100}, tr.Train, "", v.name)
			if err != nil {
				return err
			}
			for i, x := range r {
				cols[i] = append(cols[i], x)
			}
			cols[4] = append(cols[4], r[2]/r[1])
		}
		fmt.Printf("| %s | %s | %d |", v.name, v.method, steps)
		for _, c := range cols {
			fmt.Printf(" %s |", eval.FormatMeanSE(c, "%.3f"))
		}
		fmt.Printf(" %.1f |\n", secs/float64(n))
	}
	return nil
}
