package bnnconfig

import (
	"strings"
	"testing"
)

// TestLongValuesClipped: a huge key, entry name or number in a config
// gives an error quoting only a short prefix of it.
func TestLongValuesClipped(t *testing.T) {
	long := strings.Repeat("k", 1<<20)
	digits := "1" + strings.Repeat("0", 1<<20)
	tests := []struct{ name, cfg, want string }{
		{"unknown key", `{"inference": "ffg", "` + long + `": 1}`, "… (1048576 bytes)"},
		{"duplicate key", `{"inference": "ffg", "` + long + `": 1, "` + long + `": 1}`, "… (1048576 bytes)"},
		{"entry", `{"inference": {"` + long + `": 3}}`, "… (1048576 bytes)"},
		{"integer", `{"inference": "inducing", "inducing_rows": ` + digits + `}`, "… (1048577 bytes)"},
		{"number", `{"inference": "inducing", "prior_sd": ` + digits + `e99999}`, "bytes)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.cfg))
			if err == nil {
				t.Fatal("accepted")
			}
			if len(err.Error()) > 1024 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error of %d bytes (%.200s…), want at most 1024 mentioning %q", len(err.Error()), err, tc.want)
			}
		})
	}
}

// TestZeroCapsAccepted: a clamp of 0 (λ or the q(U) scale forced to 0) is
// a legitimate, if degenerate, setting; only negative clamps are refused.
func TestZeroCapsAccepted(t *testing.T) {
	for _, cfg := range []string{
		`{"inference": "inducing", "max_lamda": 0, "max_sd_u": 0.0}`,
		`{"inference": "ffg", "max_sd": 0}`,
		`{"inference": "inducing", "max_lamda": null, "max_sd_u": null}`,
	} {
		if _, err := Parse([]byte(cfg)); err != nil {
			t.Errorf("%s: %v", cfg, err)
		}
	}
}
