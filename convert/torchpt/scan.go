package torchpt

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
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

// ErrLimit is wrapped by the errors of inputs refused because they exceed
// a Limits bound (rather than being malformed).
var ErrLimit = errors.New("limit exceeded")

// scanner is the state of scanPickle's abstract execution: it tracks, for
// every value on the stack and in the memo, an identifier of the object
// (so that DUP and GET share it), and for every object its length as a
// container and its weight (the bytes of the strings it holds, which is
// what hashing or comparing it costs), without building any value.
type scanner struct {
	lim     Limits
	stack   []int32 // object identifiers
	marks   []int   // stack lengths at each MARK
	memo    map[uint64]int32
	sizes   []int   // container length per object identifier
	weights []int64 // weight per object identifier
	objects int
	refs    int64 // total weight referenced again by DUP and GET
	maxRefs int64
}

const maxWeight = 1 << 62

func addWeight(a, b int64) int64 {
	if a > maxWeight-b {
		return maxWeight
	}
	return a + b
}

func (s *scanner) newObject(at int, weight int64) (int32, error) {
	s.objects++
	if s.objects > s.lim.MaxObjects {
		return 0, fmt.Errorf("pickle: byte %d: more than %d objects: %w", at, s.lim.MaxObjects, ErrLimit)
	}
	s.sizes = append(s.sizes, 0)
	s.weights = append(s.weights, weight)
	return int32(len(s.sizes) - 1), nil
}

func (s *scanner) push(at int, id int32) error {
	if len(s.stack) >= s.lim.MaxStack {
		return fmt.Errorf("pickle: byte %d: stack deeper than %d: %w", at, s.lim.MaxStack, ErrLimit)
	}
	s.stack = append(s.stack, id)
	return nil
}

func (s *scanner) pushNew(at int, weight int64) error {
	id, err := s.newObject(at, weight)
	if err != nil {
		return err
	}
	return s.push(at, id)
}

// pushRef pushes object id again (DUP, GET), charging its weight.
func (s *scanner) pushRef(at int, id int32) error {
	s.refs = addWeight(s.refs, s.weights[id])
	if s.refs > s.maxRefs {
		return fmt.Errorf("pickle: byte %d: values of more than %d bytes referenced again (DUP, GET): %w", at, s.maxRefs, ErrLimit)
	}
	return s.push(at, id)
}

func (s *scanner) base() int {
	if len(s.marks) == 0 {
		return 0
	}
	return s.marks[len(s.marks)-1]
}

// sum returns the total weight of the values stack[from:].
func (s *scanner) sum(from int) int64 {
	w := int64(0)
	for _, id := range s.stack[from:] {
		w = addWeight(w, s.weights[id])
	}
	return w
}

// pop removes n values above the current mark and returns their weight.
func (s *scanner) pop(at, n int) (int64, error) {
	if len(s.stack)-s.base() < n {
		return 0, fmt.Errorf("pickle: byte %d: stack underflow", at)
	}
	w := s.sum(len(s.stack) - n)
	s.stack = s.stack[:len(s.stack)-n]
	return w, nil
}

func (s *scanner) top(at int) (int32, error) {
	if len(s.stack) <= s.base() {
		return 0, fmt.Errorf("pickle: byte %d: stack underflow", at)
	}
	return s.stack[len(s.stack)-1], nil
}

// popMark removes the values above the topmost mark and the mark, and
// returns how many values there were and their weight.
func (s *scanner) popMark(at int) (int, int64, error) {
	if len(s.marks) == 0 {
		return 0, 0, fmt.Errorf("pickle: byte %d: no MARK on the stack", at)
	}
	b := s.marks[len(s.marks)-1]
	s.marks = s.marks[:len(s.marks)-1]
	n, w := len(s.stack)-b, s.sum(b)
	s.stack = s.stack[:b]
	return n, w, nil
}

// grow adds n items of weight w to the container on top of the stack.
func (s *scanner) grow(at, n int, w int64) error {
	id, err := s.top(at)
	if err != nil {
		return err
	}
	s.sizes[id] += n
	s.weights[id] = addWeight(s.weights[id], w)
	if s.sizes[id] > s.lim.MaxContainerLen {
		return fmt.Errorf("pickle: byte %d: container of more than %d items: %w", at, s.lim.MaxContainerLen, ErrLimit)
	}
	return nil
}

// collect pops the values above the topmost mark and pushes a new
// container of n/div items.
func (s *scanner) collect(at, div int) error {
	n, w, err := s.popMark(at)
	if err != nil {
		return err
	}
	if n/div > s.lim.MaxContainerLen {
		return fmt.Errorf("pickle: byte %d: container of more than %d items: %w", at, s.lim.MaxContainerLen, ErrLimit)
	}
	id, err := s.newObject(at, w)
	if err != nil {
		return err
	}
	s.sizes[id] = n / div
	return s.push(at, id)
}

// replace pops n values and pushes one new object holding them.
func (s *scanner) replace(at, n int) error {
	w, err := s.pop(at, n)
	if err != nil {
		return err
	}
	id, err := s.newObject(at, w)
	if err != nil {
		return err
	}
	s.sizes[id] = n
	return s.push(at, id)
}

func (s *scanner) put(at int, idx uint64) error {
	id, err := s.top(at)
	if err != nil {
		return err
	}
	if _, ok := s.memo[idx]; !ok && len(s.memo) >= s.lim.MaxMemo {
		return fmt.Errorf("pickle: byte %d: more than %d memo entries: %w", at, s.lim.MaxMemo, ErrLimit)
	}
	s.memo[idx] = id
	return nil
}

func (s *scanner) get(at int, idx uint64) error {
	id, ok := s.memo[idx]
	if !ok {
		return fmt.Errorf("pickle: byte %d: memo entry %d is not set", at, idx)
	}
	return s.pushRef(at, id)
}

// lineArg returns the text of a newline-terminated argument.
func lineArg(p []byte, i int) string {
	k := bytes.IndexByte(p[i:], '\n')
	return string(bytes.TrimSuffix(p[i:i+k], []byte("\r")))
}

// scanPickle executes a pickle abstractly, without building any value,
// and checks that it is well formed and within lim: every length-prefixed
// argument fits in the remaining data, a STOP opcode is reached, the
// stack, marks, memo, containers, object count and integer widths stay
// within lim. It keeps the unpickler (third-party code that trusts its
// input) from allocating buffers sized by hostile length fields or
// amplifying a small pickle into a huge object graph.
func scanPickle(p []byte, lim Limits) error {
	lim = lim.withDefaults()
	s := &scanner{lim: lim, memo: map[uint64]int32{}, maxRefs: lim.MaxRefBytes}
	if s.maxRefs <= 0 {
		s.maxRefs = 4*int64(len(p)) + 1<<20
	}
	i := 0
	for i < len(p) {
		op := p[i]
		arg, ok := pickleOps[op]
		if !ok {
			return fmt.Errorf("pickle: unknown opcode 0x%02x at byte %d", op, i)
		}
		at := i
		i++
		argAt := i
		rest := uint64(len(p) - i)
		var n uint64
		switch arg.kind {
		case argNone:
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
		if op == '.' {
			return nil
		}
		if err := s.step(p, op, at, argAt, int64(i-argAt)); err != nil {
			return err
		}
	}
	return fmt.Errorf("pickle: truncated (no STOP opcode)")
}

// step applies the stack effect of opcode op (at byte at, its argument
// of n bytes at byte a) to s.
func (s *scanner) step(p []byte, op byte, at, a int, n int64) error {
	lim := s.lim
	switch op {
	case 'I', 'L': // INT, LONG: decimal text
		if l := len(lineArg(p, a)); l > 3*lim.MaxIntBytes {
			return fmt.Errorf("pickle: byte %d: integer of %d digits (more than %d): %w", at, l, 3*lim.MaxIntBytes, ErrLimit)
		}
		return s.pushNew(at, 1)
	case 0x8a, 0x8b: // LONG1, LONG4
		var l uint64
		if op == 0x8a {
			l = uint64(p[a])
		} else {
			l = uint64(binary.LittleEndian.Uint32(p[a:]))
		}
		if l > uint64(lim.MaxIntBytes) {
			return fmt.Errorf("pickle: byte %d: integer of %d bytes (more than %d): %w", at, l, lim.MaxIntBytes, ErrLimit)
		}
		if l == 0 {
			return fmt.Errorf("pickle: byte %d: integer of zero bytes", at)
		}
		return s.pushNew(at, 1)
	case 'S', 'T', 'U', 'B', 'C', 0x8e, 0x96, 'V', 0x8c, 'X', 0x8d, 'F', 'P':
		// Strings, bytes, floats, persistent ids: weighed by their text.
		return s.pushNew(at, 1+n)
	case 'J', 'K', 'M', 0x97, 'N', 0x88, 0x89, 'G', ']', ')', '}', 0x8f, 0x82, 0x83, 0x84, 'c':
		// A global is resolved once, when it is loaded; references to it
		// cost nothing.
		return s.pushNew(at, 1)
	case 0x98: // READONLY_BUFFER
		_, err := s.top(at)
		return err
	case '(':
		if len(s.marks) >= lim.MaxMarkDepth {
			return fmt.Errorf("pickle: byte %d: MARKs nested deeper than %d: %w", at, lim.MaxMarkDepth, ErrLimit)
		}
		if _, err := s.newObject(at, 0); err != nil { // the unpickler allocates a stack per MARK
			return err
		}
		s.marks = append(s.marks, len(s.stack))
	case '0': // POP: the unpickler pops a mark when the stack above it is empty
		if len(s.stack) == s.base() {
			_, _, err := s.popMark(at)
			return err
		}
		_, err := s.pop(at, 1)
		return err
	case '1':
		_, _, err := s.popMark(at)
		return err
	case '2':
		id, err := s.top(at)
		if err != nil {
			return err
		}
		return s.pushRef(at, id)
	case 0x85, 0x86, 0x87: // TUPLE1-3
		return s.replace(at, int(op-0x84))
	case 't', 'l', 0x91: // TUPLE, LIST, FROZENSET
		return s.collect(at, 1)
	case 'd': // DICT
		return s.collect(at, 2)
	case 'o', 'i': // OBJ, INST
		_, w, err := s.popMark(at)
		if err != nil {
			return err
		}
		return s.pushNew(at, addWeight(w, 1+n))
	case 'a': // APPEND
		w, err := s.pop(at, 1)
		if err != nil {
			return err
		}
		return s.grow(at, 1, w)
	case 's': // SETITEM
		w, err := s.pop(at, 2)
		if err != nil {
			return err
		}
		return s.grow(at, 1, w)
	case 'e', 0x90: // APPENDS, ADDITEMS
		k, w, err := s.popMark(at)
		if err != nil {
			return err
		}
		return s.grow(at, k, w)
	case 'u': // SETITEMS
		k, w, err := s.popMark(at)
		if err != nil {
			return err
		}
		return s.grow(at, k/2, w)
	case 'R', 0x81: // REDUCE, NEWOBJ
		return s.replace(at, 2)
	case 0x93: // STACK_GLOBAL: resolved once, like GLOBAL
		if _, err := s.pop(at, 2); err != nil {
			return err
		}
		return s.pushNew(at, 1)
	case 0x92: // NEWOBJ_EX
		return s.replace(at, 3)
	case 'Q': // BINPERSID
		return s.replace(at, 1)
	case 'b': // BUILD
		w, err := s.pop(at, 1)
		if err != nil {
			return err
		}
		return s.grow(at, 0, w)
	case 'g', 'p': // GET, PUT: decimal index
		idx, err := strconv.ParseUint(lineArg(p, a), 10, 31)
		if err != nil {
			return fmt.Errorf("pickle: byte %d: bad memo index: %w", at, err)
		}
		if op == 'g' {
			return s.get(at, idx)
		}
		return s.put(at, idx)
	case 'h':
		return s.get(at, uint64(p[a]))
	case 'j':
		return s.get(at, uint64(binary.LittleEndian.Uint32(p[a:])))
	case 'q':
		return s.put(at, uint64(p[a]))
	case 'r':
		return s.put(at, uint64(binary.LittleEndian.Uint32(p[a:])))
	case 0x94: // MEMOIZE
		return s.put(at, uint64(len(s.memo)))
	}
	return nil
}
