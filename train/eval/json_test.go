package eval

import (
	"reflect"
	"strings"
	"testing"
)

// TestReportJSONTags walks every struct type reachable from Report (through pointers, slices and
// maps) and requires a snake_case json tag on each exported field, so that `eval --json` never
// mixes Go field names ("Count") into its lower-case keys.
func TestReportJSONTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type, string)
	walk = func(ty reflect.Type, path string) {
		switch ty.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(ty.Elem(), path+"[]")
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[ty] {
			return
		}
		seen[ty] = true
		for i := range ty.NumField() {
			f := ty.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			switch {
			case name == "-":
				continue
			case name == "":
				t.Errorf("%s.%s (%s) has no json tag", path, f.Name, ty)
			case strings.ToLower(name) != name || strings.ContainsAny(name, " -"):
				t.Errorf("%s.%s: json key %q is not snake_case", path, f.Name, name)
			}
			walk(f.Type, path+"."+name)
		}
	}
	walk(reflect.TypeFor[Report](), "Report")
	if len(seen) < 3 {
		t.Fatalf("walked %d struct types; want Report, Classification, Regression, Bin, OODScore", len(seen))
	}
}
