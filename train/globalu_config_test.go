package train

import (
	"strings"
	"testing"
)

// TestGlobalInducingConfig: global_inducing is ROWSxCOLS, for posterior inducing only.
func TestGlobalInducingConfig(t *testing.T) {
	tests := []struct {
		value, posterior string
		rows, cols       int
		err              string
	}{
		{"32x32", "inducing", 32, 32, ""},
		{"8x16", "inducing", 8, 16, ""},
		{"32", "inducing", 0, 0, `global_inducing "32" is not ROWSxCOLS`},
		{"0x4", "inducing", 0, 0, `global_inducing "0x4"`},
		{"4x5000", "inducing", 0, 0, "[1, 4096]"},
		{"ax4", "inducing", 0, 0, `global_inducing "ax4"`},
		{"4x4", "ffg_w", 0, 0, `global_inducing "4x4" applies to posterior inducing, not "ffg_w"`},
	}
	for _, tc := range tests {
		t.Run(tc.value+"/"+tc.posterior, func(t *testing.T) {
			c := DefaultConfig()
			c.Arch, c.Data, c.Out = "mlp:4-3", "toy1d", "x.ebnn"
			c.Posterior, c.GlobalInducing = tc.posterior, tc.value
			err := c.Validate()
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				r, k, err := c.GlobalInducingSize()
				if err != nil || r != tc.rows || k != tc.cols {
					t.Fatalf("size %d×%d (%v), want %d×%d", r, k, err, tc.rows, tc.cols)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one containing %q", err, tc.err)
			}
		})
	}
}
