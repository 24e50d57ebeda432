package serve

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
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
	kindCanceled       = "client_canceled"
	kindShutdown       = "shutting_down"
	kindInternal       = "internal"
	kindReadBody       = "read_body"
)

// maxNesting bounds the nesting of one instance's arrays ([C][H][W] needs 3).
const maxNesting = 8

// predictRequest is the JSON body of a predict request.
type predictRequest struct {
	Instances json.RawMessage `json:"instances"`
}

// parseJSON parses a predict request's body into dst (appending): the number of instances, each
// of size values, or a request error naming the instance and value.
func parseJSON(model string, body []byte, size, maxInstances int, dst []float32) ([]float32, int, *reqError) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var req predictRequest
	if err := dec.Decode(&req); err != nil {
		return dst, 0, badRequest(kindBadJSON, "model %q: malformed request: %v", model, shortErr(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return dst, 0, badRequest(kindBadJSON, "model %q: malformed request: data after the JSON object", model)
	}
	if len(req.Instances) == 0 || string(req.Instances) == "null" {
		return dst, 0, badRequest(kindBadJSON, `model %q: the request has no "instances"`, model)
	}
	p := instParser{b: req.Instances, dst: dst, size: size, model: model}
	n, rerr := p.instances(maxInstances)
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

// instParser reads the "instances" array (valid JSON: encoding/json checked it) into flat
// float32 values.
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
		return "nothing"
	}
	switch p.b[p.i] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func (p *instParser) instances(maxInstances int) (int, *reqError) {
	p.ws()
	if p.i >= len(p.b) || p.b[p.i] != '[' {
		return 0, badRequest(kindBadJSON, `model %q: "instances" must be an array of instances, not %s`, p.model, p.what())
	}
	p.i++
	n := 0
	for {
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ']' {
			if n == 0 {
				return 0, badRequest(kindBadShape, `model %q: "instances" is empty`, p.model)
			}
			return n, nil
		}
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
		if got := len(p.dst) - start; got != p.size {
			return 0, badRequest(kindBadShape, "model %q: instance %d has %d values; the model takes %d", p.model, n, got, p.size)
		}
		n++
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			p.i++
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
	count, kind := 0, byte(0) // kind: 'n' numbers, 'a' arrays
	for {
		p.ws()
		if p.i >= len(p.b) {
			return badRequest(kindBadJSON, "model %q: instance %d: unexpected end", p.model, k)
		}
		c := p.b[p.i]
		if c == ']' {
			p.i++
			break
		}
		if c == ',' {
			p.i++
			continue
		}
		switch {
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
			if len(p.dst)-start >= p.size {
				return badRequest(kindBadShape, "model %q: instance %d has more than %d values (the model's input size)", p.model, k, p.size)
			}
			s := p.i
			for p.i < len(p.b) && isNumByte(p.b[p.i]) {
				p.i++
			}
			v, err := strconv.ParseFloat(unsafe.String(&p.b[s], p.i-s), 32)
			if err != nil {
				return badRequest(kindBadShape, "model %q: instance %d, value %d: %.40s is outside float32's range", p.model, k, len(p.dst)-start, p.b[s:p.i])
			}
			p.dst = append(p.dst, float32(v))
		default:
			return badRequest(kindBadShape, "model %q: instance %d, value %d: want a number, got %s", p.model, k, len(p.dst)-start, p.what())
		}
		count++
	}
	if count == 0 {
		return badRequest(kindBadShape, "model %q: instance %d: empty array", p.model, k)
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

func isNumByte(c byte) bool {
	return '0' <= c && c <= '9' || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'
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
	for i := 0; i+4 <= len(body); i += 4 {
		v := math.Float32frombits(binary.LittleEndian.Uint32(body[i:]))
		if v-v != 0 {
			j := i / 4
			return dst, 0, &reqError{code: http.StatusBadRequest, kind: kindNonFiniteInput,
				msg: fmt.Sprintf("model %q: instance %d, value %d is %s", model, j/size, j%size, nonFiniteName(v))}
		}
		dst = append(dst, v)
	}
	return dst, n, nil
}

func nonFiniteName(v float32) string {
	if v != v {
		return "NaN"
	}
	return "infinite"
}
