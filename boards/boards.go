// Package boards describes the hardware edgebnn targets: one JSON profile
// per board (CPU, GOOS/GOARCH/GOARM, QEMU model used to test it, RAM, the
// memory budget a model and its predictor may use, SIMD features).
//
// The built-in profiles live in profiles/*.json and are embedded into the
// binary; users can add their own with LoadDir. Profiles are decoded
// strictly: unknown or duplicated fields, wrong types and inconsistent values
// are errors that name the file and the field, for example
//
//	boards: profiles/rpi4.json: field "goarm": must be 6 or 7 for goarch "arm"
//
// The QEMU test matrix of scripts/test.sh is derived from the profiles
// marked "test_target" (see TestTargets), so there is one list of boards.
package boards

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/edgebnn/edgebnn/internal/clip"
	"github.com/edgebnn/edgebnn/internal/readlimit"
	"github.com/edgebnn/edgebnn/internal/strictjson"
)

//go:embed profiles/*.json
var embedded embed.FS

// Profile is one board description, as stored in a profiles/*.json file.
type Profile struct {
	// Name is the short identifier used on the command line, e.g. "rpi4".
	Name string `json:"name"`
	// Description is one human-readable sentence: SoC, cores, memory.
	Description string `json:"description"`
	// GOOS is the Go operating system the board runs, e.g. "linux".
	GOOS string `json:"goos"`
	// GOARCH is the Go architecture: "amd64", "arm64" or "arm".
	GOARCH string `json:"goarch"`
	// GOARM is the ARM architecture version for GOARCH "arm" (6 or 7);
	// it must be absent (zero) for other architectures.
	GOARM int `json:"goarm,omitempty"`
	// QEMU is the user-mode emulator binary that runs this board's
	// binaries on an x86-64 host, e.g. "qemu-aarch64-static"; empty for
	// native (amd64) profiles.
	QEMU string `json:"qemu"`
	// QEMUCPU is the CPU model passed as "-cpu" to QEMU, e.g. "cortex-a72".
	QEMUCPU string `json:"qemu_cpu"`
	// RAMBytes is the board's total memory in bytes.
	RAMBytes int64 `json:"ram_bytes"`
	// BudgetBytes is how much memory a loaded model plus its predictor may
	// use on this board, in bytes (at most RAMBytes).
	BudgetBytes int64 `json:"budget_bytes"`
	// SIMD lists the vector features kernels may rely on.
	SIMD SIMD `json:"simd"`
	// TestTarget marks profiles whose (GOARCH, GOARM, QEMU, CPU) tuple is
	// part of the emulated test matrix of scripts/test.sh.
	TestTarget bool `json:"test_target"`
}

// SIMD lists the vector features of a board's CPU.
type SIMD struct {
	// NEON is ARM Advanced SIMD (always present on arm64, optional on ARMv7,
	// absent on ARMv6).
	NEON bool `json:"neon"`
	// FP16 is half-precision floating-point arithmetic (ARMv8.2-A FEAT_FP16,
	// e.g. Cortex-A76; not Cortex-A53/A72).
	FP16 bool `json:"fp16"`
	// DotProd is the ARMv8.2-A int8 dot-product extension (FEAT_DotProd).
	DotProd bool `json:"dotprod"`
}

// ProfileError reports a problem with one profile file. Field is the JSON
// field at fault (dotted for nested fields, e.g. "simd.neon"), or empty
// when the problem concerns the whole file.
type ProfileError struct {
	// File is the profile's file name as given to Parse, e.g. "profiles/rpi4.json".
	File string
	// Field is the JSON field at fault, or "".
	Field string
	// Msg describes the problem.
	Msg string
}

// Error formats the error as `boards: FILE: field "FIELD": MSG`.
func (e *ProfileError) Error() string {
	var b strings.Builder
	b.WriteString("boards: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Field != "" {
		fmt.Fprintf(&b, "field %q: ", e.Field)
	}
	b.WriteString(e.Msg)
	return b.String()
}

// knownFields lists every field a profile may contain, as dotted paths.
var knownFields = map[string]bool{
	"name": true, "description": true, "goos": true, "goarch": true,
	"goarm": true, "qemu": true, "qemu_cpu": true, "ram_bytes": true,
	"budget_bytes": true, "simd": true, "simd.neon": true, "simd.fp16": true,
	"simd.dotprod": true, "test_target": true,
}

// requiredFields must be present in every profile, in the order they are checked.
var requiredFields = []string{"name", "description", "goos", "goarch", "ram_bytes", "budget_bytes"}

// validName reports whether s matches ^[a-z0-9]+(-[a-z0-9]+)*$: lower-case letters and digits
// in groups separated by single dashes. (Written out: package regexp would add about 150 KB to
// the board binary.)
func validName(s string) bool {
	prev := byte('-') // a dash may not lead, follow a dash or end the name
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '-' && prev == '-' || c != '-' && !isLowerAlnum(c) {
			return false
		}
		prev = c
	}
	return prev != '-'
}

// validCPU reports whether s matches ^[a-z0-9][a-z0-9.-]*$ (a QEMU CPU model name).
func validCPU(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isLowerAlnum(c) && (i == 0 || c != '.' && c != '-') {
			return false
		}
	}
	return s != ""
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

// supportedGOOS are the operating systems a profile may name.
var supportedGOOS = []string{"linux", "darwin", "windows", "freebsd"}

// supportedGOARCH are the architectures a profile may name.
var supportedGOARCH = []string{"amd64", "arm64", "arm"}

// qemuBinaries maps GOARCH to the QEMU user-mode emulators that run it.
var qemuBinaries = map[string][]string{
	"arm64": {"qemu-aarch64-static", "qemu-aarch64"},
	"arm":   {"qemu-arm-static", "qemu-arm"},
}

const maxNameLen = 40

// Parse decodes and validates one profile. file names the profile in error
// messages (it is not opened).
func Parse(file string, data []byte) (Profile, error) {
	fields, err := scanFields(data)
	if err != nil {
		var pe *ProfileError
		if errors.As(err, &pe) {
			pe.File = file
			return Profile{}, pe
		}
		return Profile{}, &ProfileError{File: file, Msg: err.Error()}
	}
	for _, f := range fields {
		if !knownFields[f] {
			return Profile{}, &ProfileError{File: file, Field: f, Msg: "unknown field"}
		}
	}
	present := make(map[string]bool, len(fields))
	for _, f := range fields {
		present[f] = true
	}
	for _, f := range requiredFields {
		if !present[f] {
			return Profile{}, &ProfileError{File: file, Field: f, Msg: "required field is missing"}
		}
	}

	var p Profile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return Profile{}, &ProfileError{File: file, Field: te.Field,
				Msg: fmt.Sprintf("must be %s, got JSON %s", describeType(te.Type.Kind().String()), te.Value)}
		}
		return Profile{}, &ProfileError{File: file, Msg: fmt.Sprintf("decoding JSON: %v", err)}
	}
	if err := p.Validate(); err != nil {
		var pe *ProfileError
		if errors.As(err, &pe) {
			pe.File = file
			return Profile{}, pe
		}
		return Profile{}, &ProfileError{File: file, Msg: err.Error()}
	}
	return p, nil
}

// describeType turns a reflect kind name into words for error messages.
func describeType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "int", "int64", "int32":
		return "an integer"
	case "struct":
		return "an object"
	default:
		return "a " + kind
	}
}

// scanFields walks the JSON document, checks that it is a single object
// without duplicated keys, and returns every key as a dotted path in
// document order.
func scanFields(data []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, errors.New("profile must be a JSON object")
	}
	var fields []string
	if err := scanObject(dec, "", &fields, 1); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("unexpected data after the JSON object")
	}
	return fields, nil
}

// scanObject consumes the members of an object whose '{' was already read.
func scanObject(dec *json.Decoder, prefix string, fields *[]string, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("invalid profile at byte %d: nested deeper than %d levels", dec.InputOffset(), maxDepth)
	}
	seen := map[string]string{} // strictjson.Fold(key) → key
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
		}
		key, ok := tok.(string)
		if !ok {
			return fmt.Errorf("invalid JSON at byte %d: expected an object key", dec.InputOffset())
		}
		field := prefix + key
		// encoding/json matches names to fields ignoring case, keeping the last.
		if first, ok := seen[strictjson.Fold(key)]; ok {
			if first != key {
				return &ProfileError{Field: field, Msg: fmt.Sprintf("duplicated field (the same as %s: names are matched ignoring case)", clip.Q(first))}
			}
			return &ProfileError{Field: field, Msg: "duplicated field"}
		}
		seen[strictjson.Fold(key)] = key
		*fields = append(*fields, field)
		if err := scanValue(dec, field+".", fields, depth); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // closing '}'
		return fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
	}
	return nil
}

// maxDepth bounds the nesting of objects and arrays in a profile (a profile needs 2).
const maxDepth = 16

// scanValue consumes one value; nested objects contribute prefixed keys.
func scanValue(dec *json.Decoder, prefix string, fields *[]string, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		return scanObject(dec, prefix, fields, depth+1)
	case '[':
		if depth+1 > maxDepth {
			return fmt.Errorf("invalid profile at byte %d: nested deeper than %d levels", dec.InputOffset(), maxDepth)
		}
		for dec.More() {
			if err := scanValue(dec, prefix, fields, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("invalid JSON at byte %d: %w", dec.InputOffset(), err)
		}
	}
	return nil
}

// Validate checks the profile's values for consistency. The returned error
// is a *ProfileError naming the field (with an empty File).
func (p Profile) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ProfileError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.Name == "":
		return bad("name", "must not be empty")
	case len(p.Name) > maxNameLen:
		return bad("name", "must be at most %d characters", maxNameLen)
	case !validName(p.Name):
		return bad("name", "%q must be lower-case letters and digits separated by single dashes", p.Name)
	}
	if strings.TrimSpace(p.Description) == "" {
		return bad("description", "must not be empty")
	}
	if i := strings.IndexFunc(p.Description, unicode.IsControl); i >= 0 {
		// printed as is by `boards -v`: a line break, tab or escape sequence would break the
		// table or reach the terminal
		r, _ := utf8.DecodeRuneInString(p.Description[i:])
		return bad("description", "contains the control character %U at byte %d (one line of text)", r, i)
	}
	if !slices.Contains(supportedGOOS, p.GOOS) {
		return bad("goos", "%q is not supported (want one of %s)", p.GOOS, strings.Join(supportedGOOS, ", "))
	}
	if !slices.Contains(supportedGOARCH, p.GOARCH) {
		return bad("goarch", "%q is not supported (want one of %s)", p.GOARCH, strings.Join(supportedGOARCH, ", "))
	}
	if p.GOARCH == "arm" {
		if p.GOARM != 6 && p.GOARM != 7 {
			return bad("goarm", "must be 6 or 7 for goarch \"arm\"")
		}
	} else if p.GOARM != 0 {
		return bad("goarm", "only allowed with goarch \"arm\", not %q", p.GOARCH)
	}
	if err := p.validateQEMU(); err != nil {
		return err
	}
	switch {
	case p.RAMBytes <= 0:
		return bad("ram_bytes", "must be positive, got %d", p.RAMBytes)
	case p.BudgetBytes <= 0:
		return bad("budget_bytes", "must be positive, got %d", p.BudgetBytes)
	case p.BudgetBytes > p.RAMBytes:
		return bad("budget_bytes", "%d exceeds ram_bytes %d", p.BudgetBytes, p.RAMBytes)
	}
	return p.validateSIMD()
}

// validateQEMU checks the emulator fields and the test-target flag.
func (p Profile) validateQEMU() error {
	bad := func(field, format string, args ...any) error {
		return &ProfileError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	allowed := qemuBinaries[p.GOARCH]
	if len(allowed) == 0 {
		if p.QEMU != "" {
			return bad("qemu", "must be empty for goarch %q (runs natively)", p.GOARCH)
		}
		if p.QEMUCPU != "" {
			return bad("qemu_cpu", "must be empty for goarch %q (runs natively)", p.GOARCH)
		}
		if p.TestTarget {
			return bad("test_target", "only emulated profiles can be test targets; native %q is covered by the host test run", p.GOARCH)
		}
		return nil
	}
	if !slices.Contains(allowed, p.QEMU) {
		return bad("qemu", "%q cannot run goarch %q (want one of %s)", p.QEMU, p.GOARCH, strings.Join(allowed, ", "))
	}
	if p.GOOS != "linux" {
		return bad("goos", "must be \"linux\" for an emulated profile (QEMU user mode runs Linux binaries)")
	}
	if !validCPU(p.QEMUCPU) {
		return bad("qemu_cpu", "%q is not a QEMU CPU model name (e.g. \"cortex-a53\")", p.QEMUCPU)
	}
	return nil
}

// validateSIMD checks that the vector features fit the architecture.
func (p Profile) validateSIMD() error {
	bad := func(field, format string, args ...any) error {
		return &ProfileError{Field: field, Msg: fmt.Sprintf(format, args...)}
	}
	switch {
	case p.GOARCH == "arm64" && !p.SIMD.NEON:
		return bad("simd.neon", "must be true for arm64 (every ARMv8-A core has Advanced SIMD)")
	case p.GOARCH == "arm" && p.GOARM == 6 && p.SIMD.NEON:
		return bad("simd.neon", "must be false for GOARM 6 (ARMv6 has no NEON)")
	case p.GOARCH != "arm" && p.GOARCH != "arm64" && p.SIMD.NEON:
		return bad("simd.neon", "NEON is an ARM feature, not available on %q", p.GOARCH)
	case p.GOARCH != "arm64" && p.SIMD.FP16:
		return bad("simd.fp16", "FP16 arithmetic is an ARMv8.2-A arm64 feature, not available on %q", p.GOARCH)
	case p.GOARCH != "arm64" && p.SIMD.DotProd:
		return bad("simd.dotprod", "dot product is an ARMv8.2-A arm64 feature, not available on %q", p.GOARCH)
	}
	return nil
}

// Embedded returns the built-in profiles, sorted by name: what LoadFS(embedded, "profiles")
// returns, read without fs.Glob and fs.ReadDir, whose pattern matching and generic sort of
// directory entries would otherwise be linked into every board binary for this one listing.
// The go:embed pattern admits only profiles/*.json, and an embed.FS lists a directory sorted.
func Embedded() ([]Profile, error) {
	entries, err := embedded.ReadDir("profiles")
	if err != nil {
		return nil, fmt.Errorf("boards: listing profiles: %w", err)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("boards: profiles: no *.json profiles")
	}
	files := make([]namedData, 0, len(entries))
	for _, e := range entries {
		name := "profiles/" + e.Name()
		data, err := embedded.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("boards: reading profile: %w", err)
		}
		files = append(files, namedData{name, data})
	}
	return parseAll(files)
}

// Default limits of LoadDir.
const (
	// DefaultMaxFileBytes is the default Limits.MaxFileBytes: 64 KiB, some hundred times a
	// profile's size.
	DefaultMaxFileBytes = 64 << 10
	// DefaultMaxProfiles is the default Limits.MaxProfiles.
	DefaultMaxProfiles = 1024
)

// Limits bound what LoadDirLimits reads from a user directory. A zero field takes its default.
type Limits struct {
	// MaxFileBytes is the largest profile file read (default DefaultMaxFileBytes).
	MaxFileBytes int64
	// MaxProfiles is the most *.json files the directory may hold (default DefaultMaxProfiles).
	MaxProfiles int
}

func (l Limits) withDefaults() Limits {
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxProfiles <= 0 {
		l.MaxProfiles = DefaultMaxProfiles
	}
	return l
}

// LoadDir loads every *.json profile in dir (user profiles), sorted by
// name, with the default Limits. Errors name the file as dir/NAME.json.
func LoadDir(dir string) ([]Profile, error) {
	return LoadDirLimits(dir, Limits{})
}

// LoadDirLimits is LoadDir with explicit limits. Only regular files are read
// (a *.json entry that is a FIFO, a device, a directory or a symbolic link to
// one of those is an error naming it, and opening it does not block), each
// of at most lim.MaxFileBytes bytes; a directory with more than
// lim.MaxProfiles *.json entries is an error.
func LoadDirLimits(dir string, lim Limits) ([]Profile, error) {
	lim = lim.withDefaults()
	names, err := profileFiles(dir, lim)
	if err != nil {
		return nil, err
	}
	var files []namedData
	for _, name := range names {
		data, err := readlimit.ReadFile(name, lim.MaxFileBytes)
		if err != nil {
			return nil, fmt.Errorf("boards: reading profile: %w", err)
		}
		files = append(files, namedData{name, data})
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("boards: %s: no *.json profiles", dir)
	}
	return parseAll(files)
}

// ProfileFiles returns the paths of the *.json entries of dir that LoadDir reads, sorted by
// name, so that a command writing a file can check that it would not replace one. dir is a
// path, not a pattern: "[", "*" and "?" in it are its own characters.
func ProfileFiles(dir string) ([]string, error) {
	return profileFiles(dir, Limits{}.withDefaults())
}

func profileFiles(dir string, lim Limits) ([]string, error) {
	// Stat before opening: opening a FIFO would wait for a writer.
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("boards: reading profile directory: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("boards: reading profile directory: %s is not a directory", dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("boards: reading profile directory: %w", err)
	}
	defer d.Close()
	var names []string
	for {
		entries, err := d.ReadDir(256)
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			if len(names) == lim.MaxProfiles {
				return nil, fmt.Errorf("boards: %s: more than %d *.json profiles", dir, lim.MaxProfiles)
			}
			names = append(names, filepath.Join(dir, e.Name()))
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("boards: reading profile directory: %w", err)
		}
	}
	slices.Sort(names)
	return names, nil
}

// LoadFS loads every *.json profile in directory dir of fsys, sorted by
// name. Errors name the file as dir/NAME.json.
func LoadFS(fsys fs.FS, dir string) ([]Profile, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("boards: listing %s: %w", dir, err)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("boards: %s: no *.json profiles", dir)
	}
	files := make([]namedData, 0, len(names))
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("boards: reading profile: %w", err)
		}
		files = append(files, namedData{name, data})
	}
	return parseAll(files)
}

type namedData struct {
	name string
	data []byte
}

// parseAll parses the files in order, rejects duplicate names and sorts
// the result by name.
func parseAll(files []namedData) ([]Profile, error) {
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	seen := make(map[string]string, len(files))
	out := make([]Profile, 0, len(files))
	for _, f := range files {
		p, err := Parse(f.name, f.data)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[p.Name]; dup {
			return nil, &ProfileError{File: f.name, Field: "name",
				Msg: fmt.Sprintf("duplicate name %q (also in %s)", p.Name, prev)}
		}
		seen[p.Name] = f.name
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Overlay returns base with the profiles of over added; a profile in over
// replaces the base profile of the same name. The result is sorted by name.
func Overlay(base, over []Profile) []Profile {
	byName := make(map[string]Profile, len(base)+len(over))
	for _, p := range base {
		byName[p.Name] = p
	}
	for _, p := range over {
		byName[p.Name] = p
	}
	out := make([]Profile, 0, len(byName))
	for _, p := range byName {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Lookup returns the profile called name.
func Lookup(profiles []Profile, name string) (Profile, bool) {
	for _, p := range profiles {
		if p.Name == name {
			return p, true
		}
	}
	return Profile{}, false
}

// Names returns the profile names in order.
func Names(profiles []Profile) []string {
	out := make([]string, len(profiles))
	for i, p := range profiles {
		out[i] = p.Name
	}
	return out
}

// Platform returns the target as "GOOS/GOARCH", with "/vN" appended for
// GOARCH "arm" (e.g. "linux/arm/v6").
func (p Profile) Platform() string {
	s := p.GOOS + "/" + p.GOARCH
	if p.GOARCH == "arm" {
		s += "/v" + strconv.Itoa(p.GOARM)
	}
	return s
}

// Emulated reports whether the profile's binaries run under QEMU on the host.
func (p Profile) Emulated() bool { return p.QEMU != "" }

// BuildEnv returns the environment variables that make `go build` produce
// a static binary for the board: CGO_ENABLED=0, GOOS, GOARCH and GOARM
// (empty for non-arm targets, so an inherited GOARM cannot leak in).
func (p Profile) BuildEnv() []string {
	goarm := ""
	if p.GOARCH == "arm" {
		goarm = strconv.Itoa(p.GOARM)
	}
	return []string{"CGO_ENABLED=0", "GOOS=" + p.GOOS, "GOARCH=" + p.GOARCH, "GOARM=" + goarm}
}

// QEMUCommand returns the emulator command line prefix, e.g.
// ["qemu-aarch64-static", "-cpu", "cortex-a72"], or nil for native profiles.
func (p Profile) QEMUCommand() []string {
	if !p.Emulated() {
		return nil
	}
	return []string{p.QEMU, "-cpu", p.QEMUCPU}
}

// TestTarget is one distinct emulated test configuration.
type TestTarget struct {
	// Name identifies the target in scripts/test.sh output and in
	// EDGEBNN_TARGETS, e.g. "arm64-a53", "armv7", "armv6".
	Name string
	// GOARCH and GOARM select the cross-compilation (GOARM is 0 unless GOARCH is "arm").
	GOARCH string
	GOARM  int
	// QEMU and CPU are the emulator binary and its -cpu model.
	QEMU string
	CPU  string
	// Boards lists the profiles that share this configuration.
	Boards []string
}

// Line formats the target as the space-separated record read by
// scripts/test.sh: NAME GOARCH GOARM QEMU CPU, with GOARM "-" when unset.
func (t TestTarget) Line() string {
	goarm := "-"
	if t.GOARM != 0 {
		goarm = strconv.Itoa(t.GOARM)
	}
	return strings.Join([]string{t.Name, t.GOARCH, goarm, t.QEMU, t.CPU}, " ")
}

// TestTargets returns one target per distinct (GOARCH, GOARM, QEMU, CPU)
// among the profiles marked test_target, 64-bit first, then by descending
// GOARM and CPU name.
func TestTargets(profiles []Profile) []TestTarget {
	type key struct {
		goarch string
		goarm  int
		qemu   string
		cpu    string
	}
	index := map[key]int{}
	var out []TestTarget
	for _, p := range profiles {
		if !p.TestTarget || !p.Emulated() {
			continue
		}
		k := key{p.GOARCH, p.GOARM, p.QEMU, p.QEMUCPU}
		if i, ok := index[k]; ok {
			out[i].Boards = append(out[i].Boards, p.Name)
			continue
		}
		index[k] = len(out)
		out = append(out, TestTarget{GOARCH: p.GOARCH, GOARM: p.GOARM, QEMU: p.QEMU, CPU: p.QEMUCPU, Boards: []string{p.Name}})
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.GOARCH != b.GOARCH {
			return a.GOARCH == "arm64" || (b.GOARCH != "arm64" && a.GOARCH < b.GOARCH)
		}
		if a.GOARM != b.GOARM {
			return a.GOARM > b.GOARM
		}
		if a.CPU != b.CPU {
			return a.CPU < b.CPU
		}
		return a.QEMU < b.QEMU
	})
	nameTargets(out)
	return out
}

// nameTargets assigns unique names: "arm64-<cpu>" for arm64 and "armvN" for
// arm, adding the CPU and then a counter when names would collide.
func nameTargets(ts []TestTarget) {
	short := func(cpu string) string { return strings.TrimPrefix(cpu, "cortex-") }
	for i := range ts {
		if ts[i].GOARCH == "arm" {
			ts[i].Name = "armv" + strconv.Itoa(ts[i].GOARM)
		} else {
			ts[i].Name = ts[i].GOARCH + "-" + short(ts[i].CPU)
		}
	}
	count := map[string]int{}
	for _, t := range ts {
		count[t.Name]++
	}
	for i := range ts {
		if count[ts[i].Name] > 1 && ts[i].GOARCH == "arm" {
			ts[i].Name += "-" + short(ts[i].CPU)
		}
	}
	used := map[string]int{}
	for i := range ts {
		used[ts[i].Name]++
		if n := used[ts[i].Name]; n > 1 {
			ts[i].Name += "-" + strconv.Itoa(n)
		}
	}
}
