package main

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/prune"
)

func TestInspectCommand(t *testing.T) {
	out := convertFixture(t, "cnn_noisy_ffgu")
	stdout := runOK(t, "inspect", out, "--verify")
	checkContains(t, "output", stdout, "all checksums verified", "Sections:", "meta", "7.z_col", "Layers:", "inducing", "KL", "converted by edgebnn-convert")
	var in struct {
		Parameters              int64 `json:"parameters"`
		DeterministicParameters int64 `json:"deterministic_parameters"`
		FileBytes               int64 `json:"file_bytes"`
		DeterministicFP32Bytes  int64 `json:"deterministic_fp32_bytes"`
		Layers                  []struct {
			Name       string  `json:"name"`
			Kind       string  `json:"kind"`
			Parameters int64   `json:"parameters"`
			KL         float64 `json:"kl"`
		} `json:"layers"`
	}
	runCLIJSON(t, &in, "inspect", "--json", out)
	// Independent counts from the architecture: inducing layer (rows r, cols c, d_out, d_in):
	// r·d_out + c·d_in + r + c + 1 + 2rc; deterministic: d_out·d_in (bias column included).
	ind := func(r, c, dOut, dIn int64) int64 { return r*dOut + c*dIn + r + c + 1 + 2*r*c }
	wantP := ind(8, 12, 8, 10) + ind(8, 12, 16, 73) + ind(10, 32, 10, 577)
	wantD := int64(8*10 + 16*73 + 10*577)
	if in.Parameters != wantP || in.DeterministicParameters != wantD || in.DeterministicFP32Bytes != 4*wantD {
		t.Errorf("parameters %d / %d, want %d / %d", in.Parameters, in.DeterministicParameters, wantP, wantD)
	}
	st, _ := os.Stat(out)
	if in.FileBytes != st.Size() {
		t.Errorf("file_bytes %d, file has %d", in.FileBytes, st.Size())
	}
	if len(in.Layers) != 3 || in.Layers[2].Name != "7" || in.Layers[2].Kind != "inducing" || !(in.Layers[2].KL > 0) {
		t.Errorf("layers = %+v", in.Layers)
	}
	runCases(t, []cliCase{
		{name: "no file", args: []string{"inspect"}, wantCode: 2, wantStderr: []string{"expected one model FILE"}},
		{name: "missing", args: []string{"inspect", filepath.Join(t.TempDir(), "nope")}, wantCode: 1},
		{name: "help", args: []string{"inspect", "-h"}, wantCode: 0, wantStdout: []string{"Usage: edgebnn inspect"}},
	})
}

// TestInspectVerifyByteFlips: flipping any single byte of a converted file makes
// inspect --verify fail with exit status 1 (and never panic).
func TestInspectVerifyByteFlips(t *testing.T) {
	out := convertFixture(t, "mlp_ffgu", "--dtype", "f16", "--prune", "0.3", "--compress", "zstd")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "flipped.ebnn")
	rng := rand.New(rand.NewPCG(1, 1))
	n := 400
	if testing.Short() {
		n = 60
	}
	positions := []int{0, 8, 16, 60, 63, 64, len(data) - 1}
	for len(positions) < n {
		positions = append(positions, rng.IntN(len(data)))
	}
	for _, pos := range positions {
		b := append([]byte(nil), data...)
		b[pos] ^= byte(1 << rng.IntN(8))
		mustWrite(t, p, b)
		code, _, stderr := runCLI("inspect", "--verify", p)
		if code != 1 {
			t.Errorf("byte %d flipped: exit %d, want 1 (%s)", pos, code, stderr)
		}
		// Without --verify inspect may or may not notice, but must not panic.
		runCLI("inspect", p)
		runCLI("inspect", "--json", p)
	}
}

// TestInspectTruncatedAndHostile: truncated files and well-formed files with hostile metadata
// are errors, never panics.
func TestInspectTruncatedAndHostile(t *testing.T) {
	out := convertFixture(t, "cnn_ensembleu", "--compress", "zstd")
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "t.ebnn")
	step := max(len(data)/100, 1)
	for cut := 0; cut < len(data); cut += step {
		mustWrite(t, p, data[:cut])
		for _, args := range [][]string{{"inspect", p}, {"inspect", "--verify", p}, {"convert", "--checkpoint", p, "--out", filepath.Join(dir, "o.ebnn")}} {
			if !inBuild(args[0]) {
				continue
			}
			if code, _, _ := runCLI(args...); code != 1 {
				t.Errorf("%v on a file cut at %d: exit %d, want 1", args, cut, code)
			}
		}
	}
	metas := []string{
		`not json`,
		`{"version":1,"task":"classification","input_shape":[784],"layers":[{"name":"1","op":"linear","in":784,"out":1000000000}]}`,
		`{"version":1,"task":"classification","input_shape":[4],"layers":[{"name":"x","op":"linear","in":4,"out":2,"posterior":{"kind":"inducing","inducing_rows":2,"inducing_cols":5,"prior_sd":1}}]}`,
		`{"version":1,"task":"classification","input_shape":[4],"layers":[{"name":"x","op":"batchnorm","in":4}]}`,
	}
	for i, meta := range metas {
		w := format.NewWriter()
		if _, err := w.AddTensor("x.z_row", []int{2, 2}, []float32{1, 0, 0, float32(math.NaN())}, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := w.AddBlob("meta", []byte(meta), false); err != nil {
			t.Fatal(err)
		}
		hp := filepath.Join(dir, "hostile.ebnn")
		if err := w.WriteFile(hp, format.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, args := range [][]string{{"inspect", "--verify", hp}, {"inspect", "--json", hp}, {"convert", "--checkpoint", hp, "--out", filepath.Join(dir, "o.ebnn")}} {
			if !inBuild(args[0]) {
				continue
			}
			if code, _, stderr := runCLI(args...); code != 1 {
				t.Errorf("meta %d, %v: exit %d, want 1 (%s)", i, args, code, stderr)
			}
		}
	}
}

// TestSummariseConvertInfo: inspect's view of the converter's provenance (convertedInfo) reads
// every field it prints from the JSON that convert.Info writes.
func TestSummariseConvertInfo(t *testing.T) {
	info := convert.Info{Converter: "edgebnn-convert 1.2", Source: convert.SourceInfo{Kind: "state_dict", SHA256: "ab12"},
		DType: "f16", Compress: "zstd", Prune: &prune.Report{Mode: "global", Fraction: 0.25},
		Quant: &convert.QuantInfo{Bernstein: []convert.BernsteinGate{
			{Name: "fc.bf_weight", Flows: 20, F16: true, KS: 0.001, Bound: 0.0039},
			{Name: "fc.bf_bias", Flows: 2, Reason: "not monotone"}}}}
	raw, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	want := "converted by edgebnn-convert 1.2 from a state_dict (sha256 ab12), dtype f16, compress zstd, global pruning of 0.25 of Z\n" +
		"bernstein fc.bf_weight: fp16 (20 flows; runtime samples within 0.001 of the float32 flows in Kolmogorov distance, bound 0.0039)\n" +
		"bernstein fc.bf_bias: kept float32 (2 flows): not monotone"
	if got := summariseInfo(raw); got != want {
		t.Errorf("summariseInfo =\n%s\nwant\n%s", got, want)
	}
}

// TestInspectUnloadable: a file whose model does not build (a NaN in a Z) gets its sections and
// parameter counts printed, but "-" for the nonzero counts and KL terms that were never
// computed — not zeros that read as measurements — and the error, exit 1.
func TestInspectUnloadable(t *testing.T) {
	src := convertFixture(t, "mlp_ffgu")
	f, err := format.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := format.NewWriter()
	for _, s := range f.Sections() {
		if s.Name != "1.z_row" {
			if err := w.CopySection(f, s.Name); err != nil {
				t.Fatal(err)
			}
			continue
		}
		tn, err := f.Tensor(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tn.Float32s()
		if err != nil {
			t.Fatal(err)
		}
		v = append([]float32(nil), v...)
		v[0] = float32(math.NaN())
		if _, err := w.AddTensor(s.Name, s.Shape, v, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bad := filepath.Join(t.TempDir(), "nan.ebnn")
	if err := w.WriteFile(bad, format.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("inspect", bad)
	if code != 1 || !strings.Contains(stderr, `"1.z_row": element 0 is NaN`) {
		t.Fatalf("exit %d, stderr %q: want the load error", code, stderr)
	}
	seen := 0
	for _, line := range strings.Split(stdout, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || (f[0] != "1" && f[0] != "3" && f[0] != "total") || (f[1] != "inducing" && f[0] != "total") {
			continue
		}
		seen++
		if strings.Count(line, " - ") < 2 && !strings.HasSuffix(strings.TrimSpace(line), "-") {
			t.Errorf("layer line without '-' for the uncomputed nonzero count and KL: %q", line)
		}
	}
	if seen != 3 {
		t.Errorf("%d layer lines (want layers 1, 3 and the total):\n%s", seen, stdout)
	}
}

func TestFractionPercent(t *testing.T) {
	for _, c := range []struct {
		f    float64
		want string
	}{
		{0, "0.0%"}, {1, "100.0%"}, {0.5, "50.0%"}, {0.0004, "<0.1%"}, {0.0005, "0.1%"},
		{0.9999, ">99.9%"}, {0.99949, "99.9%"}, {1e-300, "<0.1%"}, {1 - 1e-16, ">99.9%"},
	} {
		if got := fractionPercent(c.f); got != c.want {
			t.Errorf("fractionPercent(%v) = %q, want %q", c.f, got, c.want)
		}
	}
}
