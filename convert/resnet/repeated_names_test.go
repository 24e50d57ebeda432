package resnet

import (
	"strings"
	"testing"
)

// TestParseJSONRepeatedNames: a residual block or a layer inside one that gives a member twice
// is refused (the decoder kept the last), and so is a stray bracket after the architecture.
func TestParseJSONRepeatedNames(t *testing.T) {
	relu := `{"name": "r", "type": "ReLU"}`
	for _, c := range []struct{ name, json, want string }{
		{"block member twice", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "body": []}]}`, `member "body" appears twice`},
		{"block member in another case", `{"layers": [{"name": "b", "type": "Residual", "body": [` + relu + `], "Body": []}]}`, `member "Body" repeats "body"`},
		{"layer argument twice", `{"layers": [{"name": "b", "type": "Residual", "body": [{"name": "l", "type": "Linear", "in_features": 2, "out_features": 2, "out_features": 3}]}]}`, `member "out_features" appears twice`},
		{"stray bracket", `{"layers": [` + relu + `]}]`, "trailing data after the JSON object"},
	} {
		if _, err := ParseJSON(strings.NewReader(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
