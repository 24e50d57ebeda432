package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert"
	"github.com/edgebnn/edgebnn/convert/safetensors"
	"github.com/edgebnn/edgebnn/format"
	"github.com/edgebnn/edgebnn/internal/modeltest"
	"github.com/edgebnn/edgebnn/runtime"
)

// convertDemoFixture converts the bayesianize MLP fixture (f32) into a model file in a temporary
// directory.
func convertDemoFixture(t *testing.T) string {
	t.Helper()
	model := filepath.Join(t.TempDir(), "mlp.ebnn")
	if _, err := convert.Convert(convert.Options{
		Checkpoint: filepath.Join(demoFixture, "state_dict.pt"),
		Config:     filepath.Join(demoFixture, "inference_config.json"),
		Arch:       filepath.Join(demoFixture, "model.txt"),
		Out:        model,
	}); err != nil {
		t.Fatal(err)
	}
	return model
}

// TestPredictParity: a fixture converted to f32 and predicted through `edgebnn predict --json`
// meets the runtime's bayesianize parity bounds: with 4096 samples the probabilities are within
// 0.015 of bayesianize's probs_mean (max abs) and 0.001 on average, entropy and mutual
// information within 0.02 (bounds widened by √(4096/K) with fewer samples under -short).
func TestPredictParity(t *testing.T) {
	model := convertDemoFixture(t)
	refPath := filepath.Join(demoFixture, "reference.safetensors")
	K := 4096
	if testing.Short() {
		K = 512
	}
	out := runOK(t, "predict", "--model", model, "--input", refPath, "--samples", strconv.Itoa(K),
		"--strategy", "local", "--batch", "64", "--seed", "3", "--json")
	ref, err := safetensors.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) []float64 {
		tn, ok := ref.Tensor(name)
		if !ok {
			t.Fatalf("reference has no %q", name)
		}
		v, err := tn.Float64s()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	probs, totalH, mi := get("probs_mean"), get("total_entropy"), get("mutual_info")
	var worst, sum, worstH, worstMI float64
	n := 0
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var p classJSON
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %d: %v: %s", n+1, err, sc.Text())
		}
		if p.Index != n || len(p.Probs) != 10 {
			t.Fatalf("line %d: index %d with %d probabilities", n+1, p.Index, len(p.Probs))
		}
		for j, v := range p.Probs {
			d := math.Abs(float64(v) - probs[n*10+j])
			worst = math.Max(worst, d)
			sum += d
		}
		worstH = math.Max(worstH, math.Abs(p.Entropy-totalH[n]))
		worstMI = math.Max(worstMI, math.Abs(p.MutualInfo-mi[n]))
		n++
	}
	if n != 256 {
		t.Fatalf("%d predictions, want 256", n)
	}
	scale := math.Sqrt(4096 / float64(K))
	t.Logf("K=%d: max |Δp| %.4f, mean |Δp| %.5f, max |ΔH| %.4f, max |ΔMI| %.4f", K, worst, sum/2560, worstH, worstMI)
	if !(worst <= 0.015*scale) || !(sum/2560 <= 0.001*scale) || !(worstH <= 0.02*scale) || !(worstMI <= 0.02*scale) {
		t.Errorf("edgebnn predict differs from bayesianize beyond the parity bounds (scale %.2f)", scale)
	}
}

// TestPredictInputs: CSV input with a header row, and clear errors for bad inputs.
func TestPredictInputs(t *testing.T) {
	dir := t.TempDir()
	row := strings.TrimSuffix(strings.Repeat("0.5,", 784), ",")
	good := filepath.Join(dir, "good.csv")
	header := make([]string, 784)
	for i := range header {
		header[i] = "p" + strconv.Itoa(i)
	}
	mustWrite(t, good, []byte(strings.Join(header, ",")+"\n"+row+"\n"+row+"\n"))
	short := filepath.Join(dir, "short.csv")
	mustWrite(t, short, []byte("1,2,3\n"))
	wide := filepath.Join(dir, "wide.csv") // refused as it streams past, before it is parsed
	mustWrite(t, wide, []byte(row+"\n"+strings.Repeat(",", 1<<20)+"\n"))
	huge := filepath.Join(dir, "max.csv") // float32's largest value as numpy prints it is a number
	mustWrite(t, huge, []byte(strings.Replace(row, "0.5", "3.4028235e38", 1)+"\n"))
	bad := filepath.Join(dir, "bad.csv")
	mustWrite(t, bad, []byte(row+"\n"+strings.Replace(row, "0.5", "x", 1)+"\n"))
	model := filepath.Join("demo", "model.ebnn")
	for _, c := range []struct {
		name, input string
		code        int
		want        string
	}{
		{"csv with header", good, 0, "INPUT"},
		{"wrong width", short, 1, "line 1 has 3 values; the model takes 784"},
		{"far too wide", wide, 1, "line 2: more than 785 fields; the model takes 784 values"},
		{"float32 max", huge, 1, "input 0 (counting from 0): outputs are not finite"},
		{"not a number", bad, 1, `line 2, column 1: "x" is not a number`},
		{"missing file", filepath.Join(dir, "none.csv"), 1, "none.csv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run([]string{"predict", "--model", model, "--input", c.input, "--samples", "4"}, &out, &errb)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, errb.String())
			}
			if !strings.Contains(out.String()+errb.String(), c.want) {
				t.Errorf("output lacks %q:\n%s%s", c.want, out.String(), errb.String())
			}
		})
	}
}

// TestPredictMean: predict --mean gives bayesianize's network at the posterior mean
// (softmax of the reference's logits_at_mean) and zero mutual information.
func TestPredictMean(t *testing.T) {
	model := convertDemoFixture(t)
	refPath := filepath.Join(demoFixture, "reference.safetensors")
	out := runOK(t, "predict", "--model", model, "--input", refPath, "--mean", "--json")
	ref, err := safetensors.ReadFile(refPath)
	if err != nil {
		t.Fatal(err)
	}
	tn, ok := ref.Tensor("logits_at_mean")
	if !ok {
		t.Fatal("reference has no logits_at_mean")
	}
	logits, err := tn.Float64s()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	var worst float64
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var p classJSON
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("line %d: %v", n+1, err)
		}
		z := logits[n*10 : (n+1)*10]
		mx := z[0]
		for _, v := range z {
			mx = math.Max(mx, v)
		}
		var sum float64
		for _, v := range z {
			sum += math.Exp(v - mx)
		}
		for j, v := range p.Probs {
			worst = math.Max(worst, math.Abs(float64(v)-math.Exp(z[j]-mx)/sum))
		}
		if p.MutualInfo != 0 {
			t.Fatalf("input %d: mutual information %g at the posterior mean", n, p.MutualInfo)
		}
		n++
	}
	if n != 256 || !(worst <= 1e-5) {
		t.Fatalf("%d predictions, max |Δp| against softmax(logits_at_mean) %.3g (want 256, ≤ 1e-5)", n, worst)
	}
}

// TestPredictTableColumns: predict's table keeps its columns apart and aligned whatever the
// decisions, e.g. the long "abstain (low_confidence_high_mutual_info)" of the built-in model's
// policy on noise, which used to run into the MUTUAL INFO column.
func TestPredictTableColumns(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "noise.csv")
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for range 16 {
		for j := range 784 {
			if j > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Itoa(rng.IntN(256)))
		}
		b.WriteByte('\n')
	}
	mustWrite(t, in, []byte(b.String()))
	for _, tc := range []struct {
		name, model string
		want        string // a decision some row has
	}{
		{"policy", filepath.Join("demo", "model.ebnn"), "abstain ("},
		{"no policy", convertFixture(t, "mlp_ffgu"), "act"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := runOK(t, "predict", "--model", tc.model, "--input", in, "--samples", "4")
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != 17 {
				t.Fatalf("%d lines, want a header and 16 rows:\n%s", len(lines), out)
			}
			for i, line := range lines {
				// The last cell, after the last run of spaces: the decision, left-aligned in
				// its column; before it six numbers, right-aligned in theirs.
				k := strings.LastIndex(line, "  ")
				if k < 0 {
					t.Fatalf("line %d has no column gap: %q", i, line)
				}
				if k0 := strings.LastIndex(lines[0], "  "); k != k0 {
					t.Errorf("line %d: the decision starts at %d, the header's DECISION at %d:\n%s", i, k+2, k0+2, out)
				}
				cell, rest := line[k+2:], strings.Fields(line[:k])
				switch {
				case i == 0:
					if cell != "DECISION" {
						t.Errorf("header's last column %q, want DECISION", cell)
					}
				case cell != "act" && !strings.HasPrefix(cell, "abstain ("), len(rest) != 6:
					t.Errorf("line %d: decision %q after %q, want act or abstain (…) after six numbers", i, cell, rest)
				}
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("no decision %q in\n%s", tc.want, out)
			}
		})
	}
}

// TestAlignedTableWideCell: a cell wider than its column widens the column from its row on,
// still padding spaces from the previous cell.
func TestAlignedTableWideCell(t *testing.T) {
	var got bytes.Buffer
	at := &alignedTable{w: &got, widths: []int{3, 3}, padding: 2}
	for _, r := range [][]string{{"a", "b"}, {"0.5", "abstain"}, {"c", "d"}} {
		if err := at.row(r...); err != nil {
			t.Fatal(err)
		}
	}
	want := "    a    b\n  0.5  abstain\n    c        d\n"
	if got.String() != want {
		t.Errorf("got\n%q\nwant\n%q", got.String(), want)
	}
	// A left-aligned last column: its cells start after the padding whatever their width.
	got.Reset()
	at = &alignedTable{w: &got, widths: []int{3, 3}, padding: 2, leftLast: true}
	for _, r := range [][]string{{"a", "DECISION"}, {"0.5", "act"}, {"1234", "abstain (x)"}} {
		if err := at.row(r...); err != nil {
			t.Fatal(err)
		}
	}
	want = "    a  DECISION\n  0.5  act\n  1234  abstain (x)\n"
	if got.String() != want {
		t.Errorf("leftLast: got\n%q\nwant\n%q", got.String(), want)
	}
}

// TestPredictMeanRefusesSamplingFlags: --mean runs one pass at the posterior mean, so flags that
// shape the sampling are refused instead of silently ignored.
func TestPredictMeanRefusesSamplingFlags(t *testing.T) {
	for _, extra := range [][]string{{"--samples", "100"}, {"--strategy", "local"}} {
		code, _, stderr := runCLI(append([]string{"predict", "--model", "builtin", "--input", "x.csv", "--mean"}, extra...)...)
		if code != 2 || !strings.Contains(stderr, "--mean predicts once at the posterior mean: "+extra[0]+" does not apply") {
			t.Errorf("--mean %v: exit %d: %s", extra, code, stderr)
		}
	}
}

// TestPredictNotesPolicySamples: the defaults are the draws the model's policy was fitted with
// (the built-in model's: 256 samples, local, seed 42), silently; another --samples, --strategy or
// --seed is allowed but said, and so is --mean's mutual information of 0 (the MI veto cannot fire).
func TestPredictNotesPolicySamples(t *testing.T) {
	dir := t.TempDir()
	model, in := filepath.Join(dir, "m.ebnn"), filepath.Join(dir, "in.csv")
	mustWrite(t, model, demoModel)
	mustWrite(t, in, []byte(strings.TrimSuffix(strings.Repeat("0.5,", 784), ",")+"\n"))
	for _, tc := range []struct {
		args []string
		note string
	}{
		{[]string{"--samples", "32"}, "policy was fitted with other draws; predicting with 32 samples, not 256 (the defaults match)"},
		{[]string{"--seed", "1", "--strategy", "weight"}, "predicting with strategy weight, not local, seed 1, not 42"},
		{[]string{"--mean"}, "--mean predicts with mutual information 0: the policy's max_mutual_info never abstains"},
	} {
		code, _, stderr := runCLI(append([]string{"predict", "--model", model, "--input", in}, tc.args...)...)
		if code != 0 || !strings.Contains(stderr, tc.note) {
			t.Errorf("%v: exit %d: %s", tc.args, code, stderr)
		}
	}
	for _, args := range [][]string{nil, {"--samples", "256"}, {"--seed", "42", "--strategy", "local"}} {
		code, stdout, stderr := runCLI(append([]string{"predict", "--model", model, "--input", in, "--json"}, args...)...)
		if code != 0 || stderr != "" || !strings.Contains(stdout, `"samples":256`) {
			t.Errorf("%v: exit %d: %q %q", args, code, stdout, stderr)
		}
	}
}

// TestPredictDeterministicPolicyNoNote: a deterministic model predicts once whatever its
// policy's K (an older calibrate recorded 32), so predict has nothing to note.
func TestPredictDeterministicPolicyNoNote(t *testing.T) {
	dir := t.TempDir()
	spec := runtime.Spec{Version: runtime.SpecVersion, Task: runtime.Classification, InputShape: []int{2},
		Layers: []runtime.LayerSpec{{Name: "fc", Op: runtime.OpLinear, In: 2, Out: 2, Bias: true}}}
	w := format.NewWriter()
	modeltest.AddSpec(t, w, spec)
	for name, tn := range map[string]struct {
		shape []int
		data  []float32
	}{"fc.weight": {[]int{2, 2}, []float32{1, 0, 0, 1}}, "fc.bias": {[]int{2}, []float32{0, 0}}} {
		if _, err := w.AddTensor(name, tn.shape, tn.data, format.AddOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.AddBlob(runtime.PolicyBlob, []byte(`{"version":1,"min_confidence":0.5,"samples":32}`), false); err != nil {
		t.Fatal(err)
	}
	model, in := filepath.Join(dir, "det.ebnn"), filepath.Join(dir, "in.csv")
	modeltest.Save(t, w, model)
	mustWrite(t, in, []byte("1,0\n"))
	code, _, stderr := runCLI("predict", "--model", model, "--input", in)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stderr, "note:") {
		t.Errorf("a deterministic model predicts with its default, yet: %s", stderr)
	}
}
