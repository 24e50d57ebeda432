package train

import (
	"strings"
	"testing"
)

// TestConfigRepeatedNames: a settings file that gives a key twice, in any case, is refused
// naming the file and both spellings. encoding/json kept the last, so {"epochs": 1, "Epochs": 3}
// trained 3 epochs while the file reads as 1 at a glance.
func TestConfigRepeatedNames(t *testing.T) {
	for _, c := range []struct{ name, json, want string }{
		{"case", `{"epochs": 1, "Epochs": 3}`, `config run.json: member "Epochs" repeats "epochs"`},
		{"twice", `{"lr": 0.1, "lr": 0.001}`, `config run.json: member "lr" appears twice`},
		{"stray bracket", `{"epochs": 1}]`, "config run.json: trailing data after the JSON object"},
	} {
		cfg := DefaultConfig()
		if err := cfg.ParseConfig([]byte(c.json), "run.json"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
