package torcharch

import (
	"io"
	"strings"
	"testing"
)

// TestLongValuesClipped: errors quote at most a short prefix of a huge
// module name, type or argument.
func TestLongValuesClipped(t *testing.T) {
	long := strings.Repeat("x", 500000)
	reprs := []string{
		"Sequential(\n  (0): " + long + "(in_features=1)\n)\n",
		"Sequential(\n  (" + long + " ): Linear(in_features=1, out_features=1, bias=True)\n)\n",
		"Sequential(\n  (0): Linear(in_features=" + long + ", out_features=1, bias=True)\n)\n",
		"Sequential(\n  (0): Linear(in_features=1, out_features=1, bias=True, " + long + "=1)\n)\n",
		"Sequential(\n  (0): Conv2d(1, 1, kernel_size=(3, 3), padding_mode='" + long + "')\n)\n",
	}
	jsons := []string{
		`{"layers": [{"name": "` + long + `", "type": "Linear", "in_features": "x"}]}`,
		`{"layers": [{"name": "a", "type": "` + long + `"}]}`,
		`{"layers": [{"name": "a", "type": "Linear", "` + long + `": 1}]}`,
		`{"layers": [{"name": "a", "type": "Linear", "in_features": 1` + strings.Repeat("0", 500000) + `}]}`,
		`{"layers": [], "` + long + `": 1}`,
	}
	for _, c := range []struct {
		what   string
		inputs []string
		parse  func(io.Reader) ([]Module, error)
	}{{"repr", reprs, ParseRepr}, {"json", jsons, ParseJSON}} {
		for i, in := range c.inputs {
			_, err := c.parse(strings.NewReader(in))
			if err == nil {
				t.Errorf("%s %d accepted", c.what, i)
				continue
			}
			if len(err.Error()) > 1024 {
				t.Errorf("%s %d: error of %d bytes: %.200s…", c.what, i, len(err.Error()), err)
			}
		}
	}
}

// TestJSONSingleModule: the one-module network ParseRepr makes of a bare
// leaf module (name "") survives WriteJSON and ParseJSON (found by
// FuzzParseRepr); the empty name stays refused in a longer network.
func TestJSONSingleModule(t *testing.T) {
	mods, err := ParseRepr(strings.NewReader("Linear(in_features=2, out_features=1, bias=False)\n"))
	if err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	if err := WriteJSON(&buf, mods); err != nil {
		t.Fatal(err)
	}
	back, err := ParseJSON(strings.NewReader(buf.String()))
	if err != nil || len(back) != 1 || back[0] != mods[0] {
		t.Fatalf("round trip: %v, %+v", err, back)
	}
	two := `{"layers": [{"name": "", "type": "ReLU"}, {"name": "1", "type": "ReLU"}]}`
	if _, err := ParseJSON(strings.NewReader(two)); err == nil || !strings.Contains(err.Error(), "non-empty") {
		t.Fatalf("err = %v", err)
	}
}
