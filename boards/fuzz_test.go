package boards

import (
	"strings"
	"testing"
)

func TestParseDeepNesting(t *testing.T) {
	deep := `{"simd": ` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + `}`
	if _, err := Parse("deep.json", []byte(deep)); err == nil || !strings.Contains(err.Error(), "nested deeper") {
		t.Fatalf("error %v", err)
	}
}

// FuzzParse: Parse returns a valid profile or an error naming the file, and never panics.
func FuzzParse(f *testing.F) {
	files, err := embedded.ReadDir("profiles")
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range files {
		b, err := embedded.ReadFile("profiles/" + e.Name())
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"name": "x", "name": "y"}`))
	f.Add([]byte(`{"simd": [[[[{}]]]]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := Parse("fuzz.json", b)
		if err != nil {
			if !strings.Contains(err.Error(), "fuzz.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := p.Validate(); err != nil {
			t.Fatalf("Parse returned an invalid profile: %v", err)
		}
	})
}
