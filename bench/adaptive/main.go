// Command adaptive measures adaptive sampling (runtime.Options.Adaptive, docs/ADAPTIVE.md) on
// Fashion-MNIST test images: for each model and seed it predicts every image with all K samples
// and adaptively, and reports the mean number of samples the adaptive predictions used, how often
// their act/abstain decisions agree with the full-K ones, and the speed-up (wall time of the two
// passes, measured in the same run, one goroutine each, interleaved in chunks).
//
// The policy is the model's own (edgebnn calibrate) or, when it has none, thresholds fitted on
// the first half of the test set at a coverage of -coverage on confidence and mutual information
// (each threshold at the quantile that keeps √coverage of the inputs); the measurement uses the
// second half.
//
//	go run ./bench/adaptive -model runs/fmnist_ffgu.ebnn -model runs/fmnist_ensembleu.ebnn -seeds 3
//	go run ./bench/adaptive -quick -model MODEL   # the table's shape in seconds
//
// -seeds N are sampling seeds 1…N of the same model (every cell mean ± standard error over them);
// -quick sets -seeds 2, -samples 8 and -limit 400, each unless given (tests/bench_quick_test.go).
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/bench/internal/quickflag"
	"github.com/edgebnn/edgebnn/runtime"
	"github.com/edgebnn/edgebnn/train/data"
	"github.com/edgebnn/edgebnn/train/eval"
)

type models []string

func (m *models) String() string     { return strings.Join(*m, ",") }
func (m *models) Set(s string) error { *m = append(*m, s); return nil }

func main() {
	var paths models
	flag.Var(&paths, "model", "a model `FILE` (repeat for several)")
	dir := flag.String("data", data.DefaultFashionMNISTDir, "Fashion-MNIST `DIR`")
	k := flag.Int("samples", 32, "samples `K` of a full prediction")
	seeds := flag.Int("seeds", 3, "sampling seeds")
	limit := flag.Int("limit", 10000, "test images used (first N)")
	coverage := flag.Float64("coverage", 0.8, "target coverage of the fitted policy when the model has none")
	delta := flag.Float64("delta", 0.01, "runtime.Options.AdaptiveDelta")
	round := flag.Int("round", 8, "runtime.Options.AdaptiveRound")
	quick := flag.Bool("quick", false, "a short run for the table's shape: -seeds 2 -samples 8 -limit 400, each unless given")
	flag.Parse()
	if *quick {
		quickflag.Set(map[string]int{"seeds": 2, "samples": 8, "limit": 400})
	}
	if len(paths) == 0 {
		fmt.Fprintln(os.Stderr, "adaptive: give at least one -model")
		os.Exit(2)
	}
	if err := run(paths, *dir, *k, *seeds, *limit, *coverage, *delta, *round); err != nil {
		fmt.Fprintln(os.Stderr, "adaptive:", err)
		os.Exit(1)
	}
}

func run(paths []string, dir string, K, seeds, limit int, coverage, delta float64, round int) error {
	test, err := data.FashionMNISTHead(dir, "test", limit)
	if err != nil {
		return err
	}
	half := test.N / 2
	idx := make([]int, test.N-half)
	for i := range idx {
		idx[i] = half + i
	}
	fit, meas := test.Head(half), test
	if meas, err = test.Subset(idx); err != nil {
		return err
	}
	fmt.Printf("Fashion-MNIST test images %d–%d (%d), K = %d, round %d, δ = %g, %d seeds\n\n", half, test.N-1, meas.N, K, round, delta, seeds)
	fmt.Println("| model | policy | mean samples | agreement with full K | speed-up (time) | accuracy full / adaptive |")
	fmt.Println("|---|---|---:|---:|---:|---:|")
	for _, path := range paths {
		m, err := runtime.Load(path)
		if err != nil {
			return err
		}
		pol, how := m.Policy(), "the model's"
		if pol == nil {
			full, err := eval.Predict(m, fit, runtime.Options{Samples: K, Seed: 1000}, 0)
			if err != nil {
				return err
			}
			pol = quantilePolicy(full, coverage)
			how = fmt.Sprintf("conf ≥ %.3f, MI ≤ %.4f", *pol.MinConfidence, *pol.MaxMutualInfo)
		}
		var samples, agree, speed, accF, accA []float64
		for s := 0; s < seeds; s++ {
			base := runtime.Options{Samples: K, Seed: uint64(s + 1), Policy: pol, MaxBatch: 1}
			ad := base
			ad.Adaptive, ad.AdaptiveDelta, ad.AdaptiveRound = true, delta, round
			var tFull, tAd time.Duration
			var full, adap []*eval.Predictions
			// Interleave the two passes in chunks so that load changes hit both alike.
			for lo := 0; lo < meas.N; lo += 500 {
				idx := make([]int, 0, 500)
				for i := lo; i < min(lo+500, meas.N); i++ {
					idx = append(idx, i)
				}
				chunk, err := meas.Subset(idx)
				if err != nil {
					return err
				}
				t0 := time.Now()
				f, err := eval.Predict(m, chunk, base, 1)
				if err != nil {
					return err
				}
				t1 := time.Now()
				a, err := eval.Predict(m, chunk, ad, 1)
				if err != nil {
					return err
				}
				tAd += time.Since(t1)
				tFull += t1.Sub(t0)
				full, adap = append(full, f), append(adap, a)
			}
			n, used, same, cf, ca := 0, 0, 0, 0, 0
			for c := range full {
				for i := range full[c].Act {
					used += adap[c].Samples[i]
					if full[c].Act[i] == adap[c].Act[i] {
						same++
					}
					if full[c].Class[i] == meas.Labels[n] {
						cf++
					}
					if adap[c].Class[i] == meas.Labels[n] {
						ca++
					}
					n++
				}
			}
			samples = append(samples, float64(used)/float64(n))
			agree = append(agree, float64(same)/float64(n))
			speed = append(speed, tFull.Seconds()/tAd.Seconds())
			accF, accA = append(accF, float64(cf)/float64(n)), append(accA, float64(ca)/float64(n))
		}
		m.Close()
		fmt.Printf("| %s | %s | %s of %d | %s | %s× | %s / %s |\n", path, how, eval.FormatMeanSE(samples, "%.2f"), K,
			eval.FormatMeanSE(scale(agree, 100), "%.2f %%"), eval.FormatMeanSE(speed, "%.2f"),
			eval.FormatMeanSE(scale(accF, 100), "%.2f %%"), eval.FormatMeanSE(scale(accA, 100), "%.2f %%"))
	}
	return nil
}

// quantilePolicy puts each threshold at the quantile that keeps √coverage of the inputs.
func quantilePolicy(p *eval.Predictions, coverage float64) *runtime.Policy {
	conf := append([]float64(nil), p.Confidence...)
	mi := append([]float64(nil), p.MutualInfo...)
	sort.Float64s(conf)
	sort.Float64s(mi)
	keep := math.Sqrt(coverage)
	c := conf[int((1-keep)*float64(len(conf)))]
	u := mi[min(len(mi)-1, int(keep*float64(len(mi))))]
	return &runtime.Policy{Version: runtime.DeployVersion, MinConfidence: &c, MaxMutualInfo: &u, Samples: 32}
}

func scale(x []float64, s float64) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = v * s
	}
	return out
}
