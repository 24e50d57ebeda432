package tests

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/edgebnn/edgebnn/train/data"
)

// span is the range a table column's numbers must lie in (a mean and, where given, its standard
// error; the standard error must be non-negative and finite).
type span struct{ lo, hi float64 }

var (
	pct   = span{0, 100}     // accuracies and ECEs in per cent
	unit  = span{0, 1}       // AUROCs, ECEs as fractions
	nll   = span{0, 20}      // a negative log-likelihood of a 5- or 10-class softmax
	brier = span{0, 2}       // the multi-class Brier score
	count = span{1, 1 << 40} // parameters, bytes, seeds
)

// tableSpec is the shape of one Markdown table of a script's output: the first cell of its
// header, its number of rows (after the separator), of cells per row, the text each row starts
// with, and the range of every numeric column (by cell index; the label is cell 0).
type tableSpec struct {
	header string
	rows   int
	cells  int
	labels []string // prefixes of the rows' first cells, in order (nil: any)
	cols   map[int]span
	pairs  map[int]span // cells "a / b", both numbers in range
}

// TestBenchQuick runs the --quick mode of the experiment scripts under bench/ (issue 20) and
// checks only the shape of what they print: every table's header, row count, cells per row,
// and each number finite and in its metric's range (never its value: a quick run trains for one
// epoch on 300 images). Each script builds cmd/edgebnn itself (Go's build cache makes the later
// builds cheap) and writes into a temporary directory; the Go commands are built into it. Skipped
// with -short; a case whose data is not installed is skipped.
func TestBenchQuick(t *testing.T) {
	skipQuick(t, "trains small models: about 4 minutes of CPU, 4 minutes wall on a loaded 2-core machine (session 18)")
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skipf("bash not found: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skipf("python3 not found: %v", err)
	}
	fmnist := filepath.Join(data.DefaultFashionMNISTDir, "train-images-idx3-ubyte.gz")
	mix := []string{"one FFG-U posterior", "**mixture of 2 FFG-U", "one deterministic network", "deep ensemble of 2"}
	nonneg := span{0, 1e6}
	uvswMethods := []string{"deterministic", "Ensemble-W", "FFG-W", "FFG-U", "FCG-U", "Ensemble-U"}
	uvswFA := []string{"deterministic", "FA, online EM", "SWAG", "VIFA"}
	// bench/prunedc.sh's rows: FFG-U 100/75/50/25 % of Z, the two matched rows, FFG-W 100 … 0.1 %.
	prunedcRows := []string{"FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U@FFG-W", "FFG-U@FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W"}
	prunedcSev := map[int]span{3: count, 4: pct, 5: pct, 6: pct, 7: pct, 8: pct, 9: pct}
	// bench/prunetab.sh --model resnet's rows after the pruning phase, then with the fine-tuned
	// rows (every pruned one: FFG-U 75, 50 and 25 % of Z, the matched row, FFG-W 50, 10, 1 and 0.1 %)
	prunetabResnetRows := []string{"FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U@FFG-W0.1", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W",
		"FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U@FFG-W0.1", "FFG-U@FFG-W0.1", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W", "FFG-W"}
	sev := map[int]span{} // the nine corruptions' "accuracy % / ECE %" cells
	for i := 1; i <= 9; i++ {
		sev[i] = pct
	}
	// bench/uvsw.sh's tables (either --model): U versus W, OOD, accuracy and ECE against severity,
	// severity 5 per corruption
	uvswTables := []tableSpec{
		{header: "method", rows: 6, cells: 11, labels: uvswMethods,
			cols: map[int]span{1: count, 2: count, 4: count, 5: pct, 6: nll, 7: pct}},
		{header: "method", rows: 6, cells: 9, labels: uvswMethods,
			cols: map[int]span{1: unit, 2: unit, 3: unit, 4: unit, 5: unit, 6: unit}},
		{header: "method", rows: 6, cells: 12, labels: uvswMethods, cols: map[int]span{1: pct, 2: pct, 3: pct, 4: pct, 5: pct, 6: pct}},
		{header: "method", rows: 6, cells: 12, labels: uvswMethods, cols: map[int]span{1: pct, 2: pct, 3: pct, 4: pct, 5: pct, 6: pct}},
		{header: "method", rows: 6, cells: 10, labels: uvswMethods, pairs: sev},
	}
	for _, c := range []struct {
		name   string
		cmd    []string // a bash script and its arguments, or "go" and a package under bench/ and its flags
		needs  []string // files that must exist
		setup  func(t *testing.T, dir string) []string
		tables []tableSpec
		check  func(t *testing.T, out, dir string) // extra checks (nil: none)
	}{
		{name: "fa_linreg_cli", cmd: []string{"bench/fa_linreg_cli.sh", "--quick"}, check: checkFALinReg},
		{name: "run_toy", cmd: []string{"bench/run_toy.sh", "--quick"}, tables: []tableSpec{{
			header: "model", rows: 6, cells: 5, labels: []string{"deterministic", "FFG-W (J.1)", "FCG-W (J.1)", "FFG-U (J.1)", "FCG-U (J.1)", "Ensemble-U (8 members, J.1)"},
			cols: map[int]span{1: count, 2: nonneg, 3: nonneg, 4: nonneg},
		}}},
		{name: "run_toy_ours", cmd: []string{"bench/run_toy.sh", "--recipe", "ours", "--quick"}, tables: []tableSpec{{
			header: "model", rows: 5, cells: 5, labels: []string{"deterministic", "FFG-W", "FFG-U", "full-covariance", "Ensemble-U"},
			cols: map[int]span{1: count, 2: nonneg, 3: nonneg, 4: nonneg},
		}}},
		{name: "hmc_toy", cmd: []string{"bench/hmc_toy.sh", "--quick"}, check: checkHMCGrid},
		{name: "uci", cmd: []string{"go", "./bench/uci", "-quick"}, tables: []tableSpec{{
			header: "method", rows: 7, cells: 4, labels: []string{"vifa", "vifa-x4", "vifa-init", "ffg_w", "fa_em", "swag", "deterministic"},
			cols: map[int]span{1: {-1e4, 10}, 2: nonneg}, pairs: map[int]span{3: {-10, 1e4}},
		}}},
		{name: "fa_papers", cmd: []string{"bench/fa_papers.sh", "--quick"}, check: checkFAPapers, tables: []tableSpec{
			// thesis Table 6.1 and Fig. 6.2, then Table 6.1's four rows with the other pre-training
			{header: "setting", rows: 6, cells: 10, cols: map[int]span{1: count, 2: nonneg, 3: nonneg, 4: nonneg}},
			{header: "setting", rows: 4, cells: 10, cols: map[int]span{1: count, 2: nonneg, 3: nonneg, 4: nonneg}},
			{header: "T", rows: 3, cells: 9, labels: []string{"100", "200", "500"}, cols: map[int]span{1: nonneg, 2: nonneg, 3: nonneg, 4: nonneg, 5: nonneg}},
			{header: "T", rows: 3, cells: 6, labels: []string{"100", "200", "500"}, cols: map[int]span{1: nonneg, 2: nonneg, 3: nonneg, 4: nonneg, 5: nonneg}},
			{header: "T", rows: 3, cells: 9, labels: []string{"100", "200", "500"}, cols: map[int]span{1: nonneg, 2: nonneg, 3: nonneg, 4: nonneg, 5: nonneg}},
			{header: "T", rows: 3, cells: 6, labels: []string{"100", "200", "500"}, cols: map[int]span{1: nonneg, 2: nonneg, 3: nonneg, 4: nonneg, 5: nonneg}},
		}},
		{name: "j1settings", cmd: []string{"bench/j1settings.sh", "--quick"}, tables: []tableSpec{{
			header: "run", rows: 5, cells: 8, labels: []string{"J.1 (", "J.1, 1 sample", "J.1, U 7×1", "J.1, 40 000", "ours"},
			cols: map[int]span{1: count, 2: nonneg, 3: nonneg, 4: nonneg, 5: {-1e6, 1e6}, 6: nonneg, 7: nonneg},
		}}},
		{name: "medsel", cmd: []string{"go", "./bench/medsel", "-quick"}, needs: []string{fmnist}, tables: append([]tableSpec{{
			header: "metric", rows: 10, cells: 5,
			labels: []string{"accuracy", "precision", "recall", "F1", "AUROC", "training time", "NLL", "ECE", "chosen log₁₀ α", "chosen log₁₀ η"},
			cols:   map[int]span{1: {-10, 1e6}, 2: {-10, 1e6}},
		}}, slices.Repeat([]tableSpec{{header: "retained", rows: 5, cells: 6, labels: []string{"90 %", "80 %", "70 %", "60 %", "50 %"},
			cols: map[int]span{1: unit, 2: unit, 5: unit}}}, 3)...)},
		// paper 004's toys (toy1d and Two Moons: FSVI, MFVI, MAP), 3 seeds of a few hundred steps
		{name: "fsvi", cmd: []string{"go", "./bench/fsvi", "-quick"}, setup: func(t *testing.T, dir string) []string { return []string{"-out", dir} },
			tables: []tableSpec{
				{header: "method", rows: 3, cells: 6, labels: []string{"FSVI", "MFVI", "MAP"},
					cols: map[int]span{1: nonneg, 2: nonneg, 3: nonneg, 4: nonneg, 5: nonneg}},
				{header: "method", rows: 3, cells: 6, labels: []string{"FSVI", "MFVI", "MAP"},
					cols: map[int]span{1: pct, 2: nonneg, 3: {0, math.Ln2}, 4: {0, math.Ln2}, 5: nonneg}},
			}},
		// FSVI's σ learning-rate factor and its MFVI control: one table per objective
		{name: "fsvi_sd_lr", cmd: []string{"bench/fsvi_sd_lr.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath},
			tables: slices.Repeat([]tableSpec{{header: "sd_lr", rows: 2, cells: 7, labels: []string{"1", "10"},
				cols: map[int]span{1: pct, 2: pct, 3: nonneg, 4: nonneg, 5: unit, 6: unit}}}, 2)},
		// paper 004's FSVI row with the reference code's recipe (the preset), 2 seeds of 2 epochs
		{name: "fsvi_preset", cmd: []string{"bench/fsvi_preset.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath},
			tables: []tableSpec{
				{header: "method", rows: 1, cells: 11, labels: []string{"FSVI (paper004-fmnist-fsvi)"},
					cols: map[int]span{1: pct, 2: nll, 3: unit, 4: pct, 5: pct, 6: pct, 7: unit, 8: pct, 9: pct, 10: {2, 2}}},
				{header: "method", rows: 1, cells: 6, labels: []string{"FSVI (paper004-fmnist-fsvi)"},
					cols: map[int]span{1: pct, 2: pct, 3: nonneg, 4: nonneg, 5: nonneg}},
			}, check: checkFSVIPresetResume},
		{name: "mixture", cmd: []string{"bench/mixture.sh", "--quick"}, needs: []string{fmnist}, tables: []tableSpec{{
			header: "model (classes 0–4", rows: 4, cells: 8, labels: mix,
			cols: map[int]span{1: pct, 2: nll, 3: unit, 4: brier, 5: unit, 6: unit, 7: unit},
		}}},
		{name: "convert_eval", cmd: []string{"bench/convert_eval.sh", "--quick"}, needs: []string{fmnist}, check: checkConvertEval},
		// 54 evaluations (9 corruptions × 6 severities) of 200 test images: about 11 s of CPU
		{name: "fmnist_c", cmd: []string{"bench/fmnist_c.sh", "--quick"}, needs: []string{fmnist}, tables: []tableSpec{{
			header: "corruption", rows: 9, cells: 7,
			labels: []string{"gaussian_noise", "shot_noise", "impulse_noise", "gaussian_blur", "contrast", "brightness", "rotation", "translation", "elastic"},
			pairs:  map[int]span{1: pct, 2: pct, 3: pct, 4: pct, 5: pct, 6: pct},
		}}},
		{name: "adaptive", cmd: []string{"go", "./bench/adaptive", "-quick"}, needs: []string{fmnist}, setup: tinyModel, tables: []tableSpec{{
			header: "model", rows: 1, cells: 6,
			cols: map[int]span{3: pct, 4: {0, 1e3}}, pairs: map[int]span{5: pct},
		}}},
		{name: "globalu", cmd: []string{"bench/globalu.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{{
			header: "model (784-256-256-10", rows: 2, cells: 8, labels: []string{"per-layer U", "**global U**"},
			cols: map[int]span{1: count, 2: count, 3: pct, 4: nll, 5: unit, 6: unit, 7: unit},
		}}},
		// the MLP without the corruptions (the first two tables), then bench/uvsw again with them:
		// it must reuse the cached clean and OOD numbers and evaluate only the corruptions
		{name: "uvsw", cmd: []string{"bench/uvsw.sh", "--quick", "--corrupt", "no"}, needs: []string{fmnist, data.DefaultDigitsPath},
			tables: uvswTables[:2], check: uvswRerun(uvswTables, "(MLP 784-256-256-5, classes 0–4")},
		// the factor-analysis rows (--methods): their own recipes, the same evaluation
		{name: "uvsw_fa", cmd: []string{"bench/uvsw.sh", "--quick", "--corrupt", "no", "--methods", "det,faem,swag,vifa"},
			needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
				{header: "method", rows: 4, cells: 11, labels: uvswFA, cols: map[int]span{1: count, 2: count, 4: count, 5: pct, 6: nll, 7: pct}},
				{header: "method", rows: 4, cells: 9, labels: uvswFA, cols: map[int]span{1: unit, 2: unit, 3: unit, 4: unit, 5: unit, 6: unit}},
			}},
		// the two convolutional tables of the trainer section over seeds: about 12 s of CPU
		{name: "cnntabs", cmd: []string{"bench/cnntabs.sh", "--quick"}, needs: []string{fmnist}, tables: []tableSpec{{
			header: "model (Fashion-MNIST", rows: 4, cells: 7,
			labels: []string{"small CNN FFG-U (fixture recipe), trained", "small CNN FFG-U, converted", "residual CNN FFG-U, trained", "residual CNN FFG-U, converted"},
			cols:   map[int]span{1: count, 2: pct, 3: nll, 4: unit, 5: brier, 6: pct},
		}}},
		// paper 003 J.2's settings against ours, both ways: five arms × 2 seeds, K = 20 and 8
		{name: "j2settings", cmd: []string{"bench/j2settings.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			{header: "arm (2 seeds)", rows: 5, cells: 6, labels: []string{"ours (", "ours + J.2's q(U)", "ours + J.2's prior", "J.2 (", "J.2 ÷ 50 + our prior"},
				cols: map[int]span{1: pct, 2: nll, 3: pct, 4: unit, 5: pct}},
			{header: "difference, paired by seed", rows: 7, cells: 5,
				cols: map[int]span{1: {-100, 100}, 2: {-20, 20}, 3: {-100, 100}, 4: {-1, 1}}},
		}},
		// VIFA from scratch and from the deterministic network: three rows × 2 seeds, 2 epochs
		{name: "vifainit", cmd: []string{"bench/vifainit.sh", "--quick"}, needs: []string{fmnist}, tables: []tableSpec{
			{header: "row (2 seeds", rows: 3, cells: 6, labels: []string{"deterministic", "VIFA (K = 3) from scratch", "VIFA (K = 3) from the deterministic"},
				cols: map[int]span{1: pct, 2: nll, 3: pct, 4: unit, 5: unit}},
			{header: "difference, paired by seed", rows: 2, cells: 6,
				cols: map[int]span{1: {-100, 100}, 2: {-20, 20}, 3: {-100, 100}, 4: {-1, 1}, 5: {-1, 1}}},
		}},
		// the same for Ensemble-U: four arms (no q(U) variance for an ensemble)
		{name: "j2settings_ensembleu", cmd: []string{"bench/j2settings.sh", "--method", "ensembleu", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			{header: "arm (2 seeds)", rows: 4, cells: 6, labels: []string{"ours (`edgebnn-fmnist-ensembleu`", "ours + J.2's prior", "J.2 (`paper003-fmnist-ensembleu`", "J.2 ÷ 50 + our prior"},
				cols: map[int]span{1: pct, 2: nll, 3: pct, 4: unit, 5: pct}},
			{header: "difference, paired by seed", rows: 6, cells: 5,
				cols: map[int]span{1: {-100, 100}, 2: {-20, 20}, 3: {-100, 100}, 4: {-1, 1}}},
		}},
		// the residual CNN: about 20 s of CPU more
		{name: "uvsw_resnet", cmd: []string{"bench/uvsw.sh", "--model", "resnet", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath},
			tables: uvswTables, check: captionNames("(residual CNN of bench/configs/fmnist_resnet5_arch.json")},
		{name: "fig4", cmd: []string{"bench/fig4.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			// FFG-U λ_max × σ_max, Ensemble-U λ_max (M = 32), both methods over M = 16…128 (after
			// 3 steps the M = 128 models are still near the prior's scale, 8/√d_in: NLL ≈ 20), and
			// both over the small λ_max; FFG-U over M also at σ_max = 0 (λ_max 0.03 and 0)
			{header: "FFG-U λ_max", rows: 12, cells: 8, labels: fig4Lamdas(3),
				cols: map[int]span{1: unit, 2: count, 3: pct, 4: nll, 5: pct, 6: unit, 7: unit}},
			{header: "Ensemble-U λ_max", rows: 4, cells: 7, labels: fig4Lamdas(1),
				cols: map[int]span{1: count, 2: pct, 3: nll, 4: pct, 5: unit, 6: unit}},
			{header: "method", rows: 16, cells: 10, labels: []string{"FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "FFG-U", "Ensemble-U", "Ensemble-U", "Ensemble-U", "Ensemble-U"},
				cols: map[int]span{1: count, 2: unit, 4: count, 5: pct, 6: {0, 100}, 7: pct, 8: unit, 9: unit}},
			{header: "method (small λ_max)", rows: 8, cells: 9, labels: []string{"FFG-U", "FFG-U", "FFG-U", "FFG-U", "Ensemble-U", "Ensemble-U", "Ensemble-U", "Ensemble-U"},
				cols: map[int]span{1: unit, 3: count, 4: pct, 5: nll, 6: pct, 7: unit, 8: unit}},
			// FFG-U without noise over M, the KL term weighted 1 and 0
			{header: "FFG-U M (no noise)", rows: 8, cells: 8, labels: []string{"16", "32", "64", "128", "16", "32", "64", "128"},
				cols: map[int]span{1: unit, 2: count, 3: pct, 4: {0, 100}, 5: pct, 6: unit, 7: unit}},
			// FFG-U over M with the last layer's U M × M and 10 × M (the paper's shape)
			{header: "FFG-U M (shape)", rows: 8, cells: 8, labels: []string{"16", "16", "32", "32", "64", "64", "128", "128"},
				cols: map[int]span{2: count, 3: pct, 4: {0, 100}, 5: pct, 6: unit, 7: unit}},
		}, check: checkFig4},
		{name: "prunetab", cmd: []string{"bench/prunetab.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			// printed after the pruning phase (the 11 pruned rows), then with the 9 fine-tuned rows
			{header: "method", rows: 11, cells: 13,
				cols: map[int]span{3: count, 4: count, 5: count, 6: pct, 7: nll, 8: pct, 9: brier, 10: unit, 11: unit}},
			{header: "method", rows: 20, cells: 13,
				cols: map[int]span{3: count, 4: count, 5: count, 6: pct, 7: nll, 8: pct, 9: brier, 10: unit, 11: unit}},
		}},
		// paper 003 App. K's fine-tuning length: the trajectory (2 epochs), the four final models
		// and the paired differences
		{name: "appk", cmd: []string{"bench/appk.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			{header: "fine-tuning epoch", rows: 2, cells: 5, labels: []string{"1", "2"}, cols: map[int]span{1: pct, 2: pct, 3: pct, 4: pct}},
			{header: "model", rows: 4, cells: 7, labels: []string{"FFG-U, 100 % of Z, not", "FFG-U, 100 % of Z, fine-tuned 2 epochs (control)", "FFG-U, 50 % of Z, not", "FFG-U, 50 % of Z, fine-tuned 2"},
				cols: map[int]span{1: pct, 2: nll, 3: pct, 4: brier, 5: unit}},
			{header: "difference, paired by seed", rows: 4, cells: 3, cols: map[int]span{1: {-100, 100}, 2: {-100, 100}}},
		}, check: checkAppKContinue},
		// the same on the residual CNN (bench/uvsw.sh --model resnet's recipe, classes 0–4): about 12 s of CPU
		{name: "appk_resnet", cmd: []string{"bench/appk.sh", "--model", "resnet", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			{header: "fine-tuning epoch", rows: 2, cells: 5, labels: []string{"1", "2"}, cols: map[int]span{1: pct, 2: pct, 3: pct, 4: pct}},
			{header: "model", rows: 4, cells: 7, labels: []string{"FFG-U, 100 % of Z, not", "FFG-U, 100 % of Z, fine-tuned 2 epochs (control)", "FFG-U, 50 % of Z, not", "FFG-U, 50 % of Z, fine-tuned 2"},
				cols: map[int]span{1: pct, 2: nll, 3: pct, 4: brier, 5: unit}},
			{header: "difference, paired by seed", rows: 4, cells: 3, cols: map[int]span{1: {-100, 100}, 2: {-100, 100}}},
		}, check: captionNames("residual CNN of bench/configs/fmnist_resnet5_arch.json (bench/uvsw.sh --model resnet), classes 0–4")},
		// the residual CNN (bench/uvsw.sh --model resnet's recipe): its FFG-U range reaches only the
		// 10 % FFG-W budget, so one matched row; about 40 s of CPU
		{name: "prunetab_resnet", cmd: []string{"bench/prunetab.sh", "--model", "resnet", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath},
			tables: []tableSpec{
				// the 10 pruned rows, then with the 8 fine-tuned rows
				{header: "method", rows: 10, cells: 13, labels: prunetabResnetRows[:10],
					cols: map[int]span{3: count, 4: count, 5: count, 6: pct, 7: nll, 8: pct, 9: brier, 10: unit, 11: unit}},
				{header: "method", rows: 18, cells: 13, labels: prunetabResnetRows[10:],
					cols: map[int]span{3: count, 4: count, 5: count, 6: pct, 7: nll, 8: pct, 9: brier, 10: unit, 11: unit}},
			}, check: captionNames("Fashion-MNIST residual CNN of bench/configs/fmnist_resnet5_arch.json (bench/uvsw.sh --model resnet), classes 0–4")},
		{name: "prunedc", cmd: []string{"bench/prunedc.sh", "--quick"}, needs: []string{fmnist, data.DefaultDigitsPath}, tables: []tableSpec{
			// accuracy and ECE against severity 0–5 (one row per pruning level), then pruned − unpruned
			{header: "method", rows: 11, cells: 15, labels: prunedcRows, cols: prunedcSev},
			{header: "method", rows: 11, cells: 15, labels: prunedcRows, cols: prunedcSev},
			{header: "method", rows: 9, cells: 8, labels: append(prunedcRows[1:6:6], prunedcRows[7:]...),
				cols: map[int]span{2: {-100, 100}, 3: {-100, 100}, 4: {-100, 100}, 5: {-100, 100}, 6: {-100, 100}, 7: {-100, 100}}},
		}, check: checkPrunedcSettings},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // as skipQuick's tests: mostly one process on one core at a time
			for _, f := range c.needs {
				if _, err := os.Stat(f); err != nil {
					t.Skipf("optional data not installed: %v", err)
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			dir := t.TempDir()
			args := append([]string{}, c.cmd[1:]...)
			if c.setup != nil {
				args = append(args, c.setup(t, dir)...)
			}
			var cmd *exec.Cmd
			if c.cmd[0] == "go" { // a Go command under bench/: built into dir, run from the repository root
				bin := filepath.Join(dir, filepath.Base(args[0]))
				build := exec.Command("go", "build", "-o", bin, args[0])
				build.Dir = ".."
				if b, err := build.CombinedOutput(); err != nil {
					t.Fatalf("go build %s: %v\n%s", args[0], err, b)
				}
				cmd = exec.CommandContext(ctx, bin, args[1:]...)
			} else {
				cmd = exec.CommandContext(ctx, bash, append(append([]string{c.cmd[0]}, args...), "--out", dir)...)
			}
			cmd.Dir = ".."
			var stderr strings.Builder
			cmd.Stderr = &stderr
			start := time.Now()
			raw, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s: %v\n%s", strings.Join(c.cmd, " "), err, stderr.String())
			}
			logCost(t, strings.Join(c.cmd, " "), start, cmd.ProcessState)
			out := string(raw)
			tables := markdownTables(out)
			if len(tables) != len(c.tables) {
				t.Fatalf("%d tables, want %d:\n%s", len(tables), len(c.tables), out)
			}
			for i, spec := range c.tables {
				checkTable(t, i, tables[i], spec)
			}
			if c.check != nil {
				c.check(t, out, dir)
			}
		})
	}
}

// captionNames returns a check that the output names the network: want is in it.
func captionNames(want string) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		if !strings.Contains(out, want) {
			t.Errorf("the output does not name the network (%q)", want)
		}
	}
}

// uvswRerun returns the check of the uvsw case run with --corrupt no: the output names the network
// (caption), and bench/uvsw (built by the script into dir) run again on dir with the corruptions
// evaluates no model's clean and OOD sets again (its cache has them), evaluates the corruptions of
// every model and prints the tables (all of them: uvswTables).
func uvswRerun(uvswTables []tableSpec, caption string) func(t *testing.T, out, dir string) {
	return func(t *testing.T, out, dir string) {
		t.Helper()
		if !strings.Contains(out, caption) || !strings.Contains(out, "(corruptions not evaluated: -no-corrupt)") {
			t.Errorf("the --corrupt no output does not name the network (%q) or the skipped corruptions:\n%s", caption, out)
		}
		cmd := exec.Command(filepath.Join(dir, "uvsw"), "-dir", dir, "-seeds", "1", "-members", "2", "-samples", "2", "-epochs", "1",
			"-test-limit", "200", "-png", filepath.Join(dir, "rerun.png"))
		cmd.Dir = ".."
		var stderr strings.Builder
		cmd.Stderr = &stderr
		raw, err := cmd.Output()
		if err != nil {
			t.Fatalf("bench/uvsw with the corruptions: %v\n%s", err, stderr.String())
		}
		log := stderr.String()
		if strings.Contains(log, "clean and OOD") || !strings.Contains(log, "evaluating 6 models on the corrupted sets they lack") {
			t.Errorf("the rerun re-evaluated clean sets, or not the corruptions of the 6 models:\n%s", log)
		}
		tables := markdownTables(string(raw))
		if len(tables) != len(uvswTables) {
			t.Fatalf("rerun: %d tables, want %d:\n%s", len(tables), len(uvswTables), raw)
		}
		for i, spec := range uvswTables {
			checkTable(t, i, tables[i], spec)
		}
		if _, err := os.Stat(filepath.Join(dir, "rerun.png")); err != nil {
			t.Errorf("rerun: no plot: %v", err)
		}
	}
}

// quickRerun returns a function that runs `bash SCRIPT --quick ARGS… --out dir` from the
// repository root (at most 5 minutes in all) and returns its standard output and error, and the
// cancel of its context.
func quickRerun(script, dir string) (func(args ...string) (stdout, stderr string, err error), context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	return func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, "bash", append(append([]string{script, "--quick"}, args...), "--out", dir)...)
		cmd.Dir = ".."
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return string(out), stderr.String(), err
	}, cancel
}

// fig4Lamdas is the first cells of bench/fig4.sh's λ_max rows: each of 0, 0.03, 0.1, 0.3 repeated
// n times (once per σ_max).
func fig4Lamdas(n int) []string {
	var out []string
	for _, l := range []string{"0", "0.03", "0.1", "0.3"} {
		for i := 0; i < n; i++ {
			out = append(out, l)
		}
	}
	return out
}

// markdownTables splits the lines of out that start with "|" into tables (runs of such lines),
// each line into its trimmed cells.
func markdownTables(out string) [][][]string {
	var tables [][][]string
	var cur [][]string
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "|") {
			if cur != nil {
				tables = append(tables, cur)
				cur = nil
			}
			continue
		}
		cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		cur = append(cur, cells)
	}
	if cur != nil {
		tables = append(tables, cur)
	}
	return tables
}

func checkTable(t *testing.T, i int, tab [][]string, spec tableSpec) {
	t.Helper()
	if len(tab) != 2+spec.rows {
		t.Fatalf("table %d: %d lines, want a header, a separator and %d rows: %q", i, len(tab), spec.rows, tab)
	}
	if !strings.HasPrefix(tab[0][0], spec.header) || len(tab[0]) != spec.cells || !strings.HasPrefix(tab[1][0], "---") {
		t.Fatalf("table %d: header %q, separator %q; want %d cells starting with %q", i, tab[0], tab[1], spec.cells, spec.header)
	}
	for r, row := range tab[2:] {
		if len(row) != spec.cells {
			t.Fatalf("table %d row %d: %d cells %q, want %d", i, r, len(row), row, spec.cells)
		}
		if spec.labels != nil && !strings.HasPrefix(row[0], spec.labels[r]) {
			t.Errorf("table %d row %d: label %q, want %q…", i, r, row[0], spec.labels[r])
		}
		for col, s := range spec.cols {
			if err := inSpan(row[col], s); err != "" {
				t.Errorf("table %d row %q: cell %d %q: %s", i, row[0], col, row[col], err)
			}
		}
		for col, s := range spec.pairs {
			a, b, ok := strings.Cut(row[col], " / ")
			if !ok {
				t.Errorf("table %d row %q: cell %d %q is not a / b", i, row[0], col, row[col])
				continue
			}
			for _, x := range []string{a, b} {
				if err := inSpan(x, s); err != "" {
					t.Errorf("table %d row %q: cell %d %q: %s", i, row[0], col, row[col], err)
				}
			}
		}
	}
}

// inSpan checks a cell "MEAN[ %][ ± SE[ %]][×]": both finite, the mean within s, the standard error
// non-negative. It returns what is wrong ("" when nothing is).
func inSpan(cell string, s span) string {
	cell = strings.TrimSuffix(strings.ReplaceAll(cell, " %", ""), "×")
	mean, se, hasSE := strings.Cut(cell, " ± ")
	m, err := strconv.ParseFloat(mean, 64)
	if err != nil || math.IsNaN(m) || math.IsInf(m, 0) {
		return "not a finite number"
	}
	if m < s.lo || m > s.hi {
		return "out of range"
	}
	if hasSE {
		e, err := strconv.ParseFloat(se, 64)
		if err != nil || math.IsNaN(e) || math.IsInf(e, 0) || e < 0 {
			return "standard error not a finite non-negative number"
		}
	}
	return ""
}

// checkFALinReg checks bench/fa_linreg_cli.sh's summary: a line per seed with three distances,
// then the three means ± standard errors over the two quick seeds with the paper's beside them.
func checkFALinReg(t *testing.T, out, _ string) {
	t.Helper()
	seed := regexp.MustCompile(`(?m)^seed (\d+): (\S+) (\S+) (\S+)$`)
	seeds := seed.FindAllStringSubmatch(out, -1)
	if len(seeds) != 2 {
		t.Fatalf("%d per-seed lines, want 2:\n%s", len(seeds), out)
	}
	for _, m := range seeds {
		for _, c := range m[2:] {
			if err := inSpan(c, span{0, math.MaxFloat64}); err != "" {
				t.Errorf("seed %s: distance %q: %s", m[1], c, err)
			}
		}
	}
	summary := regexp.MustCompile(`(?m)^(relative mean distance|relative covariance distance|2-Wasserstein / dim): (\S+ ± \S+) over 2 seeds \(paper 000: [0-9.]+ ± [0-9.]+\)$`)
	lines := summary.FindAllStringSubmatch(out, -1)
	if len(lines) != 3 {
		t.Fatalf("%d summary lines, want 3:\n%s", len(lines), out)
	}
	for _, m := range lines {
		if err := inSpan(m[2], span{0, math.MaxFloat64}); err != "" {
			t.Errorf("%s %q: %s", m[1], m[2], err)
		}
	}
}

// checkFAPapers checks bench/fa_papers.sh --quick's summary lines: per experiment the number of
// variants it runs, each with three distances as mean ± standard error over the 2 quick seeds,
// and the paper's Table 7 and Table 10 lines beside the UCI runs.
func checkFAPapers(t *testing.T, out, _ string) {
	t.Helper()
	for _, c := range []struct {
		prefix string
		n      int
	}{{"linear regression, ", 4}, {"logistic regression, ", 3}, {"uci-linear, ", 3}, {"uci-logistic, ", 3}} {
		re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(c.prefix) + `.*(?:seeds|splits) 0\.\.1: rel\. mean (\S+ ± \S+) \| rel\. cov (\S+ ± \S+) \| W2/dim (\S+ ± \S+)$`)
		ms := re.FindAllStringSubmatch(out, -1)
		if len(ms) != c.n {
			t.Errorf("%d lines %q…, want %d:\n%s", len(ms), c.prefix, c.n, out)
		}
		for _, m := range ms {
			for _, cell := range m[1:] {
				if err := inSpan(cell, span{0, math.MaxFloat64}); err != "" {
					t.Errorf("%q: %q: %s", m[0], cell, err)
				}
			}
		}
	}
	for _, want := range []string{"paper 000 Table 7, Boston: rel. mean 0.0262", "paper 000 Table 10, Breast-cancer-scale", "## online"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// tinyModel trains an FFG-U MLP for one epoch on 300 Fashion-MNIST images into dir (with a
// freshly built cmd/edgebnn) and returns the -model flag of bench/adaptive.
func tinyModel(t *testing.T, dir string) []string {
	t.Helper()
	bin := filepath.Join(dir, "edgebnn")
	if b, err := exec.Command("go", "build", "-o", bin, "../cmd/edgebnn").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	model := filepath.Join(dir, "ffgu.ebnn")
	cmd := exec.Command(bin, "train", "--config", "bench/configs/fmnist_ffgu.json", "--epochs", "1",
		"--train-limit", "300", "--test-limit", "200", "--no-plots", "--quiet", "--out", model)
	cmd.Dir = ".."
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("train: %v\n%s", err, b)
	}
	return []string{"-model", model}
}

// checkHMCGrid checks bench/hmc_toy.sh's predictive grid: the header, 401 rows x = −2, −1.99, …, 2,
// every number finite and the total sd at least the epistemic one (the noise adds to it).
func checkHMCGrid(t *testing.T, _, dir string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "toy_hmc_grid.csv"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) != 402 || lines[0] != "x,mean,sd,epistemic_sd" {
		t.Fatalf("%d lines, header %q; want x,mean,sd,epistemic_sd and 401 rows", len(lines), lines[0])
	}
	for i, line := range lines[1:] {
		f := strings.Split(line, ",")
		if len(f) != 4 {
			t.Fatalf("row %d: %q", i, line)
		}
		var v [4]float64
		for j := range f {
			if v[j], err = strconv.ParseFloat(f[j], 64); err != nil || math.IsNaN(v[j]) || math.IsInf(v[j], 0) {
				t.Fatalf("row %d: %q: cell %d not a finite number", i, line, j)
			}
		}
		if want := -2 + 0.01*float64(i); !(math.Abs(v[0]-want) <= 1e-9) {
			t.Fatalf("row %d: x = %g, want %g", i, v[0], want)
		}
		if !(v[3] >= 0) || !(v[2] >= v[3]*(1-1e-4)) {
			t.Fatalf("row %d: %q: want sd ≥ epistemic sd ≥ 0", i, line)
		}
	}
}

// checkFig4 checks the shape cells (checkFig4Shape) and a rerun with the grid at another M and
// another step size (checkFig4GridLR).
func checkFig4(t *testing.T, out, dir string) {
	t.Helper()
	checkFig4Shape(t, out, dir)
	checkFig4GridLR(t, dir)
}

// checkFig4GridLR runs bench/fig4.sh --quick again on its output for Ensemble-U's grid and M sweep
// with --grid-m 16 --lr 1e-3: every cell is trained anew under a name with the step size (the
// first run's cells were Adam 3e-3), with that step size, the grid at M = 16 and the M sweep's M =
// 32, 64 and 128 once each (M = 16 is the grid's cell: one seed per M, no cell counted twice),
// into their own summary files. Then --lr 0.001 reuses them all, --lr 3e-3 reuses the recipe's
// cells, and another --epochs is refused.
func checkFig4GridLR(t *testing.T, dir string) {
	t.Helper()
	run, cancel := quickRerun("bench/fig4.sh", dir)
	defer cancel()
	recipe, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	out, log, err := run("--grid-m", "16", "--lr", "1e-3", "--sweeps", "grid,M", "--methods", "ensu")
	if err != nil {
		t.Fatalf("bench/fig4.sh --grid-m 16 --lr 1e-3: %v\n%s", err, log)
	}
	if n := strings.Count(log, "training ensu"); n != 7 || strings.Count(log, "Adam 0.001 seed 1") != 7 {
		t.Errorf("trained %d cells, want 7 (4 at M = 16, 3 more M), all with Adam 0.001:\n%s", n, log)
	}
	for _, name := range []string{"ensu_M16_l0_s-_lr0.001_seed1", "ensu_M16_l0.3_s-_lr0.001_seed1", "ensu_M128_l0.1_s-_lr0.001_seed1"} {
		b, err := os.ReadFile(filepath.Join(dir, name+".metrics.jsonl"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
		} else if !strings.HasPrefix(string(b), `{"epoch":1,`) || !strings.Contains(strings.SplitN(string(b), "\n", 2)[0], `"lr":0.001,`) {
			t.Errorf("%s: the first epoch did not train at 0.001:\n%s", name, b)
		}
	}
	if !strings.Contains(out, "epoch(s) of Adam 0.001 on 300 training images") || !strings.Contains(out, "Ensemble-U (5 members), M = 16 ") {
		t.Errorf("the caption or the grid's heading does not say Adam 0.001 and M = 16:\n%s", out)
	}
	for _, f := range []string{"results_m16_lr0.001.jsonl", "table_m16_lr0.001.md", "fig4_m16_lr0.001.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("no %s: %v", f, err)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(dir, "results.jsonl")); string(now) != string(recipe) {
		t.Error("the --grid-m 16 --lr 1e-3 run changed the recipe's results.jsonl")
	}
	tables := markdownTables(out)
	if len(tables) != 6 {
		t.Fatalf("%d tables, want 6:\n%s", len(tables), out)
	}
	checkTable(t, 1, tables[1], tableSpec{header: "Ensemble-U λ_max", rows: 4, cells: 7, labels: fig4Lamdas(1),
		cols: map[int]span{1: {1, 1}, 2: pct, 3: nll, 4: pct, 5: unit, 6: unit}})
	// The M table: the FFG-U rows are empty; Ensemble-U has one seed at each M.
	for _, row := range tables[2][2:] {
		want := "0"
		if row[0] == "Ensemble-U" {
			want = "1"
		}
		if len(row) < 5 || row[4] != want {
			t.Errorf("M table row %q: want %s seeds in cell 4", row, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--grid-m", "16", "--lr", "0.001", "--sweeps", "grid,M", "--methods", "ensu"}, "epoch(s) of Adam 0.001 on"},
		{[]string{"--lr", "3e-3", "--sweeps", "grid", "--methods", "ensu"}, "epoch(s) of Adam 3e-3 (the configs') on"},
	} {
		out, log, err := run(c.args...)
		if err != nil || strings.Contains(log, "training") || !strings.Contains(out, c.want) {
			t.Errorf("%q: %v; want no training and %q:\n%s\n%s", c.args, err, c.want, log, out)
		}
	}
	if _, log, err := run("--epochs", "2", "--sweeps", "grid", "--methods", "ensu"); err == nil ||
		!strings.Contains(log, "holds runs made with\n  epochs=1 samples=2 train_limit=300 test_limit=200\nthis run asks\n  epochs=2") {
		t.Errorf("--epochs 2 on 1-epoch runs: %v, want a refusal naming both settings:\n%s", err, log)
	}
}

// checkFig4Shape checks that bench/fig4.sh's shape cells give the last layer (module "5") a U of
// 10 × M and leave the others M × M: z_row is M_out × d_out.
func checkFig4Shape(t *testing.T, _, dir string) {
	t.Helper()
	for _, c := range []struct{ file, layer, shape string }{
		{"ffgu_M64_l0.03_s0.1_r10_seed1.ebnn", "5.z_row", "[10 10]"},
		{"ffgu_M64_l0.03_s0.1_r10_seed1.ebnn", "3.z_row", "[64 256]"},
		{"ffgu_M64_l0.03_s0.1_seed1.ebnn", "5.z_row", "[64 10]"},
	} {
		out, err := exec.Command(filepath.Join(dir, "edgebnn"), "inspect", filepath.Join(dir, c.file)).CombinedOutput()
		if err != nil {
			t.Fatalf("inspect %s: %v\n%s", c.file, err, out)
		}
		found := false
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == c.layer {
				found = strings.Contains(line, c.shape)
				if !found {
					t.Errorf("%s: %s is not %s:\n%s", c.file, c.layer, c.shape, line)
				}
			}
		}
		if !found && !t.Failed() {
			t.Errorf("%s: no tensor %s:\n%s", c.file, c.layer, out)
		}
	}
}

// checkAppKContinue runs bench/appk.sh --quick again on its output with --finetune 3: it must
// continue each 2-epoch fine-tuning to 3 (not train or fine-tune anew: the old history is the new
// one's prefix), evaluate the longer runs again and print the 3-epoch tables; then it must refuse
// --finetune 2 (shorter than the runs it finds) and another fine-tuning learning rate.
func checkAppKContinue(t *testing.T, _, dir string) {
	t.Helper()
	run, cancel := quickRerun("bench/appk.sh", dir)
	defer cancel()
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	oldHistory, oldEval := read("appk_pruned_1.train.metrics.jsonl"), read("appk_pruned_1.eval.json")
	out, log, err := run("--finetune", "3")
	if err != nil {
		t.Fatalf("bench/appk.sh --quick --finetune 3 on the 2-epoch runs: %v\n%s", err, log)
	}
	for _, want := range []string{"continuing the fine-tuning (pruned) seed 1 from 2 to 3 epochs", "continuing the fine-tuning (control) seed 2 from 2 to 3 epochs"} {
		if !strings.Contains(log, want) {
			t.Errorf("the rerun does not say %q:\n%s", want, log)
		}
	}
	if strings.Contains(log, "training ffgu") || strings.Contains("\n"+log, "\nfine-tuning (") {
		t.Errorf("the rerun trained or fine-tuned from the start:\n%s", log)
	}
	newHistory := read("appk_pruned_1.train.metrics.jsonl")
	if !strings.HasPrefix(newHistory, oldHistory) || strings.Count(newHistory, "\n") != strings.Count(oldHistory, "\n")+1 {
		t.Errorf("the continued history is not the 2-epoch one and one epoch more:\n%s\n---\n%s", oldHistory, newHistory)
	}
	if read("appk_pruned_1.eval.json") == oldEval {
		t.Error("the continued model was not evaluated again")
	}
	if rec := strings.Fields(read("appk_control_2.epochs")); len(rec) < 2 || rec[0] != "3" || rec[1] != "1" {
		t.Errorf("appk_control_2.epochs: %q, want 3 fine-tuning epochs after 1", rec)
	}
	tables := markdownTables(out)
	if len(tables) != 3 {
		t.Fatalf("the rerun printed %d tables, want 3:\n%s", len(tables), out)
	}
	checkTable(t, 0, tables[0], tableSpec{header: "fine-tuning epoch", rows: 3, cells: 5, labels: []string{"1", "2", "3"},
		cols: map[int]span{1: pct, 2: pct, 3: pct, 4: pct}})
	checkTable(t, 1, tables[1], tableSpec{header: "model", rows: 4, cells: 7,
		labels: []string{"FFG-U, 100 % of Z, not", "FFG-U, 100 % of Z, fine-tuned 3 epochs (control)", "FFG-U, 50 % of Z, not", "FFG-U, 50 % of Z, fine-tuned 3"},
		cols:   map[int]span{1: pct, 2: nll, 3: pct, 4: brier, 5: unit}})
	for _, c := range []struct{ args, want []string }{
		{[]string{"--finetune", "2"}, []string{"holds 3 fine-tuning epochs, more than --finetune 2: use another --out"}},
		{[]string{"--finetune", "4", "--finetune-lr", "3e-4"}, []string{"was fine-tuned with lr=1e-4 prune=0.5", "this run asks lr=3e-4 prune=0.5"}},
	} {
		_, log, err := run(c.args...)
		for _, w := range c.want {
			if err == nil || !strings.Contains(log, w) {
				t.Errorf("%s on the 3-epoch runs: %v, want an error saying %q:\n%s", c.args, err, w, log)
			}
		}
	}
	// --corrupt yes on the finished runs: nothing trained again, the four models of each seed
	// evaluated on Fashion-MNIST-C (cached beside them), the three tables of bench/prunetab
	// -corrupt after appk's own.
	out, log, err = run("--finetune", "3", "--corrupt", "yes")
	if err != nil {
		t.Fatalf("--corrupt yes: %v\n%s", err, log)
	}
	if strings.Contains(log, "fine-tuning") || !strings.Contains(log, "evaluating 8 models on 200 images × (1 + 45 corrupted sets)") {
		t.Errorf("--corrupt yes trained again, or did not evaluate the 8 models:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(dir, "appk_pruned_2.corrupt.json")); err != nil {
		t.Errorf("no cached corruption evaluation: %v", err)
	}
	tables = markdownTables(out)
	if len(tables) != 6 {
		t.Fatalf("--corrupt yes printed %d tables, want 3 + 3:\n%s", len(tables), out)
	}
	rows := []string{"FFG-U", "FFG-U", "FFG-U control", "FFG-U, not fine-tuned"}
	sev := map[int]span{2: {2, 2}, 3: count, 4: pct, 5: pct, 6: pct, 7: pct, 8: pct, 9: pct}
	checkTable(t, 3, tables[3], tableSpec{header: "method", rows: 4, cells: 15, labels: rows, cols: sev})
	checkTable(t, 4, tables[4], tableSpec{header: "method", rows: 4, cells: 15, labels: rows, cols: sev})
	checkTable(t, 5, tables[5], tableSpec{header: "method", rows: 3, cells: 8, labels: rows[1:],
		cols: map[int]span{2: {-100, 100}, 3: {-100, 100}, 4: {-100, 100}, 5: {-100, 100}, 6: {-100, 100}, 7: {-100, 100}}})
	if tables[3][2][1] != "100 % of Z" || tables[3][3][1] != "50 % of Z, fine-tuned" {
		t.Errorf("kept column %q, %q: want the unpruned and the pruned fine-tuned rows first", tables[3][2][1], tables[3][3][1])
	}
	// Another K: the cached evaluations are made again (their K is not in their files), and the
	// record says so.
	evalK2 := read("appk_pruned_1.eval.json")
	if _, log, err := run("--finetune", "3", "--samples", "3"); err != nil {
		t.Fatalf("--samples 3: %v\n%s", err, log)
	}
	if read("appk_pruned_1.eval.json") == evalK2 || strings.TrimSpace(read("appk_eval.settings")) != "samples=3 test_limit=200" {
		t.Errorf("--samples 3 reused the K = 2 evaluations, or did not record K = 3: %q", read("appk_eval.settings"))
	}
}

// checkPrunedcSettings: bench/prunedc.sh --quick run again on its output with the same step size
// written another way (0.0003 for 3e-4) must reuse every model, and with another step size it
// must refuse, naming both settings, and leave the recorded settings as they were.
func checkPrunedcSettings(t *testing.T, _, dir string) {
	t.Helper()
	before, err := os.ReadFile(filepath.Join(dir, "settings"))
	if err != nil || !strings.Contains(string(before), "finetune_lr=0.0003 ") {
		t.Fatalf("%s/settings: %v, %q: want the recorded settings with finetune_lr=0.0003", dir, err, before)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	run := func(lr string) (string, error) {
		cmd := exec.CommandContext(ctx, "bash", "bench/prunedc.sh", "--quick", "--finetune-lr", lr, "--out", dir)
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := run("0.0003"); err != nil || strings.Contains(out, "training ff") || strings.Contains(out, "fine-tuning ff") {
		t.Errorf("--finetune-lr 0.0003 on the 3e-4 runs: %v; want them reused, nothing trained:\n%s", err, out)
	}
	out, err := run("1e-4")
	for _, want := range []string{"holds runs made with", "finetune_lr=0.0003", "this run asks", "finetune_lr=0.0001", "use another --out"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("--finetune-lr 1e-4 on the 3e-4 runs: %v, want an error saying %q:\n%s", err, want, out)
		}
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "settings")); string(after) != string(before) {
		t.Errorf("the refused run changed %s/settings: %q, was %q", dir, after, before)
	}
	checkPrunedcSplit(ctx, t, dir)
}

// checkPrunedcSplit: a run split by seed (--first-seed) and kept as archives (--archive, no
// models) prints, merged by bench/prunetab -results A -results B, the tables of both seeds; an archive
// alone prints what its run printed.
func checkPrunedcSplit(ctx context.Context, t *testing.T, dir string) {
	t.Helper()
	run := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, "bash", append([]string{"bench/prunedc.sh", "--quick", "--out", dir}, args...)...)
		cmd.Dir = ".."
		var out, log strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &log
		err := cmd.Run()
		return out.String(), log.String(), err
	}
	a1, a2 := filepath.Join(dir, "a1"), filepath.Join(dir, "a2")
	if _, log, err := run("--archive", a1); err != nil || strings.Contains(log, "training ff") {
		t.Fatalf("--archive on the finished seed-1 run: %v; want it reused, nothing trained:\n%s", err, log)
	}
	out2, log, err := run("--first-seed", "2", "--archive", a2)
	if err != nil || !strings.Contains(log, "training ffgw seed 2") || strings.Contains(log, "seed 1") {
		t.Fatalf("--first-seed 2: %v; want seed 2 trained and seed 1 left alone:\n%s", err, log)
	}
	tabs := markdownTables(out2)
	if len(tabs) != 3 || len(tabs[0]) < 3 || tabs[0][2][2] != "1" {
		t.Fatalf("--first-seed 2: want 3 tables of one seed each:\n%s", out2)
	}
	prunetab := func(results ...string) string {
		args := []string{"-corrupt", "-corrupt-samples", "2", "-corrupt-limit", "200", "-epochs", "1", "-finetune", "1",
			"-finetune-lr", "3e-4", "-finetune-limit", "300"}
		for _, r := range results {
			args = append(args, "-results", r)
		}
		cmd := exec.CommandContext(ctx, filepath.Join(dir, "prunetab"), args...)
		cmd.Dir = ".."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("prunetab -corrupt -results %s: %v", results, err)
		}
		return string(out)
	}
	if got := prunetab(filepath.Join(a2, "results.jsonl")); got != out2 {
		t.Errorf("the archive of --first-seed 2 printed\n%s\nits run printed\n%s", got, out2)
	}
	if _, err := os.Stat(filepath.Join(a2, "ffgw_2_k0.1_ft.corrupt.json")); err != nil {
		t.Errorf("the archive lacks a fine-tuned model's evaluation: %v", err)
	}
	merged := markdownTables(prunetab(filepath.Join(a1, "results.jsonl"), filepath.Join(a2, "results.jsonl")))
	if len(merged) != 3 {
		t.Fatalf("merged archives: %d tables, want 3", len(merged))
	}
	for i, tab := range merged[:2] {
		for _, row := range tab[2:] {
			if row[2] != "2" {
				t.Errorf("merged archives, table %d: row %q has %s seeds, want 2", i, row[:3], row[2])
			}
		}
	}
}

// checkConvertEval checks bench/convert_eval.sh's two evaluations (the trained checkpoint, then
// the converted f16 file with half of Z pruned): accuracy, NLL, ECE and Brier score in range.
func checkConvertEval(t *testing.T, out, _ string) {
	t.Helper()
	re := regexp.MustCompile(`(?m)^\S+\.ebnn \(2 samples\): acc (\S+)%  nll (\S+)  ece (\S+)  brier (\S+)`)
	ms := re.FindAllStringSubmatch(out, -1)
	if len(ms) != 2 || !strings.Contains(out, "(trained, f32)") || !strings.Contains(out, "(converted: f16, 50 % of Z pruned)") {
		t.Fatalf("want the trained and the converted evaluation:\n%s", out)
	}
	for _, m := range ms {
		for i, s := range []span{pct, nll, unit, brier} {
			if err := inSpan(m[i+1], s); err != "" {
				t.Errorf("%q: cell %d: %s", m[0], i+1, err)
			}
		}
	}
}

// checkFSVIPresetResume checks that bench/fsvi_preset.sh continues a seed from its per-epoch
// checkpoint: with seed 1's final checkpoint gone (as if the run had been killed in its last
// epoch) and its epoch-1 checkpoint left, a second run resumes it (train --resume) and prints the
// same tables; a third, with --context random-monochrome, trains its own seeds.
func checkFSVIPresetResume(t *testing.T, out, dir string) {
	t.Helper()
	model := filepath.Join(dir, "fsvi_s1.ebnn")
	if err := os.Remove(model); err != nil {
		t.Fatal(err)
	}
	run, cancel := quickRerun("bench/fsvi_preset.sh", dir)
	defer cancel()
	again, stderr, err := run()
	if err != nil {
		t.Fatalf("second run: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "seed 1 continues from") || strings.Contains(stderr, "training seed") {
		t.Errorf("second run did not resume seed 1 alone:\n%s", stderr)
	}
	if _, err := os.Stat(model); err != nil {
		t.Errorf("the resumed seed wrote no model: %v", err)
	}
	if len(markdownTables(again)) != 2 {
		t.Errorf("second run's tables:\n%s", again)
	}
	// --context: the paper's row label (random-monochrome), trained beside the preset's runs
	// under its own names and labelled in the tables; an unknown context is a usage error.
	mono, stderr, err := run("--context", "random-monochrome")
	if err != nil {
		t.Fatalf("--context random-monochrome: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "training seed 1") || strings.Contains(stderr, "continues") {
		t.Errorf("--context random-monochrome reused the preset's runs:\n%s", stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "fsvi_random-monochrome_s2.ebnn")); err != nil {
		t.Errorf("--context random-monochrome: %v", err)
	}
	if tables := markdownTables(mono); len(tables) != 2 || len(tables[0]) < 3 || tables[0][2][0] != "FSVI (paper004-fmnist-fsvi, context random-monochrome)" {
		t.Errorf("--context random-monochrome tables:\n%s", mono)
	}
	if _, stderr, err := run("--context", "kmnist"); err == nil || !strings.Contains(stderr, "--context must be") {
		t.Errorf("--context kmnist: %v\n%s", err, stderr)
	}
	// --config: a config over the preset (the output-σ experiment), its runs under the file's
	// name, which a different file of the same name may not reuse.
	cfg := "bench/configs/fsvi_output_sd_ref.json"
	variant, stderr, err := run("--config", cfg)
	if err != nil {
		t.Fatalf("--config %s: %v\n%s", cfg, err, stderr)
	}
	if !strings.Contains(stderr, "training seed 1") || strings.Contains(stderr, "continues") {
		t.Errorf("--config reused other runs:\n%s", stderr)
	}
	if tables := markdownTables(variant); len(tables) != 2 || len(tables[0]) < 3 || tables[0][2][0] != "FSVI (paper004-fmnist-fsvi, config output_sd_ref)" {
		t.Errorf("--config tables:\n%s", variant)
	}
	// the first seed's output layer starts at the config's σ, not the preset's
	// (softplus⁻¹(e⁻²⁵) = −25 in the raw _weight_sd)
	raw := readTensor(t, filepath.Join(dir, "fsvi_output_sd_ref_s1.last.ebnn"), "9._weight_sd")
	if raw[0] > -20 {
		t.Errorf("--config: layer 9's raw σ %g, want about −25 (the config's e⁻²⁵)", raw[0])
	}
	// An empty or invalid --config is refused before anything is recorded or trained (it was
	// found only in seed 1's training, after the script had copied it into DIR as the runs'
	// record: fixing the file then met "differs from").
	bad := t.TempDir()
	for _, b := range []struct{ name, text, want string }{
		{"fsvi_empty.json", "", "empty"},
		{"fsvi_notjson.json", `{"epochs": 2,`, "unexpected EOF"},
		{"fsvi_unknown.json", `{"epoch": 2}`, `unknown field "epoch"`},
		{"fsvi_list.json", `[1, 2]`, "fsvi_list.json"},
	} {
		path := filepath.Join(bad, b.name)
		if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, err := run("--config", path)
		if err == nil || !strings.Contains(stderr, b.want) || !strings.Contains(stderr, "--config "+path) ||
			!strings.Contains(stderr, "nothing was trained") || strings.Contains(stderr, "training seed") {
			t.Errorf("--config %s (%q): %v\n%s", b.name, b.text, err, stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, strings.TrimSuffix(b.name, ".json")+".json")); err == nil {
			t.Errorf("--config %s: recorded in %s", b.name, dir)
		}
	}
	other := filepath.Join(t.TempDir(), "fsvi_output_sd_ref.json")
	if err := os.WriteFile(other, []byte(`{"epochs": 1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run("--config", other); err == nil || !strings.Contains(stderr, "differs from") {
		t.Errorf("--config with a changed file of the same name: %v\n%s", err, stderr)
	}
}
