package torcharch

import (
	"bytes"
	"math/rand"
	"reflect"
	"strings"
	"testing"
)

// TestRandomMutations mutates a valid repr at random: parsing must never
// panic (a hang trips the test timeout), and whatever parses must round-trip through JSON.
func TestRandomMutations(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	n := 20000
	if testing.Short() {
		n = 1000
	}
	for it := 0; it < n; it++ {
		b := []byte(torchRepr)
		for k := 0; k < 1+r.Intn(4); k++ {
			switch r.Intn(3) {
			case 0:
				b[r.Intn(len(b))] = byte(r.Intn(128))
			case 1:
				i := r.Intn(len(b))
				b = append(b[:i], b[i+1:]...)
			case 2:
				i := r.Intn(len(b))
				b = append(b[:i], append([]byte{"(),=' \n"[r.Intn(7)]}, b[i:]...)...)
			}
		}
		mods, err := ParseRepr(strings.NewReader(string(b)))
		if err == nil {
			var buf bytes.Buffer
			WriteJSON(&buf, mods)
			back, err := ParseJSON(&buf)
			if err != nil || !reflect.DeepEqual(back, mods) {
				t.Fatalf("round trip %v on %q", err, b)
			}
		}
	}
}
