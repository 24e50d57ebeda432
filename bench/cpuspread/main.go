//go:build linux

// Command cpuspread measures how much the CPU time of one prediction varies from call to call on
// this machine, and whether work that has nothing to do with the model varies with it. After each
// prediction it times, on the same OS thread, a fixed GEMM that stays in cache (96 × 96 × 96, 200
// times) and a sweep over a buffer too large for any cache (-sweep-mib). Per call it prints the
// thread's CPU time (CLOCK_THREAD_CPUTIME_ID) and wall time of the prediction, the thread's page
// faults and voluntary/involuntary context switches during it (getrusage RUSAGE_THREAD), the
// machine's steal ticks (/proc/stat), and the two controls' CPU times; then, on lines starting
// with #, each column's minimum, median, maximum and coefficient of variation, and the correlation
// of the prediction's CPU time with each control's.
//
// If the prediction's spread comes with page faults or context switches, it is paging or
// scheduling; if the controls spread with it and none of those counters moves, the core itself
// runs slower at times — what a virtual CPU sharing its physical core or its host's memory with
// other tenants shows (docs/results/fig3.md, session 18).
//
//	go run ./bench/cpuspread -model runs/fig3/models/det.ebnn [-calls 40] [-samples K] [-fresh]
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/edgebnn/edgebnn/kernels"
	"github.com/edgebnn/edgebnn/runtime"
	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat"
)

func main() {
	model := flag.String("model", "", "the model `FILE` (.ebnn)")
	calls := flag.Int("calls", 40, "predictions timed")
	samples := flag.Int("samples", 0, "samples K per prediction (0: the deterministic forward at the posterior mean)")
	fresh := flag.Bool("fresh", false, "load the model again before every call (as bench/fig3 loads each method)")
	sweepMiB := flag.Int("sweep-mib", 128, "size of the memory sweep's buffer in MiB")
	flag.Parse()
	if err := run(os.Stdout, options{*model, *calls, *samples, *fresh, *sweepMiB, 200}); err != nil {
		fmt.Fprintln(os.Stderr, "cpuspread:", err)
		os.Exit(1)
	}
}

type options struct {
	model          string
	calls, samples int
	fresh          bool
	sweepMiB       int
	gemmReps       int // the control GEMM's repetitions per call
}

// columns of a row, in order.
var columns = []string{"call", "cpu_ms", "wall_ms", "minflt", "majflt", "nvcsw", "nivcsw", "steal_ticks", "sweep_ms", "gemm_ms"}

func run(w io.Writer, o options) error {
	switch {
	case o.model == "":
		return fmt.Errorf("-model is required")
	case o.calls < 2 || o.calls > 1e6:
		return fmt.Errorf("-calls %d: want 2 to 1000000", o.calls)
	case o.samples < 0:
		return fmt.Errorf("-samples %d is negative", o.samples)
	case o.sweepMiB < 1 || o.sweepMiB > 4096:
		return fmt.Errorf("-sweep-mib %d: want 1 to 4096", o.sweepMiB)
	case o.gemmReps < 1:
		return fmt.Errorf("%d GEMM repetitions", o.gemmReps)
	}
	// One thread does everything, so that its CPU time is the work's.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	load := func() (*runtime.Model, *runtime.Predictor, error) {
		m, err := runtime.Load(o.model)
		if err != nil {
			return nil, nil, err
		}
		opts := runtime.Options{Samples: o.samples, MaxBatch: 1, Seed: 1, Threads: 1, Mean: o.samples == 0}
		p, err := m.NewPredictor(opts)
		if err != nil {
			m.Close()
			return nil, nil, fmt.Errorf("%s: %w", o.model, err)
		}
		return m, p, nil
	}
	m, p, err := load()
	if err != nil {
		return err
	}
	defer func() { p.Close(); m.Close() }()
	rng := rand.New(rand.NewPCG(1, 3))
	x := make([]float32, m.InputSize())
	for i := range x {
		x[i] = rng.Float32()
	}
	big := make([]float32, o.sweepMiB<<18)
	for i := range big {
		big[i] = 1
	}
	const g = 96
	a, b, c := make([]float32, g*g), make([]float32, g*g), make([]float32, g*g)
	for i := range a {
		a[i], b[i] = rng.Float32(), rng.Float32()
	}
	out := make([]runtime.Prediction, 1)
	rows := make([][]float64, 0, o.calls)
	var sink float32
	fmt.Fprintln(w, strings.Join(columns, " "))
	for call := range o.calls {
		if o.fresh && call > 0 {
			p.Close()
			m.Close()
			if m, p, err = load(); err != nil {
				return err
			}
		}
		var r0, r1 unix.Rusage
		s0 := steal()
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &r0); err != nil {
			return fmt.Errorf("getrusage: %w", err)
		}
		c0, t0 := threadMS(), time.Now()
		if err := p.PredictBatch(x, out); err != nil {
			return fmt.Errorf("%s: %w", o.model, err)
		}
		cpu, wall := threadMS()-c0, float64(time.Since(t0).Microseconds())/1e3
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &r1); err != nil {
			return fmt.Errorf("getrusage: %w", err)
		}
		s1 := steal()
		c0 = threadMS()
		for range 2 {
			for i := 0; i < len(big); i += 16 { // one value per 64-byte line
				sink += big[i]
			}
		}
		sweep := threadMS() - c0
		c0 = threadMS()
		for range o.gemmReps {
			kernels.Gemm(false, false, g, g, g, 1, a, g, b, g, 0, c, g)
		}
		gemm := threadMS() - c0
		row := []float64{float64(call), cpu, wall, float64(r1.Minflt - r0.Minflt), float64(r1.Majflt - r0.Majflt),
			float64(r1.Nvcsw - r0.Nvcsw), float64(r1.Nivcsw - r0.Nivcsw), float64(s1 - s0), sweep, gemm}
		rows = append(rows, row)
		fields := make([]string, len(row))
		for i, v := range row {
			fields[i] = strconv.FormatFloat(v, 'f', -1, 64)
			if i == 1 || i == 2 || i >= 8 {
				fields[i] = strconv.FormatFloat(v, 'f', 2, 64)
			}
		}
		fmt.Fprintln(w, strings.Join(fields, " "))
	}
	if sink < 0 { // never: keeps the sweep
		fmt.Fprintln(w, sink)
	}
	summarize(w, rows)
	return nil
}

// summarize prints each column's minimum, median, maximum and coefficient of variation, and the
// correlation of the prediction's CPU time with the controls'.
func summarize(w io.Writer, rows [][]float64) {
	col := func(j int) []float64 {
		v := make([]float64, len(rows))
		for i, r := range rows {
			v[i] = r[j]
		}
		return v
	}
	for j := 1; j < len(columns); j++ {
		v := col(j)
		mean, sd := stat.PopMeanStdDev(v, nil)
		s := slices.Clone(v)
		slices.Sort(s)
		cv := math.NaN()
		if mean != 0 {
			cv = sd / mean
		}
		fmt.Fprintf(w, "# %s: min %.4g median %.4g max %.4g cv %.3f\n", columns[j], s[0], s[len(s)/2], s[len(s)-1], cv)
	}
	cpu := col(1)
	fmt.Fprintf(w, "# correlation of cpu_ms with sweep_ms %.2f, with gemm_ms %.2f\n", stat.Correlation(cpu, col(8), nil), stat.Correlation(cpu, col(9), nil))
}

// threadMS is the calling thread's CPU time in milliseconds.
func threadMS() float64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return math.NaN()
	}
	return float64(ts.Sec)*1e3 + float64(ts.Nsec)/1e6
}

// steal returns the machine's steal ticks (/proc/stat, the cpu line's eighth value), or 0 when
// the file does not say.
func steal() int64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0
	}
	v, _ := strconv.ParseInt(f[8], 10, 64)
	return v
}
