package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

const benchUsage = `Usage: edgebnn bench --model FILE [flags]

Benchmarks a model's predictor on this machine, in the spirit of TFLite's
benchmark_model: loads the model once, warms up, then times predictions on
synthetic inputs of the model's shape (uniform in [0, 1)) for at least
--min-time, and prints the per-input latency (median and 90th percentile),
inputs per second, heap allocations per prediction, the predictor's
scratch memory and the process's resident memory (Linux). In the same run it times the deterministic forward at the
posterior mean (the --mean prediction) for a quarter of --min-time and
prints the ratio: how many deterministic forwards one K-sample prediction
costs.

--mean benchmarks the deterministic forward itself. --count N runs exactly N
predictions after the warm-up and nothing else (no timing loop, no
deterministic comparison), for instruction counts: the difference between
runs with --count R and --count 11R, divided by 10R, is one prediction
(bench/armcount.sh does this under QEMU). --warmup N sets the number of
warm-up predictions (3). The first prediction sizes the predictor's buffers
and every later one takes the same path, so for instruction counts of large
models, where each prediction costs minutes under QEMU, --warmup 0 with
--count 1 and --count 2 gives one prediction from three instead of seven.

With --json, one object with keys per_input_seconds_median,
per_input_seconds_p90, inputs_per_second, allocs_per_prediction,
predictor_bytes, samples, batch, strategy, threads, predictions,
resident_bytes (where Linux reports it), deterministic_seconds_per_input
and ratio_to_deterministic (the last two absent with --mean). With --count, nothing is timed: --json prints the
run's settings as one object with keys predictions, warmup, samples, batch,
strategy and threads.`

type benchResult struct {
	Median      float64 `json:"per_input_seconds_median"`
	P90         float64 `json:"per_input_seconds_p90"`
	PerSecond   float64 `json:"inputs_per_second"`
	Allocs      float64 `json:"allocs_per_prediction"`
	Bytes       int64   `json:"predictor_bytes"`
	Samples     int     `json:"samples"`
	Batch       int     `json:"batch"`
	Strategy    string  `json:"strategy"`
	Threads     int     `json:"threads"`
	Predictions int     `json:"predictions"`
	// Resident is the process's resident memory after the timed predictions (VmRSS of Linux's
	// /proc/self/status: the model file's pages in use, the loaded model, the predictor and the
	// Go runtime), 0 where it cannot be read.
	Resident int64 `json:"resident_bytes,omitempty"`
	// Deterministic is the per-input time of the forward at the posterior mean, measured in the
	// same run, and Ratio the median latency over it.
	Deterministic float64 `json:"deterministic_seconds_per_input,omitempty"`
	Ratio         float64 `json:"ratio_to_deterministic,omitempty"`
}

// benchCountResult is --count's report: what ran, for the instruction counts measured outside
// the process (the run itself times nothing). With --json it is printed as JSON rather than the
// combination being refused: as with TFLite's benchmark_model, whose output options apply to
// every kind of run, a harness that always passes --json (or records each counted run's
// settings) should get an object it can parse. It is its own type so that no timing key
// appears with a made-up 0.
type benchCountResult struct {
	Predictions int    `json:"predictions"`
	Warmup      int    `json:"warmup"`
	Samples     int    `json:"samples"`
	Batch       int    `json:"batch"`
	Strategy    string `json:"strategy"`
	Threads     int    `json:"threads"`
}

// maxBenchCount bounds --count.
const maxBenchCount = 1 << 30

// maxBenchWarmup bounds --warmup.
const maxBenchWarmup = 1000

func runBench(ctx context.Context, args []string, stdout, _ io.Writer) error {
	fs := newFlagSet("bench")
	pf := addPredictFlags(fs, 1)
	minTime := fs.Duration("min-time", time.Second, "time predictions for at least `D`")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	pf.mean = fs.Bool("mean", false, "benchmark the deterministic forward at the posterior mean")
	count := fs.Int("count", 0, "run exactly `N` predictions after the warm-up and stop (for instruction counts)")
	warmup := fs.Int("warmup", 3, "`N` warm-up predictions before anything is timed or counted")
	if err := parseFlagsOnly(fs, benchUsage, args, stdout); err != nil {
		return err
	}
	pf.policySeed = !flagSet(fs, "seed")
	if *count < 0 || *count > maxBenchCount {
		return usagef("--count %d is out of range (1 to %d; 0: time for --min-time)", *count, maxBenchCount)
	}
	if *warmup < 0 || *warmup > maxBenchWarmup {
		return usagef("--warmup %d is out of range (0 to %d)", *warmup, maxBenchWarmup)
	}
	if *minTime <= 0 {
		return usagef("--min-time must be positive")
	}
	m, p, err := pf.open()
	if err != nil {
		return err
	}
	defer m.Close()
	defer p.Close()
	b := *pf.batch
	rng := rand.New(rand.NewPCG(*pf.seed, 1))
	xs := make([]float32, b*m.InputSize())
	for i := range xs {
		xs[i] = rng.Float32()
	}
	preds := make([]runtime.Prediction, b)
	// predictN predicts xs n times, stopping at the first error or once ctx is cancelled.
	predictN := func(n int) error {
		for range n {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := p.PredictBatch(xs, preds); err != nil {
				return err
			}
		}
		return nil
	}
	if err := predictN(*warmup); err != nil {
		return err
	}
	if *count > 0 {
		if err := predictN(*count); err != nil {
			return err
		}
		res := benchCountResult{Predictions: *count, Warmup: *warmup, Samples: p.Options().Samples, Batch: b,
			Strategy: p.Options().Strategy.String(), Threads: p.Options().Threads}
		if *asJSON {
			return writeJSON(stdout, res)
		}
		fmt.Fprintf(stdout, "predictions       %d (batch %d, %d samples, strategy %s)\n", res.Predictions, res.Batch, res.Samples, res.Strategy)
		return nil
	}
	var (
		lat     []float64
		ms0     goruntime.MemStats
		ms1     goruntime.MemStats
		start   = time.Now()
		mallocs uint64
	)
	for time.Since(start) < *minTime || len(lat) < 5 {
		if err := ctx.Err(); err != nil {
			return err
		}
		goruntime.ReadMemStats(&ms0)
		t0 := time.Now()
		if err := p.PredictBatch(xs, preds); err != nil {
			return err
		}
		d := time.Since(t0)
		goruntime.ReadMemStats(&ms1)
		mallocs += ms1.Mallocs - ms0.Mallocs
		lat = append(lat, d.Seconds()/float64(b))
	}
	total := time.Since(start).Seconds()
	sortLatencies(lat)
	res := benchResult{
		Median:      lat[len(lat)/2],
		P90:         lat[min(len(lat)-1, int(math.Ceil(0.9*float64(len(lat))))-1)],
		PerSecond:   float64(len(lat)*b) / total,
		Allocs:      float64(mallocs) / float64(len(lat)),
		Bytes:       p.ScratchBytes(),
		Samples:     p.Options().Samples,
		Batch:       b,
		Strategy:    p.Options().Strategy.String(),
		Threads:     p.Options().Threads,
		Predictions: len(lat),
		Resident:    residentBytes(),
	}
	if !*pf.mean {
		det, err := timeMeanForward(ctx, m, b, xs, *minTime/4)
		if err != nil {
			return err
		}
		res.Deterministic, res.Ratio = det, res.Median/det
	}
	if *asJSON {
		return writeJSON(stdout, res)
	}
	fmt.Fprintf(stdout, "model             %s\n", *pf.model)
	fmt.Fprintf(stdout, "samples           %d (strategy %s, batch %d, %d threads)\n", res.Samples, res.Strategy, b, res.Threads)
	fmt.Fprintf(stdout, "latency per input %s median, %s p90 (%d timed calls)\n",
		time.Duration(res.Median*1e9), time.Duration(res.P90*1e9), res.Predictions)
	fmt.Fprintf(stdout, "throughput        %.1f inputs/s\n", res.PerSecond)
	fmt.Fprintf(stdout, "allocations       %.1f per prediction call\n", res.Allocs)
	fmt.Fprintf(stdout, "predictor memory  %s\n", formatBytes(res.Bytes))
	if res.Resident > 0 {
		fmt.Fprintf(stdout, "resident memory   %s (the whole process, after the timed predictions)\n", formatBytes(res.Resident))
	}
	if res.Ratio > 0 {
		fmt.Fprintf(stdout, "vs deterministic  %.2f× the forward at the posterior mean (%s per input, same run)\n",
			res.Ratio, time.Duration(res.Deterministic*1e9))
	}
	return nil
}

// residentBytes returns the process's resident memory (VmRSS in /proc/self/status), or 0 where
// that file is not there or has no such line.
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}

// timeMeanForward times the deterministic forward at the posterior mean (Options.Mean) on the
// same inputs for at least d and returns the median seconds per input.
func timeMeanForward(ctx context.Context, m *runtime.Model, batch int, xs []float32, d time.Duration) (float64, error) {
	p, err := m.NewPredictor(runtime.Options{Mean: true, MaxBatch: batch})
	if err != nil {
		return 0, fmt.Errorf("deterministic baseline: %w", err)
	}
	defer p.Close()
	preds := make([]runtime.Prediction, batch)
	var lat []float64
	for start := time.Now(); time.Since(start) < d || len(lat) < 5; {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		t0 := time.Now()
		if err := p.PredictBatch(xs, preds); err != nil {
			return 0, fmt.Errorf("deterministic baseline: %w", err)
		}
		lat = append(lat, time.Since(t0).Seconds()/float64(batch))
	}
	sortLatencies(lat)
	return lat[len(lat)/2], nil
}

// sortLatencies sorts timings in increasing order. They are finite and non-negative (a
// duration over a positive count), so this is slices.Sort's order; sort.Slice reuses the
// binary's one reflection-based sort where slices.Sort would instantiate its generic sort for
// float64 (about 4 KB of code in a board binary).
func sortLatencies(lat []float64) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
}
