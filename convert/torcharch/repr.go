package torcharch

import (
	"bufio"
	"fmt"
	"github.com/edgebnn/edgebnn/internal/clip"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/internal/readlimit"
)

// ParseReprFile parses the print(net) text stored at path.
func ParseReprFile(path string) ([]Module, error) {
	f, err := readlimit.Open(path, 0)
	if err != nil {
		return nil, fmt.Errorf("torcharch: %w", err)
	}
	defer f.Close()
	mods, err := ParseRepr(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return mods, nil
}

// maxReprLine bounds one line of repr text.
const maxReprLine = 1 << 20

// MaxModules bounds the leaf modules of an architecture (ParseRepr, ParseJSON, and
// resnet.ParseJSON's residual blocks included): four times the runtime's 4096 layers, since a
// module may map to none. A 15 MB print(net) of 800 000 Tanh lines used to allocate 1.5 GB before
// the runtime refused the layer count.
const MaxModules = 1 << 14

// ParseRepr parses the printed repr of a torch.nn.Sequential (the text of
// print(net)) and returns its leaf modules in order. Nested Sequential
// containers are flattened, their names joined with dots. The print of a
// single leaf module (e.g. "Linear(in_features=2, out_features=1, bias=False)")
// is a network of that one module, named "" (its state_dict keys, "weight" and
// "bias", have no prefix). Errors name the line number and its text.
func ParseRepr(r io.Reader) ([]Module, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxReprLine)
	var (
		mods    []Module
		stack   []string // name prefixes of open containers
		lineNo  int
		done    bool
		started bool
		seen    = map[string]bool{}
	)
	fail := func(text string, format string, args ...interface{}) error {
		return fmt.Errorf("torcharch: line %d %s: %s", lineNo, clip.Q(text), fmt.Sprintf(format, args...))
	}
	for sc.Scan() {
		lineNo++
		raw := strings.TrimRight(sc.Text(), " \t\r")
		if !utf8.ValidString(raw) {
			// print(net) writes Python str, always valid UTF-8; module names must match the
			// state_dict's keys and survive WriteJSON, which would replace invalid bytes.
			return nil, fail(raw, "not valid UTF-8 text")
		}
		if strings.TrimSpace(raw) == "" {
			continue
		}
		if done {
			return nil, fail(raw, "text after the end of the top-level Sequential")
		}
		indent := len(raw) - len(strings.TrimLeft(raw, " "))
		text := raw[indent:]
		if !started {
			// First non-blank line: the root container.
			started = true
			if indent != 0 {
				return nil, fail(raw, "unexpected indentation")
			}
			switch text {
			case "Sequential(":
				stack = append(stack, "")
			case "Sequential()":
				done = true
			default:
				// print() of a single leaf module, e.g. "Linear(in_features=2, out_features=1,
				// bias=False)": its state_dict names have no prefix, so the module's name is "".
				if strings.HasSuffix(text, "(") || !strings.Contains(text, "(") {
					return nil, fail(raw, "the architecture must be a printed nn.Sequential or a single leaf module")
				}
				m, err := parseModuleCall("", text)
				if err != nil {
					return nil, fail(raw, "%v", err)
				}
				mods = append(mods, m)
				done = true
			}
			continue
		}
		if text == ")" {
			if indent != 2*(len(stack)-1) {
				return nil, fail(raw, "closing parenthesis at indentation %d, want %d", indent, 2*(len(stack)-1))
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				done = true
			}
			continue
		}
		if indent != 2*len(stack) {
			return nil, fail(raw, "indentation %d, want %d", indent, 2*len(stack))
		}
		if !strings.HasPrefix(text, "(") {
			return nil, fail(raw, "expected \"(name): Module(...)\"")
		}
		end := strings.Index(text, "): ")
		if end < 0 {
			return nil, fail(raw, "expected \"(name): Module(...)\"")
		}
		local := text[1:end]
		if local == "" || strings.ContainsAny(local, " .()") {
			return nil, fail(raw, "invalid module name %s", clip.Q(local))
		}
		name := stack[len(stack)-1] + local
		if seen[name] {
			return nil, fail(raw, "duplicate module name %s", clip.Q(name))
		}
		seen[name] = true
		body := text[end+3:]
		if name == GlobalInducingModule && strings.HasPrefix(body, "_GlobalInducingModule(") {
			// bayesianize's register_global_inducing_weights_ adds this module to the network;
			// it runs no layer (its forward is the identity), and the converter reads the global
			// inducing posterior from its state_dict tensors.
			continue
		}
		switch body {
		case "Sequential(":
			stack = append(stack, name+".")
			continue
		case "Sequential()":
			continue
		}
		if strings.HasSuffix(body, "(") {
			return nil, fail(raw, "unsupported container %s (only nested Sequential is supported)", clip.Q(strings.TrimSuffix(body, "(")))
		}
		if len(mods) >= MaxModules {
			return nil, fail(raw, "more than %d modules", MaxModules)
		}
		m, err := parseModuleCall(name, body)
		if err != nil {
			return nil, fail(raw, "%v", err)
		}
		mods = append(mods, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("torcharch: line %d: %w", lineNo+1, err)
	}
	if !done {
		if !started {
			return nil, fmt.Errorf("torcharch: empty architecture text")
		}
		return nil, fmt.Errorf("torcharch: line %d: unexpected end of text: %d unclosed Sequential", lineNo, len(stack))
	}
	if mods == nil {
		mods = []Module{}
	}
	return mods, nil
}

// GlobalInducingModule is the name of the module bayesianize's register_global_inducing_weights_
// adds to a network (paper 003 appendix H); a printed network's line for it is skipped.
const GlobalInducingModule = "_global_inducing_module"

// parseModuleCall parses "Type(args)".
func parseModuleCall(name, s string) (Module, error) {
	open := strings.IndexByte(s, '(')
	if open <= 0 || !strings.HasSuffix(s, ")") {
		return Module{}, fmt.Errorf("expected Type(arguments)")
	}
	typ := s[:open]
	if _, ok := specs[typ]; !ok {
		return Module{}, fmt.Errorf("unknown module type %s", clip.Q(typ))
	}
	args, err := splitArgs(s[open+1 : len(s)-1])
	if err != nil {
		return Module{}, err
	}
	var pos []value
	var kw []kwArg
	for _, a := range args {
		key, val, isKW := cutKeyword(a)
		v, err := parseValue(val)
		if err != nil {
			return Module{}, fmt.Errorf("argument %s: %w", clip.Q(a), err)
		}
		if isKW {
			kw = append(kw, kwArg{key, v})
		} else {
			if len(kw) > 0 {
				return Module{}, fmt.Errorf("positional argument %s after keyword arguments", clip.Q(a))
			}
			pos = append(pos, v)
		}
	}
	return build(name, typ, pos, kw, false)
}

// splitArgs splits at commas outside parentheses and quotes.
func splitArgs(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	var quote byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth < 0 {
				return nil, fmt.Errorf("unbalanced parentheses")
			}
		case c == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	if depth != 0 || quote != 0 {
		return nil, fmt.Errorf("unbalanced parentheses or quotes")
	}
	if last := strings.TrimSpace(s[start:]); last != "" || len(out) > 0 {
		out = append(out, last)
	}
	for _, a := range out {
		if a == "" {
			return nil, fmt.Errorf("empty argument")
		}
	}
	return out, nil
}

// cutKeyword splits "key=value" where the '=' is outside parentheses and
// quotes. Keys may contain spaces ("prior mean").
func cutKeyword(a string) (key, val string, ok bool) {
	for i := 0; i < len(a); i++ {
		switch a[i] {
		case '(', '\'', '"':
			return "", a, false
		case '=':
			return strings.TrimSpace(a[:i]), strings.TrimSpace(a[i+1:]), true
		}
	}
	return "", a, false
}

// parseValue parses a Python literal as printed by PyTorch reprs: ints,
// floats, True/False/None, quoted strings, bare words and tuples.
func parseValue(s string) (value, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return value{}, fmt.Errorf("empty value")
	}
	switch s {
	case "True":
		return boolV(true), nil
	case "False":
		return boolV(false), nil
	case "None":
		return noneV, nil
	}
	if s[0] == '(' {
		if s[len(s)-1] != ')' {
			return value{}, fmt.Errorf("malformed tuple %s", clip.Q(s))
		}
		inner := strings.TrimSpace(s[1 : len(s)-1])
		v := value{kind: vTuple, tup: []value{}}
		if inner == "" {
			return v, nil
		}
		trailing := strings.HasSuffix(inner, ",")
		parts, err := splitArgs(strings.TrimSuffix(inner, ","))
		if err != nil {
			return value{}, err
		}
		if len(parts) == 1 && !trailing {
			return parseValue(parts[0]) // parenthesised expression
		}
		for _, p := range parts {
			e, err := parseValue(p)
			if err != nil {
				return value{}, err
			}
			v.tup = append(v.tup, e)
		}
		return v, nil
	}
	if s[0] == '\'' || s[0] == '"' {
		if len(s) < 2 || s[len(s)-1] != s[0] {
			return value{}, fmt.Errorf("malformed string %s", clip.Q(s))
		}
		return strV(s[1 : len(s)-1]), nil
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intV(i), nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return floatV(f), nil
	}
	if isWord(s) {
		return strV(s), nil
	}
	return value{}, fmt.Errorf("cannot parse value %s", clip.Q(s))
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func sortStrings(s []string) { sort.Strings(s) }
