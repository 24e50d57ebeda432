package tests

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestAppGQuick runs bench/appg.sh --quick (one seed, 300 toy steps, 100 Boston epochs), which
// itself asserts that the 100-point toy gives the same run with both conditional KLs and that on
// 16 points the function-space KL is smaller, and checks the two tables' shape: the toy table's
// FFG-U rows (weight, function_space) with numeric cells (positive epistemic sds and λ), the Δ
// cells only on the second, and the Boston row pair for N = 16 with β 1.000, 0.314, finite
// log-likelihoods and RMSEs and positive λ.
func TestAppGQuick(t *testing.T) {
	skipQuick(t, "trains 6 small models (about 20 s on a loaded machine)")
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skipf("jq not found (apt-get install jq): %v", err)
	}
	out, rows := runQuickTable(t, "appg.sh")
	num := func(c string) float64 {
		t.Helper()
		mean, _, _ := strings.Cut(c, " ± ")
		v, err := strconv.ParseFloat(mean, 64)
		if err != nil {
			t.Fatalf("cell %q is not a number: %v\n%s", c, err, out)
		}
		return v
	}
	if len(rows) != 8 {
		t.Fatalf("%d table lines, want 2 × (header, separator, 2 rows):\n%s", len(rows), out)
	}
	toy, boston := rows[:4], rows[4:]
	if toy[0][0] != "posterior" || len(toy[0]) != 12 || boston[0][0] != "N" || len(boston[0]) != 10 {
		t.Fatalf("headers %q, %q", toy[0], boston[0])
	}
	for i, mode := range []string{"weight", "function_space"} {
		r := toy[2+i]
		if len(r) != 12 || r[0] != "FFG-U" || r[1] != mode {
			t.Fatalf("toy row %q", r)
		}
		for _, c := range r[2:10] {
			num(c)
		}
		if sd0, sdTrain := num(r[2]), num(r[3]); !(sd0 > 0 && sdTrain > 0) {
			t.Fatalf("toy row %s: epistemic sds %g, %g", mode, sd0, sdTrain)
		}
		if (mode == "weight") != (r[10] == "" && r[11] == "") {
			t.Fatalf("toy row %s: Δ cells %q, %q", mode, r[10], r[11])
		}
		if l1, l3 := num(r[8]), num(r[9]); !(l1 > 0 && l3 > 0) {
			t.Fatalf("toy row %s: λ %g, %g", mode, l1, l3)
		}
		b := boston[2+i]
		if len(b) != 10 || b[0] != "16" || b[1] != "1.000, 0.314" || b[2] != mode {
			t.Fatalf("Boston row %q", b)
		}
		if ll, rmse := num(b[3]), num(b[4]); !(ll < 0 && ll > -50) || !(rmse > 0 && rmse < 50) {
			t.Fatalf("Boston row %s: log-likelihood %g, RMSE %g", mode, ll, rmse)
		}
		if l1, l3 := num(b[5]), num(b[6]); !(l1 > 0 && l3 > 0) {
			t.Fatalf("Boston row %s: λ %g, %g", mode, l1, l3)
		}
		if (mode == "weight") != (b[9] == "") || (mode != "weight" && !strings.HasSuffix(b[9], " of 1")) {
			t.Fatalf("Boston row %s: split counts %q", mode, b[9])
		}
	}
	if kw, kf := num(toy[2][7]), num(toy[3][7]); !(kf < kw) {
		t.Fatalf("final KL %g (function_space) is not below %g (weight)", kf, kw)
	}
}
