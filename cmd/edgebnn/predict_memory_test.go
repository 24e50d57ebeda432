package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/internal/testutil"
)

const predictMemEnv = "EDGEBNN_PREDICT_MEM_ARGS"

// TestPredictMemoryBounded runs predict in a fresh process (this test binary, re-executed) and
// checks its peak RSS (VmHWM): reading 20000 inputs (63 MB of float32) must not hold them all,
// and --batch 65536 --threads 4 for one input must not allocate scratch for 65536 inputs.
func TestPredictMemoryBounded(t *testing.T) {
	if args := os.Getenv(predictMemEnv); args != "" {
		var out lineCounter
		var errb bytes.Buffer
		code := run(strings.Split(args, "\x1f"), &out, &errb)
		testutil.ChildExit(fmt.Sprintf("%d %d lines %s", code, out, errb.String()))
	}
	testutil.SkipWithoutPeakRSS(t)
	dir := t.TempDir()
	row := strings.TrimSuffix(strings.Repeat("0.5,", 784), ",") + "\n"
	many := filepath.Join(dir, "many.csv")
	f, err := os.Create(many)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	for range 20000 {
		bw.WriteString(row)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	one := filepath.Join(dir, "one.csv")
	mustWrite(t, one, []byte(row))
	model := filepath.Join("demo", "model.ebnn")
	const limit = 64 << 20
	for _, c := range []struct {
		name  string
		args  []string
		lines int
	}{
		{"20000 inputs", []string{"predict", "--model", model, "--input", many, "--samples", "2", "--strategy", "local"}, 20001},
		{"20000 inputs, JSON", []string{"predict", "--model", model, "--input", many, "--samples", "2", "--strategy", "local", "--json"}, 20000},
		{"huge batch and threads", []string{"predict", "--model", model, "--input", one, "--samples", "64", "--batch", "65536", "--threads", "4"}, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			child := testutil.RunChild(t, "TestPredictMemoryBounded", predictMemEnv+"="+strings.Join(c.args, "\x1f"))
			t.Logf("peak RSS %.1f MB; %s", float64(child.PeakRSS)/1e6, child.Result)
			if want := fmt.Sprintf("0 %d lines", c.lines); !strings.HasPrefix(child.Result, want) {
				t.Errorf("exit/lines %q, want %q", child.Result, want)
			}
			if child.PeakRSS < 0 || child.PeakRSS > limit {
				t.Errorf("peak RSS %d bytes (limit %d)", child.PeakRSS, limit)
			}
		})
	}
}

// lineCounter counts the lines written to it and keeps nothing.
type lineCounter int

func (c *lineCounter) Write(p []byte) (int, error) {
	*c += lineCounter(bytes.Count(p, []byte{'\n'}))
	return len(p), nil
}
