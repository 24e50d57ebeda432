package serve

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// FuzzParseJSON: a predict request body never panics, never yields more than maxInstances
// instances or values other than size per instance, never a non-finite value, and an error
// message stays short whatever the input.
func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		`{"instances": [[1, 2, 3, 4]]}`,
		`{"instances": [[[1, 2], [3, 4]], [[5, 6], [7, 8]]]}`,
		`{"instances": [[1, 2, 3]]}`,
		`{"instances": [[1e39, 0, 0, 0]]}`,
		`{"instances": [["1", 2, 3, 4]]}`,
		`{"instances": null}`,
		`{"instances": [[1, 2, 3, 4]], "x": 1}`,
		`{"instances": [[1, 2, 3, 4]]} {}`,
		`{"instances": [[[[[[[[[[1]]]]]]]]]]}`,
		`[]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		const size, maxInst = 4, 3
		xs, n, err := parseJSON("m", body, size, maxInst, nil)
		if err != nil {
			if len(err.msg) > 1000 {
				t.Fatalf("error message of %d bytes", len(err.msg))
			}
			if err.code < 400 || err.code > 499 {
				t.Fatalf("status %d for a bad body", err.code)
			}
			return
		}
		if !json.Valid(body) {
			t.Fatalf("accepted a body that is not valid JSON: %q", body)
		}
		if n < 1 || n > maxInst || len(xs) != n*size {
			t.Fatalf("%d instances, %d values", n, len(xs))
		}
		for i, v := range xs {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("value %d is %v", i, v)
			}
		}
		if !strings.Contains(string(body), `"instances"`) {
			t.Fatalf("accepted a body without instances: %q", body)
		}
	})
}
