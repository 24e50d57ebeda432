package main

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/runtime"
)

func TestReadARMAndRatios(t *testing.T) {
	path := filepath.Join(t.TempDir(), "arm.txt")
	body := "# A53\ndet 1 200\n\nffgu-weight 1 500\nensw 4 820\nffgu-weight 4 1640\nensu 2 900\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	counts, err := readARM(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(counts) != 5 || counts[2] != (ARMCount{"ensw", 4, 820}) {
		t.Fatalf("readARM = %v", counts)
	}
	xDet, xEns, err := armRatios(counts)
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string][2]float64{
		"det/1":         {1, 1},
		"ffgu-weight/1": {2.5, 2.5},  // Ensemble-W of 1 is the deterministic forward
		"ffgu-weight/4": {8.2, 2},    // 1640/200, 1640/820 (the counted ensemble)
		"ensu/2":        {4.5, 2.25}, // no counted Ensemble-W of 2: 2 × 200
	} {
		if !(math.Abs(xDet[key]-want[0]) <= 1e-12) || !(math.Abs(xEns[key]-want[1]) <= 1e-12) {
			t.Errorf("%s: × det %g, × Ensemble-W %g; want %g, %g", key, xDet[key], xEns[key], want[0], want[1])
		}
	}
	for _, bad := range []string{"det 1\n", "det x 5\n", "det 1 0\n", "ffgu 1 5\n"} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := readARM(path)
		if err == nil {
			_, _, err = armRatios(c) // "ffgu 1 5" parses but has no deterministic count
		}
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestTable: the table's rows and ratios from hand-made timings (two repetitions).
func TestTable(t *testing.T) {
	res := &Results{Memory: map[string]*Memory{
		"det/1":  {FileBytes: 1 << 20, RuntimeBytes: 4 << 20},
		"ensw/1": {FileBytes: 1 << 20, RuntimeBytes: 4 << 20},
		"ffgu/1": {FileBytes: 1 << 19, RuntimeBytes: 1 << 20},
	}}
	for rep, s := range []float64{0.010, 0.012} {
		res.Timings = append(res.Timings,
			Timing{Rep: rep, K: 1, Batch: 1, Method: "det", Seconds: 2 * s, CPUSeconds: s, XDet: 1, XEnsW: 1, WallXEnsW: 1},
			Timing{Rep: rep, K: 1, Batch: 1, Method: "ffgu-weight", Seconds: 9, CPUSeconds: 3 * s, XDet: 3 + float64(rep), XEnsW: 3, WallXEnsW: 2 + 2*float64(rep)})
	}
	var b strings.Builder
	if err := table(&b, res, []ARMCount{{"det", 1, 100}, {"ffgu-weight", 1, 250}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want header, separator and 2 rows:\n%s", len(lines), b.String())
	}
	want := "| 1 | 1 | FFG-U, weight | 33.0 ± 3.0 | 3.50 ± 0.50 | 3.000 ± 0.000 | 3.000 ± 1.000 | 2.50 | 2.50 | 0.5 | 1.0 | 0.250 | 2 |"
	if lines[3] != want {
		t.Errorf("row\n%s\nwant\n%s", lines[3], want)
	}
}

var (
	benchOnce sync.Once
	benchDir  string
	benchMem  map[string]*Memory
	benchErr  error
)

// benchKs are the K of BenchmarkFig3: FIG3_K (comma-separated) or 1, 2, 4, 8, 16, 32.
func benchKs(tb testing.TB) []int {
	s := os.Getenv("FIG3_K")
	if s == "" {
		s = "1,2,4,8,16,32"
	}
	ks, err := parseInts(s)
	if err != nil {
		tb.Fatalf("FIG3_K: %v", err)
	}
	return ks
}

// BenchmarkFig3 times a K-sample prediction of each method at batch 1 and reports x_det, its
// ratio to the deterministic ResNet-18 forward, and x_ensw, its ratio to Ensemble-W of K members,
// both re-timed right after the sub-benchmark, plus the model file and runtime memory (file,
// loaded model and predictor scratch, as convert.Plan sizes them). The models (Ensemble-W of 32
// is 1.4 GB) are built once in FIG3_DIR, or a temporary directory.
//
//	FIG3_K=1,4,16 go test -run '^$' -bench Fig3 -benchtime 3x ./bench/fig3
func BenchmarkFig3(b *testing.B) {
	ks := benchKs(b)
	benchOnce.Do(func() {
		benchDir = os.Getenv("FIG3_DIR")
		if benchDir == "" {
			if benchDir, benchErr = os.MkdirTemp("", "fig3"); benchErr != nil {
				return
			}
		}
		benchMem, benchErr = build(benchDir, "resnet18", ks, io.Discard)
		debug.FreeOSMemory() // the plans' garbage, collected now rather than during the timings
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	rng := rand.New(rand.NewPCG(1, 3))
	x := make([]float32, 3*32*32)
	for i := range x {
		x[i] = rng.Float32()
	}
	again := timer{minTime: 200 * time.Millisecond, minCalls: 2}
	for _, k := range ks {
		for _, me := range append([]method{{Key: "det", Name: "deterministic"}}, methods...) {
			if me.Key == "det" && k != ks[0] {
				continue
			}
			b.Run(fmt.Sprintf("K=%d/%s", k, me.Key), func(b *testing.B) {
				m, p, err := predictor(modelFile(benchDir, me.Key, k), k, 1, me.strategy)
				if err != nil {
					b.Fatal(err)
				}
				defer m.Close()
				defer p.Close()
				var pr runtime.Prediction
				if err := p.Predict(x, &pr); err != nil { // the pages of every member
					b.Fatal(err)
				}
				b.ResetTimer()
				for b.Loop() {
					if err := p.Predict(x, &pr); err != nil {
						b.Fatal(err)
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				b.StopTimer()
				det, _, err := timeOne(again, modelFile(benchDir, "det", 1), 1, 1, runtime.Auto, x)
				if err != nil {
					b.Fatal(err)
				}
				ens, _, err := timeOne(again, modelFile(benchDir, "ensw", k), k, 1, runtime.Auto, x)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(ns*1e-9/det, "x_det")
				b.ReportMetric(ns*1e-9/ens, "x_ensw")
				memK := me.Key
				if strings.HasPrefix(memK, "ffgu") {
					memK = "ffgu"
				}
				if mem := benchMem[memKey(memK, k)]; mem != nil {
					b.ReportMetric(float64(mem.FileBytes), "file_bytes")
					b.ReportMetric(float64(mem.RuntimeBytes), "runtime_bytes")
				}
			})
		}
	}
}

// TestRunRefusesBadFlags: run names the flag and the bad value before it builds or measures
// anything.
func TestRunRefusesBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-arch", "vgg16"}, `-arch "vgg16" is not resnet18 or resnet50`},
		{[]string{"-reps", "0"}, "-reps must be positive"},
		{[]string{"-k", "1,x"}, "-k"},
		// an output that cannot be written is refused before the measurements
		{[]string{"-png", os.TempDir()}, "-png " + os.TempDir() + ": unsafe output path: it is a directory"},
		{[]string{"-json", "/nonexistent/fig3.json"}, "-json /nonexistent/fig3.json: directory /nonexistent does not exist"},
	} {
		dir := filepath.Join(t.TempDir(), "models")
		var out, errs strings.Builder
		err := run(append([]string{"-dir", dir}, tc.args...), &out, &errs)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: %v, want an error containing %q", tc.args, err, tc.want)
		}
		if _, statErr := os.Stat(dir); statErr == nil {
			t.Errorf("run %q created %s before refusing", tc.args, dir)
		}
	}
}
