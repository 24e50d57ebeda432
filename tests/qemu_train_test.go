package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// predictLine is the part of `edgebnn predict --json` output the test compares.
type predictLine struct {
	Index      int       `json:"index"`
	Probs      []float64 `json:"probs"`
	Pred       int       `json:"pred"`
	MutualInfo float64   `json:"mutual_info"`
}

// TestTrainOnArm64 takes a BF-VI last-layer model (posterior bernstein_last, Two Moons, degree
// 10) and an FSVI model (ffg_w with the function-space objective, uniform context) through
// train → convert → predict twice: on the host, and entirely on arm64 under
// qemu-aarch64-static -cpu cortex-a53 (a cross-built edgebnn with the host commands). The host's
// f32 and f16 model files predicted by the arm64 binary must give the host's predictions to float
// tolerance (same seed: the same Philox streams; only the kernels' rounding differs), and the
// model trained and converted on arm64 must predict the same classes with probabilities within
// 1e-4 (training itself may round differently: different kernels; observed: both differences
// below 1e-7).
func TestTrainOnArm64(t *testing.T) {
	goBin := hostGo(t)
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		t.Skipf("qemu-aarch64-static not installed (apt-get install qemu-user-static): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	dir := t.TempDir()
	host, arm := filepath.Join(dir, "edgebnn"), filepath.Join(dir, "edgebnn-arm64")
	for _, b := range []struct{ out, goarch string }{{host, ""}, {arm, "arm64"}} {
		cmd := exec.CommandContext(ctx, goBin, "build", "-o", b.out, "../cmd/edgebnn")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=", "GOARCH="+b.goarch, "GOARM=")
		if b.goarch != "" {
			cmd.Env = append(cmd.Env, "GOOS=linux")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", b.out, err, out)
		}
	}
	arch := filepath.Join(dir, "arch.json")
	inputs := filepath.Join(dir, "in.csv")
	var csv bytes.Buffer
	csv.WriteString("x,y\n")
	for i := 0; i < 40; i++ {
		fmt.Fprintf(&csv, "%.4f,%.4f\n", -1.5+4*math.Mod(0.618*float64(i), 1), -1+2.5*math.Mod(0.377*float64(i), 1))
	}
	if err := os.WriteFile(inputs, csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(arch, []byte(`{"layers": [{"name": "fc1", "type": "Linear", "in_features": 2, "out_features": 16},
		{"name": "relu", "type": "ReLU"}, {"name": "fc2", "type": "Linear", "in_features": 16, "out_features": 2}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	// run executes edgebnn on the host or (arm) under QEMU and returns its standard output.
	run := func(onArm bool, args ...string) []byte {
		t.Helper()
		name, full := host, args
		if onArm {
			name, full = qemu, append([]string{"-cpu", "cortex-a53", arm}, args...)
		}
		cmd := exec.CommandContext(ctx, name, full...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s\n%s", name, full, err, stdout.String(), stderr.String())
		}
		return stdout.Bytes()
	}
	predict := func(onArm bool, model string) []predictLine {
		t.Helper()
		out := run(onArm, "predict", "--model", model, "--input", inputs, "--header", "--samples", "32", "--seed", "7", "--json")
		var lines []predictLine
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			var l predictLine
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("predict output %q: %v", sc.Text(), err)
			}
			lines = append(lines, l)
		}
		if len(lines) != 40 {
			t.Fatalf("predict printed %d predictions, want 40:\n%s", len(lines), out)
		}
		return lines
	}
	// compare checks two runs' predictions; it returns the largest probability difference.
	compare := func(what string, a, b []predictLine, probTol, miTol float64) float64 {
		t.Helper()
		worst := 0.0
		for i := range a {
			if a[i].Pred != b[i].Pred && !(math.Abs(a[i].Probs[0]-0.5) <= probTol) {
				t.Errorf("%s: input %d: class %d vs %d (probabilities %v, %v)", what, i, a[i].Pred, b[i].Pred, a[i].Probs, b[i].Probs)
			}
			for k := range a[i].Probs {
				worst = max(worst, math.Abs(a[i].Probs[k]-b[i].Probs[k]))
			}
			if d := math.Abs(a[i].MutualInfo - b[i].MutualInfo); !(d <= miTol*max(1, a[i].MutualInfo)) {
				t.Errorf("%s: input %d: mutual information %g vs %g", what, i, a[i].MutualInfo, b[i].MutualInfo)
			}
		}
		if !(worst <= probTol) {
			t.Errorf("%s: probabilities differ by up to %g (tolerance %g)", what, worst, probTol)
		}
		t.Logf("%s: probabilities differ by at most %.3g", what, worst)
		return worst
	}
	kinds := []struct {
		name  string
		train []string
	}{
		{"bernstein_last", []string{"--posterior", "bernstein_last", "--bernstein-degree", "10"}},
		{"fsvi", []string{"--posterior", "ffg_w", "--objective", "fsvi", "--context", "uniform", "--context-size", "16"}},
	}
	for _, kind := range kinds {
		models := map[bool]map[string]string{}
		for _, onArm := range []bool{false, true} {
			sub := filepath.Join(dir, kind.name, map[bool]string{false: "host", true: "arm64"}[onArm])
			if err := os.MkdirAll(sub, 0o755); err != nil {
				t.Fatal(err)
			}
			ckpt := filepath.Join(sub, "m.ebnn")
			args := append([]string{"train", "--arch", arch, "--data", "moons"}, kind.train...)
			run(onArm, append(args, "--epochs", "20", "--batch-size", "50", "--lr", "0.01", "--optimizer", "adam",
				"--seed", "3", "--no-plots", "--out", ckpt)...)
			models[onArm] = map[string]string{}
			for _, dtype := range []string{"f32", "f16"} {
				out := filepath.Join(sub, "m_"+dtype+".ebnn")
				run(onArm, "convert", "--checkpoint", ckpt, "--dtype", dtype, "--out", out)
				models[onArm][dtype] = out
			}
		}
		for _, dtype := range []string{"f32", "f16"} {
			what := kind.name + " " + dtype
			hostPred := predict(false, models[false][dtype])
			// The same file on both: only the kernels' float32 rounding differs.
			compare("host "+what+" model, host vs arm64", hostPred, predict(true, models[false][dtype]), 1e-5, 1e-4)
			// Trained and converted on arm64.
			compare("host vs arm64 "+what+" model, each trained on its machine", hostPred, predict(true, models[true][dtype]), 1e-4, 1e-3)
		}
	}
}
