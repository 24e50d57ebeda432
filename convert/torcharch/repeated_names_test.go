package torcharch

import (
	"strings"
	"testing"
)

// TestParseJSONStrict: an architecture whose layer gives an argument twice or that has a stray
// bracket after the object is refused (the decoder kept the last argument; dec.More() had let
// `{...}]` through). Layer arguments are matched exactly, so another case is an unknown one.
func TestParseJSONStrict(t *testing.T) {
	ok := `{"layers": [{"name": "0", "type": "Linear", "in_features": 4, "out_features": 2}]}`
	if _, err := ParseJSON(strings.NewReader(ok)); err != nil {
		t.Fatalf("valid architecture: %v", err)
	}
	for _, c := range []struct{ name, json, want string }{
		{"stray bracket", ok + "]", "trailing data after the JSON object"},
		{"stray brace", ok + "}", "trailing data after the JSON object"},
		{"repeated argument", strings.Replace(ok, `"out_features": 2`, `"out_features": 2, "out_features": 3`, 1), `member "out_features" appears twice`},
		{"argument in another case", strings.Replace(ok, `"out_features": 2`, `"out_features": 2, "Out_Features": 3`, 1), `unknown argument "Out_Features"`},
		{"repeated top-level member", `{"layers": [], "layers": []}`, `member "layers" appears twice`},
	} {
		if _, err := ParseJSON(strings.NewReader(c.json)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
