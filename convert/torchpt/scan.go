package torchpt

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// Pickle opcode argument kinds (see CPython's Lib/pickletools.py).
const (
	argNone  = iota
	argFixed // n bytes
	argLine  // one newline-terminated line
	argLines // two newline-terminated lines
	argLen1  // 1-byte length, then that many bytes
	argLen4  // 4-byte little-endian length, then that many bytes
	argLen8  // 8-byte little-endian length, then that many bytes
)

type opArg struct {
	kind int
	n    int
}

// pickleOps describes the argument of every opcode of pickle protocols 0-5.
var pickleOps = map[byte]opArg{
	'I': {argLine, 0}, 'J': {argFixed, 4}, 'K': {argFixed, 1}, 'M': {argFixed, 2},
	'L': {argLine, 0}, 0x8a: {argLen1, 0}, 0x8b: {argLen4, 0},
	'S': {argLine, 0}, 'T': {argLen4, 0}, 'U': {argLen1, 0},
	'B': {argLen4, 0}, 'C': {argLen1, 0}, 0x8e: {argLen8, 0}, 0x96: {argLen8, 0},
	0x97: {}, 0x98: {},
	'N': {}, 0x88: {}, 0x89: {},
	'V': {argLine, 0}, 0x8c: {argLen1, 0}, 'X': {argLen4, 0}, 0x8d: {argLen8, 0},
	'F': {argLine, 0}, 'G': {argFixed, 8},
	']': {}, 'a': {}, 'e': {}, 'l': {},
	')': {}, 't': {}, 0x85: {}, 0x86: {}, 0x87: {},
	'}': {}, 'd': {}, 's': {}, 'u': {},
	0x8f: {}, 0x90: {}, 0x91: {},
	'0': {}, '2': {}, '(': {}, '1': {},
	'g': {argLine, 0}, 'h': {argFixed, 1}, 'j': {argFixed, 4},
	'p': {argLine, 0}, 'q': {argFixed, 1}, 'r': {argFixed, 4}, 0x94: {},
	0x82: {argFixed, 1}, 0x83: {argFixed, 2}, 0x84: {argFixed, 4},
	'c': {argLines, 0}, 0x93: {},
	'R': {}, 'b': {}, 'i': {argLines, 0}, 'o': {}, 0x81: {}, 0x92: {},
	0x80: {argFixed, 1}, '.': {}, 0x95: {argFixed, 8},
	'P': {argLine, 0}, 'Q': {},
}

// scanPickle walks the opcodes of a pickle without executing them and
// checks that every length-prefixed argument fits in the remaining data
// and that a STOP opcode is reached. It keeps the unpickler from
// allocating buffers sized by hostile length fields.
func scanPickle(p []byte) error {
	i := 0
	for i < len(p) {
		op := p[i]
		arg, ok := pickleOps[op]
		if !ok {
			return fmt.Errorf("pickle: unknown opcode 0x%02x at byte %d", op, i)
		}
		at := i
		i++
		rest := uint64(len(p) - i)
		var n uint64
		switch arg.kind {
		case argNone:
			if op == '.' {
				return nil
			}
			continue
		case argFixed:
			n = uint64(arg.n)
		case argLine, argLines:
			lines := 1
			if arg.kind == argLines {
				lines = 2
			}
			for l := 0; l < lines; l++ {
				k := bytes.IndexByte(p[i:], '\n')
				if k < 0 {
					return fmt.Errorf("pickle: opcode %q at byte %d: unterminated line", op, at)
				}
				i += k + 1
			}
			continue
		case argLen1:
			if rest < 1 {
				return fmt.Errorf("pickle: truncated at byte %d", at)
			}
			n = 1 + uint64(p[i])
		case argLen4:
			if rest < 4 {
				return fmt.Errorf("pickle: truncated at byte %d", at)
			}
			n = 4 + uint64(binary.LittleEndian.Uint32(p[i:]))
		case argLen8:
			if rest < 8 {
				return fmt.Errorf("pickle: truncated at byte %d", at)
			}
			l := binary.LittleEndian.Uint64(p[i:])
			if l > rest {
				return fmt.Errorf("pickle: opcode 0x%02x at byte %d: length %d exceeds the %d bytes left", op, at, l, rest)
			}
			n = 8 + l
		}
		if n > rest {
			return fmt.Errorf("pickle: opcode 0x%02x at byte %d: needs %d bytes, %d left", op, at, n, rest)
		}
		if op == 0x95 { // FRAME: its size must fit; the framed opcodes follow.
			if fl := binary.LittleEndian.Uint64(p[i:]); fl > rest-8 {
				return fmt.Errorf("pickle: frame at byte %d of %d bytes exceeds the %d left", at, fl, rest-8)
			}
		}
		i += int(n)
	}
	return fmt.Errorf("pickle: truncated (no STOP opcode)")
}
