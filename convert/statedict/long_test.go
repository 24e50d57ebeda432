package statedict

import (
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/convert/safetensors"
)

// TestLongNameClipped: a duplicate megabyte key is quoted by a short prefix.
func TestLongNameClipped(t *testing.T) {
	a, _ := safetensors.NewF32(strings.Repeat("k", 1<<20), []int{1}, []float32{1})
	_, err := FromTensors([]safetensors.Tensor{a, a}, nil)
	if err == nil || len(err.Error()) > 1024 || !strings.Contains(err.Error(), "… (1048576 bytes)") {
		t.Fatalf("err = %.300v", err)
	}
}
