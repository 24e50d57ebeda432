package serve

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"net/http"
	"slices"
	"strconv"
	"unsafe"
)

// reqError is a request's failure: its status, its kind (the errors_total label) and the
// message returned as {"error": "…"}.
type reqError struct {
	code int
	kind string
	msg  string
}

func (e *reqError) Error() string { return e.msg }

func badRequest(kind, format string, args ...any) *reqError {
	return &reqError{code: http.StatusBadRequest, kind: kind, msg: fmt.Sprintf(format, args...)}
}

// The kinds of request errors (label kind of edgebnn_serve_errors_total).
const (
	kindBadJSON        = "bad_json"
	kindBadShape       = "bad_shape"
	kindBadQuery       = "bad_query"
	kindNonFiniteInput = "non_finite_input"
	kindNonFiniteOut   = "non_finite_output"
	kindTooMany        = "too_many_instances"
	kindTooLarge       = "body_too_large"
	kindMediaType      = "unsupported_media_type"
	kindUnknownModel   = "unknown_model"
	kindNotFound       = "not_found"
	kindMethod         = "method_not_allowed"
	kindQueueTimeout   = "queue_timeout"
	kindBusy           = "server_busy"
	kindCanceled       = "client_canceled"
	kindShutdown       = "shutting_down"
	kindInternal       = "internal"
	kindReadBody       = "read_body"
)

// maxNesting bounds the nesting of one instance's arrays ([C][H][W] needs 3).
const maxNesting = 8

// parseJSON parses a predict request's body — one JSON object whose only key is "instances" —
// into dst (appending) in a single pass: the number of instances, each of size values, or a
// request error naming the instance and value. It is strict JSON (RFC 8259): exact key, number
// grammar, commas, no trailing data; whitespace anywhere JSON allows it.
func parseJSON(model string, body []byte, size, maxInstances int, dst []float32) ([]float32, int, *reqError) {
	p := instParser{b: body, dst: dst, size: size, model: model}
	n, rerr := p.request(maxInstances)
	return p.dst, n, rerr
}

// shortErr quotes at most 200 bytes of an error from the input.
func shortErr(err error) string {
	s := err.Error()
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// instParser reads a predict request into flat float32 values.
type instParser struct {
	b     []byte
	i     int
	dst   []float32
	size  int
	model string
	// Per instance: the length of its arrays at each depth (0: none seen yet), and the depth
	// of its numbers.
	dims [maxNesting]int
	leaf int
	// shape is the first instance of the wrong size: reported once the whole body has been
	// read, so that a malformed body is reported as such rather than by its first instance.
	shape *reqError
}

func (p *instParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// what names the JSON value starting at p.i, for error messages.
func (p *instParser) what() string {
	if p.i >= len(p.b) {
		return "the end of the body"
	}
	switch c := p.b[p.i]; {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || '0' <= c && c <= '9':
		return "a number"
	}
	return fmt.Sprintf("%q", p.b[p.i])
}

func (p *instParser) malformed(format string, args ...any) *reqError {
	return badRequest(kindBadJSON, "model %q: malformed request at byte %d: %s", p.model, p.i, fmt.Sprintf(format, args...))
}

// request reads {"instances": […]}.
func (p *instParser) request(maxInstances int) (int, *reqError) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '{' {
		return 0, p.malformed("want a JSON object {\"instances\": […]}, got %s", p.what())
	}
	p.i++
	n, seen := 0, false
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.ws()
			key, err := p.key()
			if err != nil {
				return 0, err
			}
			p.ws()
			if p.i >= len(p.b) || p.b[p.i] != ':' {
				return 0, p.malformed("want ':' after a key, got %s", p.what())
			}
			p.i++
			p.ws()
			if key != "instances" {
				return 0, badRequest(kindBadJSON, "model %q: malformed request: unknown field %.40q (the request has one field, \"instances\")", p.model, key)
			}
			if seen {
				return 0, badRequest(kindBadJSON, `model %q: malformed request: "instances" given twice`, p.model)
			}
			seen = true
			if n, err = p.instances(maxInstances); err != nil {
				return 0, err
			}
			more, err := p.next('}', -1)
			if err != nil {
				return 0, err
			}
			if !more {
				break
			}
		}
	}
	p.ws()
	if p.i != len(p.b) {
		return 0, badRequest(kindBadJSON, "model %q: malformed request: data after the JSON object", p.model)
	}
	if !seen {
		return 0, badRequest(kindBadJSON, `model %q: the request has no "instances"`, p.model)
	}
	if p.shape != nil {
		return 0, p.shape
	}
	return n, nil
}

// next reads what follows an element of an array or object: ',' (more elements: true) or its
// closing bracket (false). inst ≥ 0 names the instance the element belongs to in the error.
func (p *instParser) next(closing byte, inst int) (bool, *reqError) {
	p.ws()
	if p.i < len(p.b) {
		switch p.b[p.i] {
		case ',':
			p.i++
			return true, nil
		case closing:
			p.i++
			return false, nil
		}
	}
	if inst >= 0 {
		return false, p.malformed("instance %d: want ',' or '%c', got %s", inst, closing, p.what())
	}
	return false, p.malformed("want ',' or '%c', got %s", closing, p.what())
}

// key reads an object key: a JSON string without escapes (any escape is refused: the only valid
// key is "instances").
func (p *instParser) key() (string, *reqError) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return "", p.malformed("want a key (a string), got %s", p.what())
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		switch c := p.b[j]; {
		case c == '"':
			p.i = j + 1
			return string(p.b[start:j]), nil
		case c == '\\' || c < 0x20:
			p.i = j
			return "", badRequest(kindBadJSON, "model %q: malformed request: unknown field (escaped or control characters in a key; the request has one field, \"instances\")", p.model)
		}
	}
	p.i = len(p.b)
	return "", p.malformed("unterminated string")
}

func (p *instParser) instances(maxInstances int) (int, *reqError) {
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return 0, badRequest(kindBadJSON, `model %q: "instances" must be an array of instances, not %s`, p.model, p.what())
	}
	p.i++
	n := 0
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		return 0, badRequest(kindBadShape, `model %q: "instances" is empty`, p.model)
	}
	for {
		p.ws()
		if n == maxInstances {
			return 0, &reqError{code: http.StatusBadRequest, kind: kindTooMany,
				msg: fmt.Sprintf("model %q: more than %d instances in one request (the server's limit)", p.model, maxInstances)}
		}
		if p.i >= len(p.b) || p.b[p.i] != '[' {
			return 0, badRequest(kindBadShape, "model %q: instance %d: want an array of %d numbers, got %s", p.model, n, p.size, p.what())
		}
		start := len(p.dst)
		clear(p.dims[:])
		p.leaf = -1
		if err := p.array(n, 0, start); err != nil {
			return 0, err
		}
		if got := len(p.dst) - start; got != p.size && p.shape == nil {
			p.shape = badRequest(kindBadShape, "model %q: instance %d has %d values; the model takes %d", p.model, n, got, p.size)
		}
		n++
		more, err := p.next(']', n-1)
		if err != nil {
			return 0, err
		}
		if !more {
			return n, nil
		}
	}
}

// array reads the array at p.i (instance k, nesting depth d; the instance's values start at
// dst[start]), checking that the instance's nested arrays are rectangular.
func (p *instParser) array(k, d, start int) *reqError {
	if d == maxNesting {
		return badRequest(kindBadShape, "model %q: instance %d: arrays nested deeper than %d", p.model, k, maxNesting)
	}
	p.i++
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == ']' {
		return badRequest(kindBadShape, "model %q: instance %d: empty array", p.model, k)
	}
	count, kind := 0, byte(0) // kind: 'n' numbers, 'a' arrays
	for {
		p.ws()
		if p.i >= len(p.b) {
			return badRequest(kindBadJSON, "model %q: instance %d: unexpected end of the body", p.model, k)
		}
		switch c := p.b[p.i]; {
		case c == '[':
			if kind == 'n' {
				return badRequest(kindBadShape, "model %q: instance %d: an array mixes numbers and arrays", p.model, k)
			}
			kind = 'a'
			if err := p.array(k, d+1, start); err != nil {
				return err
			}
		case c == '-' || '0' <= c && c <= '9':
			if kind == 'a' {
				return badRequest(kindBadShape, "model %q: instance %d: an array mixes numbers and arrays", p.model, k)
			}
			kind = 'n'
			run, err := p.numbers(k, start)
			if err != nil {
				return err
			}
			count += run - 1
		default:
			return badRequest(kindBadShape, "model %q: instance %d, value %d: want a number, got %s", p.model, k, len(p.dst)-start, p.what())
		}
		count++
		more, err := p.next(']', k)
		if err != nil {
			return err
		}
		if !more {
			break
		}
	}
	if p.dims[d] == 0 {
		p.dims[d] = count
	} else if p.dims[d] != count {
		return badRequest(kindBadShape, "model %q: instance %d: ragged nested arrays (%d and %d elements at depth %d)", p.model, k, p.dims[d], count, d)
	}
	if kind == 'n' {
		if p.leaf >= 0 && p.leaf != d {
			return badRequest(kindBadShape, "model %q: instance %d: numbers at nesting depths %d and %d", p.model, k, p.leaf, d)
		}
		p.leaf = d
	}
	return nil
}

// numbers reads a run of numbers separated by commas (values of instance k, which start at
// dst[start]), as far as it goes: it stops before a ']' or a ',' that is not followed by a
// number, which the caller's loop then handles. It returns how many numbers it read (≥ 1). Plain
// numbers — an optional '-', at most 18 digits, an optional fraction, no exponent — inside the
// body go many at a time through plainRun; other plain numbers through plainNumber, and any
// other falls to number, which checks and converts all of JSON's grammar.
func (p *instParser) numbers(k, start int) (int, *reqError) {
	b, n := p.b, 0
	limit := start + p.size
	for {
		i, dst, after := plainRun(b, p.i, p.dst, limit)
		n += len(dst) - len(p.dst)
		p.i, p.dst = i, dst
		if !after {
			if len(p.dst) >= limit {
				return 0, badRequest(kindBadShape, "model %q: instance %d has more than %d values (the model's input size)", p.model, k, p.size)
			}
			if v, i, ok := plainNumber(b, p.i); ok {
				p.i = i
				p.dst = append(p.dst, v)
			} else if err := p.number(k, len(p.dst)-start); err != nil {
				return 0, err
			}
			n++
		}
		// A ',' followed by a number continues the run.
		i = p.i
		for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
			i++
		}
		if i >= len(b) || b[i] != ',' {
			p.i = i
			return n, nil
		}
		j := i + 1
		for j < len(b) && (b[j] == ' ' || b[j] == '\n' || b[j] == '\t' || b[j] == '\r') {
			j++
		}
		if j >= len(b) || !(b[j] == '-' || '0' <= b[j] && b[j] <= '9') {
			p.i = i
			return n, nil
		}
		p.i = j
	}
}

// plainRunGeneric reads, from the number at b[i:], consecutive plain numbers that each start a
// window of 32 bytes of the body and are separated by "," or ", " (JSON.stringify's and Python's
// json.dumps' forms), appending them to dst while it is shorter than limit. It stops at the
// first number it does not read (after false: i is that number's start) or after a number that
// no such separator and number follow (after true: i is the byte after it). It takes a number
// with an integer part of at most seven digits and at most fifteen fraction digits, eighteen
// digits in all and a mantissa below 2⁵³ (Clinger's fast path, as plainNumber), and leaves any
// other to plainNumber. "0." (normalised inputs) goes straight to the fraction; digits go eight
// at a time (digits8), the ninth to fifteenth of a fraction one at a time. plainRun is this
// function, or its assembly twin where there is one.
func plainRunGeneric(b []byte, i int, dst []float32, limit int) (next int, out []float32, after bool) {
	for len(b)-i >= 32 && len(dst) < limit {
		w := (*[32]byte)(b[i:])
		var (
			mant uint64
			neg  bool
			j    int // the next byte of w
			f    float32
		)
		frac := true
		if binary.LittleEndian.Uint16(w[:]) == '0'|'.'<<8 {
			j = 2
		} else {
			if w[0] == '-' {
				neg, j = true, 1
			}
			switch c := w[j]; {
			case c == '0':
				j++
			case '1' <= c && c <= '9':
				n, x := digits8(binary.LittleEndian.Uint64(w[j:]))
				if n == 8 {
					return i, dst, false
				}
				mant, j = x, j+n
			default:
				return i, dst, false
			}
			if w[j] == '.' {
				j++
			} else {
				frac = false
			}
		}
		if !frac {
			if c := w[j]; c != ',' && c != ']' && isNumByte(c) {
				return i, dst, false
			}
			f = float32(mant) // at most seven digits: exact
		} else {
			start := j // the first fraction digit
			n, x := digits8(binary.LittleEndian.Uint64(w[j:]))
			if n == 0 {
				return i, dst, false
			}
			mant, j = mant*pow10u[n]+x, j+n
			if n == 8 && w[j]-'0' <= 9 {
				for d := w[j] - '0'; d <= 9; d = w[j] - '0' {
					if j == start+15 {
						return i, dst, false
					}
					mant = 10*mant + uint64(d)
					j++
				}
				// Digits before the point, and after it (a mantissa of more than 18 may wrap).
				if nd := start - 1 - int(b2u(neg)) + j - start; nd > 18 || mant >= 1<<53 {
					return i, dst, false
				}
			}
			if c := w[j]; c != ',' && c != ']' && isNumByte(c) {
				return i, dst, false
			}
			f64 := float64(mant) / pow10[j-start] // as in plainNumber
			if math.Float64bits(f64)&(1<<29-1) == 1<<28 {
				return i, dst, false
			}
			f = float32(f64)
		}
		if neg {
			f = -f
		}
		dst = append(dst, f)
		// The separator: j ≤ 24 here, so w[j+2] is inside the window.
		if w[j] != ',' {
			return i + j, dst, true
		}
		s := j + 1
		c := w[s]
		if c == ' ' {
			s++
			c = w[s]
		}
		if c-'0' > 9 && c != '-' {
			return i + j, dst, true
		}
		i += s
	}
	return i, dst, false
}

func b2u(b bool) uint {
	if b {
		return 1
	}
	return 0
}

// digits8 reads the run of decimal digits that starts the eight bytes w (little-endian, SWAR):
// its length n (0…8) and its value x. A digit byte XOR '0' is its value 0…9; a byte's high bit
// is set in t when it is not a digit (x ≥ 0x80, or x + 0x76 ≥ 0x80 for x ≥ 10; a carry out of a
// byte only reaches later bytes, past the run's end). The run's bytes move to the top (the
// shift drops what follows it), the first digit the most significant, and three multiplies add
// adjacent digits, pairs and quadruples (Lemire's eight-digit reading).
func digits8(w uint64) (n int, x uint64) {
	x = w ^ 0x3030303030303030
	t := (x + 0x7676767676767676 | x) & 0x8080808080808080
	n = bits.TrailingZeros64(t) >> 3
	x <<= 64 - 8*uint(n) // n = 0: 0
	x = x * (10<<8 + 1) >> 8 & 0x00ff00ff00ff00ff
	x = x * (100<<16 + 1) >> 16 & 0x0000ffff0000ffff
	return n, x * (10000<<32 + 1) >> 32
}

// pow10u holds 10ⁿ, for digits8's runs.
var pow10u = [9]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8}

// plainNumber reads the number at b[i:] when it is plain: -?(0|[1-9][0-9]*)(.[0-9]+)? with at
// most 18 digits, followed by a byte that cannot continue a number, and converts it with
// Clinger's fast path (decimal.float32). ok is false for anything else, and nothing is consumed.
func plainNumber(b []byte, i int) (v float32, next int, ok bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	if i >= len(b) || b[i] < '0' || b[i] > '9' {
		return 0, 0, false
	}
	var mant uint64
	exp := 0
	start := i
	if b[i] == '0' {
		i++
	} else {
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			mant = 10*mant + uint64(c)
		}
	}
	nd := i - start
	if i < len(b) && b[i] == '.' {
		i++
		from := i
		for ; i < len(b); i++ {
			c := b[i] - '0'
			if c > 9 {
				break
			}
			mant = 10*mant + uint64(c)
		}
		if i == from {
			return 0, 0, false
		}
		exp = from - i
		nd -= exp
	}
	if nd > 18 || mant >= 1<<53 {
		return 0, 0, false
	}
	if i < len(b) && b[i] != ',' && b[i] != ']' && isNumByte(b[i]) {
		return 0, 0, false
	}
	// decimal.float32's fast path, inlined: exp is in [−18, 0] and a nonzero mant·10^exp in
	// [10⁻¹⁸, 2⁵³], well inside float32's normal range.
	f := float64(mant) / pow10[-exp]
	if math.Float64bits(f)&(1<<29-1) == 1<<28 {
		return 0, 0, false
	}
	if neg {
		f = -f
	}
	return float32(f), i, true
}

// number reads a JSON number (RFC 8259: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?) as value j
// of instance k, checking the grammar and converting in one pass (decimalToFloat32).
func (p *instParser) number(k, j int) *reqError {
	b, s := p.b, p.i
	i := s
	var d decimal
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		i = d.digits(b, i, false)
	default:
		return p.badNumber(k, j, s, i)
	}
	if i < len(b) && b[i] == '.' {
		i++
		from := i
		if i = d.digits(b, i, true); i == from {
			return p.badNumber(k, j, s, i)
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		neg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			neg = b[i] == '-'
			i++
		}
		from, e := i, 0
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			if e < 1e6 {
				e = 10*e + int(b[i]-'0')
			}
			i++
		}
		if i == from {
			return p.badNumber(k, j, s, i)
		}
		if neg {
			e = -e
		}
		d.exp += e
	}
	if i < len(b) && isNumByte(b[i]) { // "01", "1.2.3", "1e5e5"
		return p.badNumber(k, j, s, i)
	}
	v, ok := d.float32()
	if !ok {
		f, err := strconv.ParseFloat(unsafe.String(&b[s], i-s), 32)
		if err != nil {
			return badRequest(kindBadShape, "model %q: instance %d, value %d: %.40s is outside float32's range", p.model, k, j, b[s:i])
		}
		v = float32(f)
	}
	p.i = i
	p.dst = append(p.dst, v)
	return nil
}

// decimal accumulates a JSON number's digits: mant·10^exp, exact while it has at most 19
// significant digits.
type decimal struct {
	mant    uint64
	nd      int // significant digits in mant (leading zeros not counted)
	exp     int
	neg     bool
	inexact bool // digits beyond the 19th were dropped
}

// digits reads the digits at b[i:] into d (fraction digits when frac) and returns the index
// after them.
func (d *decimal) digits(b []byte, i int, frac bool) int {
	mant, nd, exp := d.mant, d.nd, d.exp
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		switch {
		case nd == 0 && c == 0: // a leading zero: only moves the point
		case nd < 19:
			mant = 10*mant + uint64(c)
			nd++
		default:
			if c != 0 {
				d.inexact = true
			}
			if !frac {
				exp++ // a dropped integer digit still scales the value
			}
			continue
		}
		if frac {
			exp--
		}
	}
	d.mant, d.nd, d.exp = mant, nd, exp
	return i
}

// pow10 holds the powers of ten that float64 represents exactly.
var pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
	1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float32 returns the decimal correctly rounded to float32 when that can be done exactly and
// fast, ok false otherwise (the caller then uses strconv). Clinger's fast path: with mant < 2⁵³
// and |exp| ≤ 22 both operands of mant·10^exp or mant/10^-exp are exact float64 values, so the
// float64 result f is the correctly rounded value of the decimal x. Rounding f to float32 gives
// x's correctly rounded float32 unless a float32 rounding boundary lies between x and f; since
// |x − f| < ½ ulp₆₄ and every boundary (a midpoint between float32 neighbours) is a float64 value,
// that can happen only when f is itself a boundary: its low 29 mantissa bits are 1000…0. Then,
// and for every other case, ok is false.
func (d *decimal) float32() (float32, bool) {
	if d.inexact || d.mant >= 1<<53 || d.exp < -22 || d.exp > 22 {
		return 0, false
	}
	f := float64(d.mant)
	if d.exp < 0 {
		f /= pow10[-d.exp]
	} else {
		f *= pow10[d.exp]
	}
	if f != 0 && (f < 0x1p-126 || f > math.MaxFloat32) {
		return 0, false // subnormal or out of float32's range: strconv says which
	}
	if math.Float64bits(f)&(1<<29-1) == 1<<28 {
		return 0, false
	}
	if d.neg {
		f = -f
	}
	return float32(f), true
}

func (p *instParser) badNumber(k, j, s, i int) *reqError {
	end := min(i+1, len(p.b), s+40)
	return badRequest(kindBadJSON, "model %q: malformed request: instance %d, value %d: %q is not a JSON number", p.model, k, j, p.b[s:end])
}

// parseRaw reads a raw body (little-endian float32, a whole number of instances) into dst.
func parseRaw(model string, body []byte, size, maxInstances int, dst []float32) ([]float32, int, *reqError) {
	if len(body) == 0 {
		return dst, 0, badRequest(kindBadShape, "model %q: empty body", model)
	}
	per := 4 * size
	if len(body)%per != 0 {
		return dst, 0, badRequest(kindBadShape, "model %q: a raw body of %d bytes is not a whole number of inputs of %d float32 values (%d bytes each)",
			model, len(body), size, per)
	}
	n := len(body) / per
	if n > maxInstances {
		return dst, 0, &reqError{code: http.StatusBadRequest, kind: kindTooMany,
			msg: fmt.Sprintf("model %q: %d instances in one request; the server's limit is %d", model, n, maxInstances)}
	}
	m := len(dst)
	dst = slices.Grow(dst, len(body)/4)[:m+len(body)/4]
	out := dst[m:]
	if binary.NativeEndian.Uint16([]byte{1, 0}) == 1 {
		// float32 memory is little-endian (every edgebnn target): the body is the values.
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(body)), body)
	} else {
		for j := range out {
			out[j] = math.Float32frombits(binary.LittleEndian.Uint32(body[4*j:]))
		}
	}
	for j, v := range out {
		if v-v != 0 { // ±Inf or NaN
			return dst[:m], 0, &reqError{code: http.StatusBadRequest, kind: kindNonFiniteInput,
				msg: fmt.Sprintf("model %q: instance %d, value %d is %s", model, j/size, j%size, nonFiniteName(v))}
		}
	}
	return dst, n, nil
}

func nonFiniteName(v float32) string {
	if v != v {
		return "NaN"
	}
	return "infinite"
}

// isNumByte reports whether c can continue a number: a byte after a complete JSON number that
// is one of these makes the number malformed.
func isNumByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
}
