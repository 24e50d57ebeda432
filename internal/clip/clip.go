// Package clip shortens the values that error messages quote, so that a
// hostile input (a 50 MB tensor name, a huge pickled string) cannot make an
// error message as large as the input itself.
//
// Q quotes a string, V formats any value; both keep at most Max bytes of
// the value and say how long the whole value was:
//
//	clip.Q("layer.weight")        → "layer.weight"
//	clip.Q(strings.Repeat("a", 1e6)) → "aaaa…aaa"… (1000000 bytes)
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Max is the number of bytes of a value that Q, S and V keep.
const Max = 64

// MaxMessage is the number of bytes of a whole error message that Error
// keeps.
const MaxMessage = 512

// prefix returns s cut to at most Max bytes on a rune boundary, and
// whether it was cut.
func prefix(s string) (string, bool) {
	if len(s) <= Max {
		return s, false
	}
	n := Max
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n], true
}

// Q returns s quoted as by %q, or, when s is longer than Max bytes, its
// first Max bytes quoted followed by "… (N bytes)".
func Q(s string) string {
	p, cut := prefix(s)
	if !cut {
		return strconv.Quote(p)
	}
	return strconv.Quote(p) + fmt.Sprintf("… (%d bytes)", len(s))
}

// S returns s unquoted, or, when s is longer than Max bytes, its first
// Max bytes followed by "… (N bytes)". It is for text that is already
// part of a message, such as the message of a third-party error.
func S(s string) string {
	p, cut := prefix(s)
	if !cut {
		return p
	}
	return p + fmt.Sprintf("… (%d bytes)", len(s))
}

// MaxPath is the longest path Path prints whole: PATH_MAX on Linux.
const MaxPath = 4096

// Path quotes a file path given on a command line or in an option: whole up to MaxPath bytes
// (a path is only useful whole), else as Q does with a prefix of MaxPath bytes.
func Path(p string) string {
	if len(p) <= MaxPath {
		return strconv.Quote(p)
	}
	return strconv.Quote(p[:MaxPath]) + fmt.Sprintf("… (%d bytes)", len(p))
}

// Error returns err with its message shortened to about MaxMessage bytes:
// its beginning and its end (where a wrapped error's reason is), joined by
// "… (N bytes) …"; errors.Is and errors.As still see err.
func Error(err error) error {
	if err == nil || len(err.Error()) <= MaxMessage {
		return err
	}
	return &clipped{err}
}

type clipped struct{ err error }

func (c *clipped) Error() string {
	m := c.err.Error()
	head := MaxMessage / 2
	for head > 0 && !utf8.RuneStart(m[head]) {
		head--
	}
	tail := len(m) - MaxMessage/2
	for tail < len(m) && !utf8.RuneStart(m[tail]) {
		tail++
	}
	return m[:head] + fmt.Sprintf("… (%d bytes) …", len(m)) + m[tail:]
}
func (c *clipped) Unwrap() error { return c.err }

// V formats v as %v does, keeping at most Max bytes followed by
// "… (N bytes)" when longer. Strings and byte slices are quoted with Q so
// that they are never formatted whole.
func V(v interface{}) string {
	switch x := v.(type) {
	case string:
		return Q(x)
	case []byte:
		if len(x) > Max {
			return Q(string(x[:Max])) + fmt.Sprintf("… (%d bytes)", len(x))
		}
		return Q(string(x))
	}
	full := fmt.Sprint(v)
	s, cut := prefix(full)
	if !cut {
		return s
	}
	return s + fmt.Sprintf("… (%d bytes)", len(full))
}
