package serve

import (
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestPlainRunTwins: plainRun (assembly where there is one) and plainRunGeneric take the same
// numbers from the same bodies — the stopping point, whether a separator followed, and every
// value bit for bit — on runs of random numbers in many forms, with separators, stray bytes and
// body ends placed around the 32-byte window, at every limit, appending to a non-empty dst.
func TestPlainRunTwins(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	n := 40000
	if testing.Short() {
		n = 8000
	}
	num := func() string {
		switch r.IntN(8) {
		case 0:
			return strconv.Itoa(r.IntN(256)) // pixels
		case 1:
			return strconv.FormatFloat(float64(r.Float32()), 'g', -1, 32)
		case 2:
			return strconv.FormatFloat(float64(r.Float32()), 'f', r.IntN(18), 32)
		case 3:
			return strconv.FormatFloat(float64(math.Float32frombits(r.Uint32()&0x7effffff)), 'g', -1, 32)
		case 4: // random digit strings: long integer parts and fractions, leading zeros
			s := strings.Repeat("0", r.IntN(3)) + strconv.FormatUint(r.Uint64()>>r.IntN(64), 10)
			if r.IntN(2) == 0 {
				ip := strconv.FormatUint(r.Uint64()>>r.IntN(64), 10)
				s = ip[:min(len(ip), 1+r.IntN(9))] + "." + s
			}
			return s
		case 5: // halfway between two float32s
			f := math.Float32frombits(r.Uint32() & 0x3fffffff)
			return strconv.FormatFloat((float64(f)+float64(math.Nextafter32(f, 2)))/2, 'f', -1, 64)
		case 6:
			return []string{"0", "-0", "0.0", "1.", ".5", "01", "1e5", "-", "1.5E-3", "-x", "7.25"}[r.IntN(11)]
		default:
			return strconv.FormatFloat(float64(r.NormFloat64()), 'f', r.IntN(10), 64)
		}
	}
	taken := 0
	seps := []string{",", ",", ", ", ",  ", ",\n", " ,", "]", "],[", ",]", ",,", ""}
	// Mantissas that wrap around 2⁶⁴ to a small value (2⁶⁴ + 5, 2⁶⁵ + 7): more than 18 digits,
	// refused whatever the wrapped value.
	fixed := []string{"1844674.4073709551621", "3689348.8147419103239", "-1844674.4073709551621",
		"9999999.999999999999999", "0.999999999999999", "0.9999999999999999", "9007199.254740993"}
	for i := range n {
		var sb strings.Builder
		if i < len(fixed) {
			sb.WriteString(fixed[i] + ",1" + strings.Repeat(" ", 32))
		}
		for k := r.IntN(12); i >= len(fixed) && k >= 0; k-- {
			if r.IntN(2) == 0 && sb.Len() == 0 || r.IntN(3) == 0 {
				sb.WriteByte('-')
			}
			sb.WriteString(num())
			sb.WriteString(seps[r.IntN(len(seps))])
		}
		body := []byte(sb.String())
		if r.IntN(2) == 0 { // the end of the body anywhere, or padding to open the window
			body = body[:r.IntN(len(body)+1)]
		} else {
			body = append(body, strings.Repeat(" ", r.IntN(40))...)
		}
		limit := 3 + r.IntN(14)
		if r.IntN(4) == 0 {
			limit = 1 << 20
		}
		start := []float32{1, 2, 3}
		ng, dg, ag := plainRunGeneric(body, 0, slices.Clone(start), limit)
		na, da, aa := plainRun(body, 0, slices.Clone(start), limit)
		if ng != na || ag != aa || len(dg) != len(da) {
			t.Fatalf("%q limit %d: generic next %d, %d values, after %v; plainRun next %d, %d values, after %v", body, limit, ng, len(dg), ag, na, len(da), aa)
		}
		taken += len(dg) - len(start)
		for j := range dg {
			if math.Float32bits(dg[j]) != math.Float32bits(da[j]) {
				t.Fatalf("%q: value %d: generic %v, plainRun %v", body, j, dg[j], da[j])
			}
		}
	}
	if taken < n/4 {
		t.Errorf("only %d numbers taken from %d bodies", taken, n)
	}
}
