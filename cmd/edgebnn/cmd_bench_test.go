package main

import (
	"os"
	goruntime "runtime"
	"testing"
)

// TestBenchFlags: --count runs exactly N predictions (with --json, reported as JSON), --warmup
// sets the warm-up, --mean benchmarks the deterministic forward, the timed mode reports the ratio
// to the deterministic forward, and bad values are usage errors.
func TestBenchFlags(t *testing.T) {
	out := convertFixture(t, "mlp_ffgu", "--dtype", "f16")
	runCases(t, []cliCase{
		{name: "count", args: []string{"bench", "--model", out, "--count", "3", "--samples", "4"},
			wantStdout: []string{"predictions       3 (batch 1, 4 samples"}},
		{name: "count mean", args: []string{"bench", "--model", out, "--count", "2", "--mean"},
			wantStdout: []string{"predictions       2 (batch 1, 1 samples"}},
		{name: "ratio", args: []string{"bench", "--model", out, "--min-time", "5ms", "--samples", "4"},
			wantStdout: []string{"vs deterministic ", "the forward at the posterior mean"}},
		{name: "negative count", args: []string{"bench", "--model", out, "--count", "-1"}, wantCode: 2,
			wantStderr: []string{"--count -1 is out of range"}},
		{name: "huge count", args: []string{"bench", "--model", out, "--count", "99999999999"}, wantCode: 2,
			wantStderr: []string{"out of range"}},
		{name: "one warm-up", args: []string{"bench", "--model", out, "--count", "2", "--warmup", "1", "--samples", "4"},
			wantStdout: []string{"predictions       2 (batch 1, 4 samples"}},
		{name: "no warm-up", args: []string{"bench", "--model", out, "--count", "1", "--warmup", "0"},
			wantStdout: []string{"predictions       1 (batch 1"}},
		{name: "negative warm-up", args: []string{"bench", "--model", out, "--warmup", "-1"}, wantCode: 2,
			wantStderr: []string{"--warmup -1 is out of range (0 to 1000)"}},
		{name: "huge warm-up", args: []string{"bench", "--model", out, "--warmup", "1001"}, wantCode: 2,
			wantStderr: []string{"--warmup 1001 is out of range"}},
		{name: "zero min-time", args: []string{"bench", "--model", out, "--min-time", "0s"}, wantCode: 2,
			wantStderr: []string{"--min-time must be positive"}},
	})
	// --count with --json: the counted run's settings as JSON, no timing keys.
	for _, tc := range []struct {
		name string
		args []string
		want benchCountResult
	}{
		{"count", []string{"--count", "3", "--samples", "4"}, benchCountResult{Predictions: 3, Warmup: 3, Samples: 4, Batch: 1, Threads: 1}},
		{"count mean batch", []string{"--count", "2", "--mean", "--batch", "2", "--warmup", "0"},
			benchCountResult{Predictions: 2, Warmup: 0, Samples: 1, Batch: 2, Threads: 1}},
	} {
		t.Run("json "+tc.name, func(t *testing.T) {
			args := append([]string{"bench", "--model", out, "--json"}, tc.args...)
			var got benchCountResult
			runCLIJSON(t, &got, args...)
			if got.Strategy == "" {
				t.Errorf("bench %v: no strategy", tc.args)
			}
			tc.want.Strategy = got.Strategy
			if got != tc.want {
				t.Errorf("bench %v: %+v, want %+v", tc.args, got, tc.want)
			}
			var keys map[string]any
			runCLIJSON(t, &keys, args...)
			if _, ok := keys["per_input_seconds_median"]; ok || len(keys) != 6 {
				t.Errorf("bench %v: keys %v, want the six of benchCountResult", tc.args, keys)
			}
		})
	}
	var res benchResult
	runCLIJSON(t, &res, "bench", "--model", out, "--min-time", "5ms", "--samples", "4", "--json")
	if !(res.Deterministic > 0) || !(res.Ratio > 0) || res.Samples != 4 {
		t.Errorf("bench --json: %+v", res)
	}
	// The resident memory where Linux's /proc/self/status says it: at least the predictor's
	// scratch, less than the machine could hold.
	if _, err := os.Stat("/proc/self/status"); err == nil && (res.Resident < res.Bytes || res.Resident > 1<<40) {
		t.Errorf("bench --json: resident %d bytes, predictor %d", res.Resident, res.Bytes)
	}
}

// TestResidentBytes: residentBytes reads VmRSS from /proc/self/status where there is one, and
// grows by about what a newly touched allocation holds.
func TestResidentBytes(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc/self/status")
	}
	before := residentBytes()
	b := make([]byte, 64<<20)
	for i := range b {
		b[i] = 1
	}
	after := residentBytes()
	goruntime.KeepAlive(b)
	if before <= 0 || after-before < 48<<20 {
		t.Errorf("resident %d bytes before touching 64 MiB, %d after", before, after)
	}
}
