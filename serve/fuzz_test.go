package serve

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
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
		`{"instances": [[0.12345678901, -1.5, 0.000012345, 12345.678901], [1,2,3,4]]}`,
		`{"instances": [[0.1,0.2, 0.3,-0.4],[5.25,6e-1,7.,8]]}`,
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
		// The values are the body's numbers, each rounded to float32 as strconv does.
		var req struct{ Instances any }
		d := json.NewDecoder(bytes.NewReader(body))
		d.UseNumber()
		if err := d.Decode(&req); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		var want []float32
		var walk func(any)
		walk = func(v any) {
			switch v := v.(type) {
			case []any:
				for _, e := range v {
					walk(e)
				}
			case json.Number:
				f, err := strconv.ParseFloat(string(v), 32)
				if err != nil {
					t.Fatalf("accepted %s: %v", v, err)
				}
				want = append(want, float32(f))
			}
		}
		walk(req.Instances)
		if len(want) != len(xs) {
			t.Fatalf("%d values, the body has %d", len(xs), len(want))
		}
		for i := range xs {
			if math.Float32bits(xs[i]) != math.Float32bits(want[i]) {
				t.Fatalf("value %d is %v, the body says %v", i, xs[i], want[i])
			}
		}
	})
}
