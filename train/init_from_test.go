package train

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/train/data"
)

// trainedDeterministic trains the toy regression's deterministic network briefly and returns
// the trainer and its final checkpoint.
func trainedDeterministic(t *testing.T) (*Trainer, string) {
	t.Helper()
	c := toyConfig(t, "deterministic", "")
	tr := trainRun(t, c)
	return tr, c.Out
}

// TestInitFrom checks that init_from starts vifa's c, fa_em's iterates and a deterministic run at
// a deterministic checkpoint's parameters, that a fresh initialisation differs from them, and
// that posteriors other than deterministic and the FA ones, a missing file and another
// architecture are errors.
func TestInitFrom(t *testing.T) {
	det, ckpt := trainedDeterministic(t)
	var want []float64
	for _, p := range det.Nets[0].Params() {
		for _, v := range p.Value {
			want = append(want, float64(v))
		}
	}
	for _, tc := range []struct {
		posterior string
		init      string
		same      bool
	}{
		{"vifa", ckpt, true},
		{"fa_em", ckpt, true},
		{"deterministic", ckpt, true},
		{"vifa", "", false},
	} {
		t.Run(tc.posterior+"/"+filepath.Base(tc.init), func(t *testing.T) {
			c := faConfig(t, tc.posterior)
			c.InitFrom = tc.init
			tr, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]float64, 0, len(want))
			for _, p := range tr.Nets[0].Params() {
				for _, v := range p.Value {
					got = append(got, float64(v))
				}
			}
			if tr.fa != nil && tr.fa.vifa != nil {
				got = tr.fa.vifa.Posterior().Mean
			}
			if len(got) != len(want) {
				t.Fatalf("%d parameters, want %d", len(got), len(want))
			}
			same := true
			for i := range got {
				if float32(got[i]) != float32(want[i]) {
					same = false
					break
				}
			}
			if same != tc.same {
				t.Errorf("parameters equal to the checkpoint's: %v, want %v", same, tc.same)
			}
		})
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ffg_w", func(c *Config) { c.Posterior = "ffg_w" }, "init_from applies to posterior"},
		{"missing", func(c *Config) { c.InitFrom = filepath.Join(t.TempDir(), "none.ebnn") }, "init_from"},
		{"arch", func(c *Config) { c.Arch = "mlp:1-5-1:tanh" }, "same architecture"},
	} {
		t.Run("error/"+tc.name, func(t *testing.T) {
			c := faConfig(t, "vifa")
			c.InitFrom = ckpt
			tc.edit(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestNewWithData checks that NewWithData trains on the given sets, and refuses data that does
// not fit the task.
func TestNewWithData(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs = 2
	tr0, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	train, test := tr0.Train, tr0.Test.Head(7)
	tr, err := NewWithData(c, train, test)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Train != train || tr.Test.N != 7 {
		t.Fatalf("train %p (want %p), test N %d (want 7)", tr.Train, train, tr.Test.N)
	}
	if err := tr.Run(context.Background(), Hooks{}); err != nil {
		t.Fatal(err)
	}
	if r := tr.History[len(tr.History)-1].Test; r == nil || r.Regression == nil || r.Regression.N != 7 {
		t.Fatalf("the last evaluation %+v is not of the 7 given test points", r)
	}
	cls := data.TwoMoons(20, 0.1, 1)
	for _, tc := range []struct {
		name        string
		train, test *data.Dataset
	}{
		{"nil test", train, nil},
		{"classification data", cls, cls},
	} {
		if _, err := NewWithData(c, tc.train, tc.test); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
