package convert

import (
	"fmt"
	"testing"

	"github.com/edgebnn/edgebnn/internal/schema"

	"github.com/edgebnn/edgebnn/convert/bnnconfig"
)

// Table 9 of paper 003 (Ritter et al., "Sparse uncertainty representation in deep learning with
// inducing weights", appendix K) lists the parameter counts of its CIFAR ResNet-50 inducing
// models for M = 16, 32, 64, 128, 256 (Ensemble-U with 5 members); its "Deterministic" column,
// 23,520,842, is torchvision's resnet50(num_classes=10) with the 3×3 stem
// (make_network("resnet50", kernel_size=3, remove_maxpool=True, out_features=10)), so the counts
// are CIFAR-10's (100 classes would give 23,705,252).
//
// Hand count from bayesianize (bnn/nn/mixins/variational/inducing.py, _InducingBase.__init__).
// An inducing layer with weight d_out × d_in (d_in = c_in·k·k, plus 1 with a bias) and r × c
// inducing weights registers the parameters
//
//	z_row r×d_out, z_col c×d_in, _lamda 1 (learn_lamda), _d_row r, _d_col c, and
//	q_inducing "diagonal": inducing_mean r×c + _inducing_sd r×c   (u = 2 copies of r×c)
//	q_inducing "ensemble": inducing_mean E×r×c                      (u = E copies)
//
// i.e. r·d_out + c·d_in + u·r·c + r + c + 1. Nothing clamps r to d_out or c to d_in: the
// config's inducing_rows/inducing_cols are used as given (only None means ⌊√d⌋).
//
// ResNet-50 (torchvision Bottleneck, no conv biases) has 53 convolutions: the stem (64 × 3·3·3)
// and, per stage (planes p, blocks n = 3, 4, 6, 3), conv1 p × c_in, conv2 p × 9p, conv3 4p × p,
// and in block 0 the downsample 4p × c_in. Summed over the 53 convolutions:
//
//	Σ d_out = 64 + (1,408 + 3,584 + 10,240 + 11,264)          = 26,560
//	Σ d_in  = 27 + (2,560 + 7,168 + 21,504 + 21,504)          = 52,763
//
// (stage 1: 3·(64+64+256) + 256 = 1,408 outputs; 64+576+64+64 + 2·(256+576+64) = 2,560 inputs;
// likewise for the others). Every convolution is followed by a BatchNorm with d_out channels
// whose weight and bias are parameters (running statistics are buffers): 2·26,560 = 53,120.
// The fc layer is 10 × (2,048 + 1 bias) with r_fc × M inducing weights. With r = c = M in every
// convolution:
//
//	N = 53,120 + M·26,560 + M·52,763 + 53·(u·M² + 2M + 1)
//	  + 10·r_fc + 2,049·M + u·r_fc·M + r_fc + M + 1
//	  = 53·u·M² + 81,479·M + 53,174 + r_fc·(u·M + 11).
//
// The paper states M_out = 10 for CIFAR-10's last layer (§4.2), as bayesianize's configs do
// (Linear inducing_rows 10): r_fc = 10 gives 5,703,396 at M = 64 (TestResNet50Counts). Table 9's
// numbers are reproduced exactly, all ten of them, by r_fc = M instead: the last layer counted
// with M × M inducing weights. The difference is r_fc·(u·M + 11) at r_fc = M minus at 10:
//
//	Δ = (M − 10)·(u·M + 11)   e.g. M = 64, FFG-U: 54·139 = 7,506; Ensemble-U: 54·331 = 17,874.
//
// See docs/results/table9.md.

// table9Paper holds Table 9's counts, FFG-U and Ensemble-U, by M.
var table9Paper = map[int][2]int64{
	16:  {1384662, 1426134},
	32:  {2771446, 2937334},
	64:  {5710902, 6374454},
	128: {12253366, 14907574},
	256: {27992502, 38609334},
}

// table9Hand is the closed form above: the parameter count of bayesianize's CIFAR-10 ResNet-50
// with M × M inducing weights in every convolution, rFC × M in fc, and u copies of each r × c
// inducing matrix (2 for FFG-U's mean and sd, the ensemble size for Ensemble-U). It is the sum
// written term by term, not simplified, so that each term can be checked against the derivation.
func table9Hand(m, rFC, u int64) int64 {
	const (
		convs   = 53
		sumOut  = 26560 // Σ d_out over the convolutions
		sumIn   = 52763 // Σ d_in over the convolutions
		bn      = 2 * sumOut
		fcOut   = 10
		fcIn    = 2048 + 1
		perConv = 1 // _lamda
	)
	conv := m*sumOut + m*sumIn + convs*(u*m*m+m+m+perConv)
	fc := rFC*fcOut + m*fcIn + u*rFC*m + rFC + m + 1
	return bn + conv + fc
}

// table9Config is a bayesianize inference config for the Table 9 models: M × M inducing weights
// in every Conv2d, rFC × M in the Linear layer, q(U) diagonal (FFG-U, the hyper-parameters of
// bayesianize's configs/ffg_u_cifar10.json) or an ensemble of 5 (Ensemble-U, as
// configs/ensemble_u_cifar10.json). The hyper-parameters do not change the counts.
func table9Config(m, rFC int, ensemble bool) string {
	q := `"q_inducing": "diagonal", "max_lamda": 0.03, "max_sd_u": 0.1`
	if ensemble {
		q = `"q_inducing": "ensemble", "ensemble_size": 5, "max_lamda": 0.1`
	}
	return fmt.Sprintf(`{
	"inference": {
		"Conv2d": {"inference": "inducing", "inducing_rows": %d, "inducing_cols": %d},
		"Linear": {"inference": "inducing", "inducing_rows": %d, "inducing_cols": %d}
	},
	"whitened_u": true, %s, "learn_lamda": true, "init_lamda": 0.001,
	"cache_cholesky": true, "prior_sd": 1.0, "sqrt_width_scaling": true
}`, m, m, rFC, m, q)
}

// table9Count counts, with the converter's own code (what `edgebnn plan` and `inspect` report),
// the parameters, the deterministic network's parameters and the Z entries of ResNet-50 with
// the given config and classes.
func table9Count(t *testing.T, config string, classes int) (params, det, z int64) {
	t.Helper()
	cfg, err := bnnconfig.Parse([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	spec, err := specFor("resnet50", cfg, classes, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	infos := schema.LayerInfos(spec)
	if err := schema.CountParameters(spec, infos, func(t schema.Tensor) (int64, int64, error) { return int64(t.Size()), 0, nil }); err != nil {
		t.Fatal(err)
	}
	for _, li := range infos {
		params += li.Parameters
		det += li.Deterministic
		z += li.Z
	}
	return params, det, z
}

// TestTable9ParameterCounts checks the converter's parameter counts for paper 003's Table 9
// models against the hand count (table9Hand) and the paper: with the last layer's inducing rows
// at 10 (the paper's stated setting and bayesianize's configs) the counts fall short of the
// paper's by (M − 10)(u·M + 11); with M rows they equal the paper's.
func TestTable9ParameterCounts(t *testing.T) {
	type row struct {
		m        int
		ensemble bool
	}
	var rows []row
	for _, m := range []int{16, 32, 64, 128, 256} {
		rows = append(rows, row{m, false}, row{m, true})
	}
	t.Logf("%4s  %-10s  %11s  %11s  %11s  %8s  %s", "M", "method", "paper", "fc 10×M", "fc M×M", "diff", "(M−10)(uM+11)")
	for _, r := range rows {
		method, u, col := "FFG-U", int64(2), 0
		if r.ensemble {
			method, u, col = "Ensemble-U", 5, 1
		}
		paper := table9Paper[r.m][col]
		m := int64(r.m)
		var got [2]int64
		for i, rFC := range []int{10, r.m} {
			params, det, _ := table9Count(t, table9Config(r.m, rFC, r.ensemble), 10)
			if want := table9Hand(m, int64(rFC), u); params != want {
				t.Errorf("M=%d %s, fc %d×%d: converter counts %d, hand count %d", r.m, method, rFC, r.m, params, want)
			}
			if det != 23520842 {
				t.Errorf("M=%d %s: deterministic %d, want Table 9's 23,520,842", r.m, method, det)
			}
			got[i] = params
		}
		delta := (m - 10) * (u*m + 11)
		if paper-got[0] != delta {
			t.Errorf("M=%d %s: paper − ours = %d, want (M−10)(uM+11) = %d", r.m, method, paper-got[0], delta)
		}
		if got[1] != paper {
			t.Errorf("M=%d %s: with fc %d×%d %d, paper %d", r.m, method, r.m, r.m, got[1], paper)
		}
		t.Logf("%4d  %-10s  %11d  %11d  %11d  %8d  %d", r.m, method, paper, got[0], got[1], paper-got[0], delta)
	}
}

// TestTable9Hypotheses tries the other explanations of the gap between our M = 64 FFG-U count
// and the paper's 5,710,902 that a config or the class count can express, over all ten Table 9
// entries: only the last layer's M × M inducing weights reproduce every one.
func TestTable9Hypotheses(t *testing.T) {
	hyps := []struct {
		name    string
		classes int
		rFC     func(m int) string // the Linear layer's inducing_rows ("null": bayesianize's ⌊√d_out⌋)
		noFC    bool               // fc deterministic (no Linear entry)
		matches bool
	}{
		{"10 classes, fc 10×M (the paper's text)", 10, func(int) string { return "10" }, false, false},
		{"10 classes, fc M×M", 10, func(m int) string { return fmt.Sprint(m) }, false, true},
		{"10 classes, fc rows None (⌊√10⌋ = 3)", 10, func(int) string { return "null" }, false, false},
		{"10 classes, fc deterministic", 10, nil, true, false},
		{"100 classes, fc 100×M", 100, func(int) string { return "100" }, false, false},
		{"100 classes, fc M×M", 100, func(m int) string { return fmt.Sprint(m) }, false, false},
	}
	for _, h := range hyps {
		all := true
		var diffs []string
		for _, m := range []int{16, 32, 64, 128, 256} {
			for col, ens := range []bool{false, true} {
				q := `"q_inducing": "diagonal"`
				if ens {
					q = `"q_inducing": "ensemble", "ensemble_size": 5`
				}
				linear := ""
				if !h.noFC {
					linear = fmt.Sprintf(`, "Linear": {"inference": "inducing", "inducing_rows": %s, "inducing_cols": %d}`, h.rFC(m), m)
				}
				cfg := fmt.Sprintf(`{"inference": {"Conv2d": {"inference": "inducing", "inducing_rows": %d, "inducing_cols": %d}%s}, %s}`,
					m, m, linear, q)
				params, _, _ := table9Count(t, cfg, h.classes)
				d := table9Paper[m][col] - params
				all = all && d == 0
				diffs = append(diffs, fmt.Sprint(d))
			}
		}
		t.Logf("%-42s paper − count (FFG-U, Ensemble-U for M = 16…256): %v", h.name, diffs)
		if all != h.matches {
			t.Errorf("%s: reproduces all of Table 9 = %v, want %v", h.name, all, h.matches)
		}
	}
}

// TestTable10ZPruning: Table 10's FFG-U rows (M = 64) are 5,710,902 minus 25, 50 and 75 % of the
// Z entries of the same fc M × M model: Z = 64·(26,560 + 52,763 + 10 + 2,049) = 5,208,448.
func TestTable10ZPruning(t *testing.T) {
	params, _, z := table9Count(t, table9Config(64, 64, false), 10)
	if z != 64*(26560+52763+10+2049) {
		t.Errorf("Z entries %d, want 5,208,448", z)
	}
	for _, c := range []struct {
		keep  int64 // percent of Z kept
		paper int64
	}{{100, 5710902}, {75, 4408790}, {50, 3106678}, {25, 1804566}} {
		if got := params - z*(100-c.keep)/100; got != c.paper {
			t.Errorf("FFG-U keeping %d %% of Z: %d, paper %d", c.keep, got, c.paper)
		}
	}
}
