//go:build linux

package main

import (
	"strconv"
	"strings"
	"testing"
)

const model = "../../testdata/trained/fmnist_ffgu/model.ebnn"

// TestRun: a row per call with every column a finite number (CPU times positive), then one
// summary line per column and the correlations.
func TestRun(t *testing.T) {
	for _, samples := range []int{0, 2} {
		var b strings.Builder
		if err := run(&b, options{model: model, calls: 3, samples: samples, sweepMiB: 1, gemmReps: 1, fresh: samples == 2}); err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(b.String()), "\n")
		if len(lines) != 1+3+len(columns) || lines[0] != strings.Join(columns, " ") {
			t.Fatalf("samples %d: %d lines:\n%s", samples, len(lines), b.String())
		}
		for _, l := range lines[1:4] {
			f := strings.Fields(l)
			if len(f) != len(columns) {
				t.Fatalf("row %q: %d fields", l, len(f))
			}
			for i, s := range f {
				v, err := strconv.ParseFloat(s, 64)
				if err != nil || !(v >= 0) || (columns[i] == "cpu_ms" || columns[i] == "gemm_ms") && !(v > 0) {
					t.Errorf("row %q: %s = %q", l, columns[i], s)
				}
			}
		}
		if !strings.HasPrefix(lines[len(lines)-1], "# correlation of cpu_ms") {
			t.Errorf("last line %q", lines[len(lines)-1])
		}
	}
}

func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		o    options
		want string
	}{
		{options{calls: 3, sweepMiB: 1, gemmReps: 1}, "-model is required"},
		{options{model: model, calls: 1, sweepMiB: 1, gemmReps: 1}, "-calls 1"},
		{options{model: model, calls: 3, samples: -1, sweepMiB: 1, gemmReps: 1}, "-samples -1"},
		{options{model: model, calls: 3, sweepMiB: 0, gemmReps: 1}, "-sweep-mib 0"},
		{options{model: "nonexistent.ebnn", calls: 3, sweepMiB: 1, gemmReps: 1}, "nonexistent.ebnn"},
	} {
		var b strings.Builder
		if err := run(&b, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error containing %q", tc.o, err, tc.want)
		}
		if b.Len() != 0 {
			t.Errorf("%+v: wrote %q before refusing", tc.o, b.String())
		}
	}
}
