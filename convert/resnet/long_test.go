package resnet

import (
	"fmt"
	"strings"
	"testing"
)

// TestLongNameClipped: a duplicate megabyte layer name is quoted by a
// short prefix.
func TestLongNameClipped(t *testing.T) {
	long := strings.Repeat("n", 1<<20)
	j := `{"layers": [{"name": "` + long + `", "type": "ReLU"}, {"name": "` + long + `", "type": "Linear", "in_features": 1, "out_features": 1}]}`
	_, err := ParseJSON(strings.NewReader(j))
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "… (1048576 bytes)") {
		t.Fatalf("err = %.300v", err)
	}
}

// TestUnknownFieldClipped: encoding/json's unknown-field errors, which
// quote the field, are clipped too.
func TestUnknownFieldClipped(t *testing.T) {
	long := strings.Repeat("f", 1<<20)
	for _, j := range []string{
		`{"layers": [], "` + long + `": 1}`,
		`{"layers": [{"name": "b", "type": "Residual", "body": [], "` + long + `": 1}]}`,
	} {
		_, err := ParseJSON(strings.NewReader(j))
		if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "bytes)") {
			t.Errorf("err (%d bytes) = %.80v … %s", len(fmt.Sprint(err)), err, fmt.Sprint(err)[max(0, len(fmt.Sprint(err))-80):])
		}
	}
}
