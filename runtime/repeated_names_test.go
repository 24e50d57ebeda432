package runtime_test

import (
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

// TestRepeatedNamesRefused: a model file's JSON (its description, policy and preprocessing)
// may not name a member twice in one object — not even in another case, which encoding/json
// would match to the same field, keeping the last (a policy read as min_confidence 0.1 by Go and
// 0.9 by a reader that keeps the first). A stray bracket after the object is refused too.
func TestRepeatedNamesRefused(t *testing.T) {
	spec := `{"version":1,"task":"regression","noise_var":1,"input_shape":[2],"layers":[{"name":"d","op":"dropout","p":0.25,"mc":true}]}`
	if _, err := runtime.ParseSpec([]byte(spec)); err != nil {
		t.Fatalf("the valid description: %v", err)
	}
	for _, c := range []struct {
		name, spec, want string
	}{
		{"top level", strings.Replace(spec, `"version":1,`, `"version":1,"Version":1,`, 1), `member "Version" repeats "version"`},
		{"in a layer", strings.Replace(spec, `"p":0.25,`, `"p":0.25,"p":0.5,`, 1), `member "p" appears twice`},
		{"stray bracket", spec + "]", "trailing data after the JSON object"},
	} {
		if _, err := runtime.ParseSpec([]byte(c.spec)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("spec %s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	for _, c := range []struct{ name, policy, want string }{
		{"case", `{"version":1,"min_confidence":0.9,"Min_Confidence":0.1}`, `member "Min_Confidence" repeats "min_confidence"`},
		{"twice", `{"version":1,"samples":8,"samples":65536}`, `member "samples" appears twice`},
	} {
		if _, err := runtime.ParsePolicy([]byte(c.policy), runtime.Classification); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("policy %s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
	if _, err := runtime.ParsePreprocess([]byte(`{"version":1,"scale":0.5,"Scale":2}`), []int{2}, runtime.Classification, 2); err == nil ||
		!strings.Contains(err.Error(), `repeats "scale"`) {
		t.Errorf("preprocess: %v, want the repeated scale refused", err)
	}
}
