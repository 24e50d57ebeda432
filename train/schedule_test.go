package train

import (
	"context"
	"math"
	"strings"
	"testing"
)

// TestCosineSchedule: with lr_schedule cosine every step's learning rate follows
// lr·(α + (1 − α)·½(1 + cos(π·s/S))) over the run's S steps (formula written out here), and
// clip_value trains; the config refuses the combinations it cannot honour.
func TestCosineSchedule(t *testing.T) {
	c := toyConfig(t, "deterministic", "")
	c.Epochs, c.LRSchedule, c.LRMinFactor, c.ClipValue = 3, "cosine", 0.1, 0.5
	c.Optimizer, c.Momentum = "sgd", 0.9
	tr, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	var lrs []float64
	if err := tr.Run(context.Background(), Hooks{Step: func(s StepInfo) { lrs = append(lrs, s.LR) }}); err != nil {
		t.Fatal(err)
	}
	total := c.Epochs * tr.Batches()
	if len(lrs) != total || total < 6 {
		t.Fatalf("%d steps recorded, want %d (≥ 6)", len(lrs), total)
	}
	for s, got := range lrs {
		want := c.LR * (0.1 + 0.9*0.5*(1+math.Cos(math.Pi*float64(s)/float64(total))))
		if !(math.Abs(got-want) <= 1e-12*c.LR) {
			t.Errorf("step %d: lr %.12g, want %.12g", s, got, want)
		}
	}
	for _, bad := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown schedule", func(c *Config) { c.LRSchedule = "linear" }, `lr_schedule "linear"`},
		{"cosine with milestones", func(c *Config) { c.Milestones = []int{2} }, "ignores milestones"},
		{"min factor above 1", func(c *Config) { c.LRMinFactor = 2 }, "lr_min_factor 2 outside"},
		{"negative clip_value", func(c *Config) { c.ClipValue = -1 }, "clip_value -1 outside"},
	} {
		cc := c
		bad.edit(&cc)
		if err := cc.Validate(); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: error %v, want one containing %q", bad.name, err, bad.want)
		}
	}
}
