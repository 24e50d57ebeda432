package runtime_test

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/edgebnn/edgebnn/runtime"
)

const infoSpec = `{"version":1,"task":"regression","noise_var":1,"input_shape":[2],"layers":[{"name":"d","op":"dropout","p":0.25,"mc":true}]%s}`

// TestSpecInfoIsOpaque: Spec.Info is carried along untouched (json.RawMessage; any provenance a
// tool stores), so names in it that differ only in case — or repeat — are not the reader's
// business; the model loads. (The first strict reader refused `member "note" repeats "Note"`.)
func TestSpecInfoIsOpaque(t *testing.T) {
	spec := fmt.Sprintf(infoSpec, `,"info":{"Note":"from the paper","note":"local run","metrics":{"ECE":0.02,"ece_binned":[0.1]}}`)
	if _, err := runtime.ParseSpec([]byte(spec)); err != nil {
		t.Errorf("a description whose info has keys differing in case: %v", err)
	}
}

// TestSpecInfoNoAmplification: an info of one object with a million short names (12 MB of JSON,
// a few KB zstd-compressed in a model file) is skipped as bytes, not walked into a map of its
// names (the first strict reader allocated 44× the input). ParseSpec's passes — the size count,
// the names check and the decode, each through a json.Decoder whose buffer grows to hold the
// value — allocate about 10× the input in all (7× before the names check; the peak resident
// memory is the same, 80 MB against 83 MB), so the bound is 12×. No timing.
func TestSpecInfoNoAmplification(t *testing.T) {
	if testing.Short() {
		t.Skip("12 MB input")
	}
	var sb strings.Builder
	sb.WriteString(`,"info":{`)
	for i := range 1_000_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `"k%d":0`, i)
	}
	sb.WriteString("}")
	spec := []byte(fmt.Sprintf(infoSpec, sb.String()))
	goruntime.GC()
	var a, b goruntime.MemStats
	goruntime.ReadMemStats(&a)
	_, err := runtime.ParseSpec(spec)
	goruntime.ReadMemStats(&b)
	if err != nil {
		t.Fatal(err)
	}
	if alloc := b.TotalAlloc - a.TotalAlloc; alloc > 12*uint64(len(spec)) {
		t.Errorf("ParseSpec of %d bytes allocated %d MB (%.0f× the input)", len(spec), alloc>>20, float64(alloc)/float64(len(spec)))
	}
}
