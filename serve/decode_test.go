package serve

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestNumberMatchesStrconv: the one-pass number reader gives, bit for bit, strconv.ParseFloat's
// float32 for random float32 values in every format and for random decimal strings (many
// digits, exponents across float32's range, halfway cases), or the same refusal.
func TestNumberMatchesStrconv(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	n := 300000
	if testing.Short() {
		n = 30000
	}
	plain, run := 0, 0
	check := func(s string) {
		want, werr := strconv.ParseFloat(s, 32)
		p := instParser{b: []byte(s), size: 1, model: "m"}
		err := p.number(0, 0)
		switch {
		case werr != nil && err == nil:
			t.Fatalf("%q: read as %v, strconv refuses it (%v)", s, p.dst[0], werr)
		case werr == nil && err != nil:
			t.Fatalf("%q: refused (%v), strconv reads %v", s, err.msg, want)
		case werr == nil && math.Float32bits(p.dst[0]) != math.Float32bits(float32(want)):
			t.Fatalf("%q: %v (%#08x), strconv %v (%#08x)", s, p.dst[0], math.Float32bits(p.dst[0]), float32(want), math.Float32bits(float32(want)))
		}
		// The inline reader of plain numbers, when it takes one, agrees too: at the end of the
		// body (digit by digit) and inside it (eight bytes at a time), in the same cases.
		v, next, ok := plainNumber([]byte(s+","), 0)
		if ok {
			plain++
			if werr != nil || next != len(s) || math.Float32bits(v) != math.Float32bits(float32(want)) {
				t.Fatalf("%q: plainNumber %v (next %d), strconv %v (%v)", s, v, next, float32(want), werr)
			}
		}
		// plainRun, inside a body: a number it takes agrees too, and it takes every plain number
		// with an integer part of at most 7 digits and a fraction of at most 15.
		body := []byte(s + ",0.5]]}" + strings.Repeat(" ", 32))
		if next, dst, _ := plainRun(body, 0, nil, 1); len(dst) == 1 {
			run++
			if werr != nil || next != len(s)+1 || math.Float32bits(dst[0]) != math.Float32bits(float32(want)) {
				t.Fatalf("%q: plainRun %v (next %d), strconv %v (%v)", s, dst[0], next, float32(want), werr)
			}
		} else if intPart, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), "."); ok && len(intPart) <= 7 && len(frac) <= 15 {
			t.Fatalf("%q: plainRun does not take it (next %d), plainNumber does", s, next)
		}
	}
	digits := func(k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = byte('0' + r.IntN(10))
		}
		if k > 1 && b[0] == '0' {
			b[0] = '1'
		}
		return string(b)
	}
	for range n {
		f := math.Float32frombits(r.Uint32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			continue
		}
		check(strconv.FormatFloat(float64(f), 'g', -1, 32))
		check(strconv.FormatFloat(float64(f), 'e', r.IntN(12), 32))
		check(strconv.FormatFloat(float64(r.Float32()), 'f', r.IntN(12), 32))
		// Random decimals: up to 25 digits, a point anywhere, exponents across the range.
		s := digits(1 + r.IntN(25))
		if r.IntN(2) == 0 {
			s = "0." + s
		}
		if r.IntN(2) == 0 {
			s += "e" + strconv.Itoa(r.IntN(100)-50)
		}
		if r.IntN(2) == 0 {
			s = "-" + s
		}
		check(s)
	}
	// Halfway between two float32s (exactly representable in float64), and next to it.
	for range n / 10 {
		f := math.Float32frombits(r.Uint32() & 0x7effffff)
		next := math.Nextafter32(f, float32(math.Inf(1)))
		mid := (float64(f) + float64(next)) / 2
		for _, v := range []float64{mid, math.Nextafter(mid, 0), math.Nextafter(mid, math.Inf(1))} {
			check(strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	if plain < n/2 || run < n/2 {
		t.Errorf("plainNumber took only %d of the strings, plainRun %d", plain, run)
	}
	for _, s := range []string{"0", "-0", "0.0", "1e22", "1e23", "1e-22", "1e-23", "3.4028235e38", "3.4028236e38",
		"1e39", "1.1754944e-38", "1e-45", "1e-46", "9007199254740993", "0.000000000000000000001", "123456789012345678901234567890"} {
		check(s)
	}
}

// TestDigits8: the eight-byte digit reader gives the length and value of the leading run of
// digits for every position of a non-digit among digits, with the bytes next to '0' and '9'
// ('/', ':') and bytes with the high bit set, against a byte-by-byte reading.
func TestDigits8(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	others := []byte{'/', ':', '.', ',', ']', 'e', '-', 0x80, 0xb0, 0xb9, 0xff, 0x00, ' '}
	for range 100000 {
		b := make([]byte, 8)
		for j := range b {
			b[j] = byte('0' + r.IntN(10))
		}
		if cut := r.IntN(9); cut < 8 {
			b[cut] = others[r.IntN(len(others))]
			for j := cut + 1; j < 8; j++ { // anything after the run's end
				b[j] = byte(r.Uint32())
			}
		}
		var want uint64
		n := 0
		for n < 8 && '0' <= b[n] && b[n] <= '9' {
			want = 10*want + uint64(b[n]-'0')
			n++
		}
		if gn, got := digits8(binary.LittleEndian.Uint64(b)); gn != n || got != want {
			t.Fatalf("%q: digits8 = %d, %d; want %d, %d", b, gn, got, n, want)
		}
	}
}
