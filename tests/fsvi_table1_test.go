package tests

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// TestFSVITable1Quick runs bench/fsvi_table1.sh --quick (1 epoch on 300 images, 200 test images,
// ensembles of 2) and checks only the table's shape: a header, a separator and one row per
// method in order, each with 11 cells, our four metrics numbers in range (a mean, ± a standard
// error for the rows of several runs) and the paper's beside them. Needs bash, Fashion-MNIST and scikit-learn's digits.
func TestFSVITable1Quick(t *testing.T) {
	skipQuick(t, "trains 11 small models and fits 1 Laplace approximation (about a minute on a loaded machine)")
	skipNoTable1Data(t)
	out, rows := runQuickTable(t, "fsvi_table1.sh")
	methods := []string{"FSVI (", "MFVI", "MFVI (tempered", "MAP", "MC Dropout", "SWAG", "BNN-Laplace", "Deep Ensemble", "FSVI Ensemble", "FFG-U", "Ensemble-U"}
	if len(rows) != 2+len(methods) {
		t.Fatalf("%d table lines, want a header, a separator and %d rows:\n%s", len(rows), len(methods), out)
	}
	if rows[0][0] != "method" || !strings.HasPrefix(rows[1][0], "---") {
		t.Fatalf("header %q, separator %q", rows[0], rows[1])
	}
	for i, m := range methods {
		r := rows[2+i]
		if len(r) != 11 || !strings.HasPrefix(r[0], m) {
			t.Fatalf("row %d: %q, want %s with 11 cells", i, r, m)
		}
		for j, c := range r[1:5] {
			mean, _, _ := strings.Cut(strings.TrimSuffix(c, " %"), " ± ") // the rows of several runs have a standard error
			v, err := strconv.ParseFloat(mean, 64)
			if err != nil || !(v >= 0) || (j != 1 && !(v <= 100)) || (j == 1 && !(v <= 1)) {
				t.Fatalf("row %s: cell %d %q is not a metric in range", m, j+1, c)
			}
		}
		if n, err := strconv.Atoi(r[9]); err != nil || n < 1 {
			t.Fatalf("row %s: runs %q", m, r[9])
		}
	}
	if rows[2][5] != "92.52" || rows[10][5] != "94.44" || rows[4][5] != "91.38" || rows[7][5] != "92.56" || rows[8][5] != "92.25" {
		t.Fatalf("the paper's accuracies beside FSVI, MFVI (tempered), SWAG, BNN-Laplace and the FSVI Ensemble are %q, %q, %q, %q and %q",
			rows[2][5], rows[4][5], rows[7][5], rows[8][5], rows[10][5])
	}
}

// skipNoTable1Data skips a test of bench/fsvi_table1.sh unless Fashion-MNIST and scikit-learn's
// digits (its OOD set) are installed.
func skipNoTable1Data(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(data.DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")); err != nil {
		t.Skipf("Fashion-MNIST is not installed in %s: %v", data.DefaultFashionMNISTDir, err)
	}
	if _, err := os.Stat(data.DefaultDigitsPath); err != nil {
		t.Skipf("scikit-learn's digits are not installed (apt-get install python3-sklearn): %v", err)
	}
}

// TestFSVITable1QuickCNN runs bench/fsvi_table1.sh --quick --arch cnn with three rows: the trainer's
// small CNN (bench/configs/fmnist_smallcnn_arch.txt) for FSVI and MAP and its inducing config for
// FFG-U, each a row with our metrics in range.
func TestFSVITable1QuickCNN(t *testing.T) {
	skipQuick(t, "trains 4 small CNNs (seconds)")
	skipNoTable1Data(t)
	out, rows := runQuickTable(t, "fsvi_table1.sh", "--arch", "cnn", "--methods", "fsvi,map,ffgu")
	methods := []string{"FSVI (random-monochrome)", "MAP", "FFG-U (ours)"}
	if len(rows) != 2+len(methods) || !strings.Contains(out, "(bench/configs/fmnist_smallcnn_arch.txt, 1 epochs") {
		t.Fatalf("want 3 rows and the small CNN named in the footer:\n%s", out)
	}
	for i, m := range methods {
		r := rows[2+i]
		if len(r) != 11 || r[0] != m {
			t.Fatalf("row %d: %q, want %s with 11 cells", i, r, m)
		}
		acc, _, _ := strings.Cut(strings.TrimSuffix(r[1], " %"), " ± ")
		if v, err := strconv.ParseFloat(acc, 64); err != nil || !(v > 0) || !(v <= 100) {
			t.Fatalf("row %s: accuracy %q", m, r[1])
		}
	}
}

// TestFSVITable1QuickDigits runs bench/fsvi_table1.sh --quick --methods fsvidigits, the row that
// stands in for paper 004's KMNIST-context FSVI: one row, our metrics in range, the paper's
// KMNIST-context numbers beside them.
func TestFSVITable1QuickDigits(t *testing.T) {
	skipQuick(t, "trains one small FSVI model (seconds)")
	skipNoTable1Data(t)
	out, rows := runQuickTable(t, "fsvi_table1.sh", "--methods", "fsvidigits")
	if len(rows) != 3 {
		t.Fatalf("want a header, a separator and one row:\n%s", out)
	}
	r := rows[2]
	if len(r) != 11 || !strings.HasPrefix(r[0], "FSVI (digits context; paper: KMNIST context") {
		t.Fatalf("row %q, want the digits-context FSVI with 11 cells", r)
	}
	if acc, err := strconv.ParseFloat(strings.TrimSuffix(r[1], " %"), 64); err != nil || !(acc > 0) || !(acc <= 100) {
		t.Fatalf("accuracy %q", r[1])
	}
	if got := strings.Join(r[5:9], " / "); got != "92.67 / 0.012 / 99.81 / 97.44" {
		t.Fatalf("the paper's cells beside it are %q, want its KMNIST-context row", got)
	}
}
