package resnet

import (
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
