package tests

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/format"
)

// TestFSVITable1QuickRef runs bench/fsvi_table1.sh --quick --methods fsviref,fsvi and checks that
// the reference-prior row trains with bench/configs/paper004_fmnist_fsvi.json's per-layer prior
// and initial σ (read back from its checkpoint: hidden layers e⁻¹⁰, the output layer's prior 1)
// while the FSVI row keeps the N(0, 1) prior and σ 10⁻⁴, and that both rows are in the table with
// the paper's FSVI accuracy beside them.
func TestFSVITable1QuickRef(t *testing.T) {
	skipQuick(t, "trains 3 small FSVI models (seconds)")
	skipNoTable1Data(t)
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cmd := exec.CommandContext(ctx, bash, "../bench/fsvi_table1.sh", "--quick", "--methods", "fsviref,fsvi", "--out", dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("fsvi_table1.sh: %v\n%s", err, stderr.String())
	}
	logCost(t, "bench/fsvi_table1.sh --quick --methods fsviref,fsvi", start, cmd.ProcessState)
	var rows []string
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "| FSVI") {
			rows = append(rows, line)
		}
	}
	if len(rows) != 2 || !strings.HasPrefix(rows[0], "| FSVI (random-monochrome) |") ||
		!strings.HasPrefix(rows[1], "| FSVI, reference prior (corrupted context) |") {
		t.Fatalf("FSVI rows %q, want FSVI (random-monochrome) then FSVI, reference prior:\n%s", rows, out)
	}
	for _, r := range rows {
		if !strings.Contains(r, "| 92.52 | 0.014 | 96.55 | 95.15 |") {
			t.Errorf("row %q lacks the paper's FSVI numbers", r)
		}
	}
	e10 := math.Exp(-10)
	for _, tc := range []struct {
		file, tensor string
		want         float64
	}{
		{"fsviref_1.ebnn", "1.prior_weight_sd", e10},
		{"fsviref_1.ebnn", "3.prior_bias_sd", e10},
		{"fsviref_1.ebnn", "5.prior_weight_sd", 1},
		{"fsviref_1.ebnn", "5.prior_bias_sd", 1},
		{"fsvi_1.ebnn", "1.prior_weight_sd", 1},
		{"fsvi_1.ebnn", "5.prior_weight_sd", 1},
	} {
		for i, x := range readTensor(t, filepath.Join(dir, tc.file), tc.tensor) {
			if !(math.Abs(float64(x)-tc.want) <= 1e-6*tc.want) {
				t.Fatalf("%s %s[%d] = %g, want %g", tc.file, tc.tensor, i, x, tc.want)
			}
		}
	}
	// q's initial σ: after 3 quick steps the hidden layers' σ of the reference row are still near
	// e⁻¹⁰ (not bayesianize's 10⁻⁴), the FSVI row's near 10⁻⁴.
	for _, tc := range []struct {
		file string
		want float64
	}{{"fsviref_1.ebnn", e10}, {"fsvi_1.ebnn", 1e-4}} {
		raw := readTensor(t, filepath.Join(dir, tc.file), "1._weight_sd")
		var n int
		for _, r := range raw {
			if s := math.Log1p(math.Exp(float64(r))); math.Abs(s-tc.want) < 0.2*tc.want {
				n++
			}
		}
		if n < len(raw)*9/10 {
			t.Errorf("%s: %d of %d hidden-layer σ within 20 %% of %g", tc.file, n, len(raw), tc.want)
		}
	}
}

// readTensor returns a copy of the float32 tensor name of the model file at path (the file's
// memory is unmapped when it is closed).
func readTensor(t *testing.T, path, name string) []float32 {
	t.Helper()
	f, err := format.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tn, err := f.Tensor(name)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	v, err := tn.Float32s()
	if err != nil {
		t.Fatalf("%s %s: %v", path, name, err)
	}
	return append([]float32(nil), v...)
}
