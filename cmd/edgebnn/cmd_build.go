//go:build !device

package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/edgebnn/edgebnn/boards"
	"github.com/edgebnn/edgebnn/internal/outfile"
)

// modulePath is the import path of the edgebnn module; build only runs
// inside a source tree of this module.
const modulePath = "github.com/edgebnn/edgebnn"

const buildUsage = `Usage: edgebnn build --board NAME -o FILE [--tags TAGS] [--purego] [--no-serve] [--host]

Cross-compiles a static edgebnn binary for a board: CGO_ENABLED=0, -trimpath,
and the board's GOOS/GOARCH/GOARM (see 'edgebnn boards'). The binary carries
what runs on a board — demo, predict, serve, bench, inspect, posterior,
boards, version — built with the device tag, without train, convert, eval,
calibrate, plan (the trainer, the converter, the plotting library and its
fonts) and build itself.
serve is built without the bundled HTTP/2 (tag nethttpomithttp2; it serves
plain HTTP/1.1). --no-serve leaves serve out too (tag noserve): net/http and
crypto/tls are most of what is left, and the lean binary is about half the
size. --host builds the full command set. It runs 'go build' in the edgebnn
module root, found with 'go env GOMOD' from the current directory, so run it
inside the edgebnn source tree with Go on PATH.`

// buildOptions are the parsed flags of the build command.
type buildOptions struct {
	board   boards.Profile
	out     string
	tags    []string
	strip   bool
	verbose bool
	// inputs are files the build reads besides the module (board profiles from --dir).
	inputs []string
}

func runBuild(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("build")
	board := fs.String("board", "", "target board `NAME` (required; see 'edgebnn boards')")
	out := fs.String("o", "", "write the binary to `FILE` (required)")
	tags := fs.String("tags", "", "comma-separated build `TAGS`")
	purego := fs.Bool("purego", false, "add the purego build tag (portable Go kernels, no assembly)")
	strip := fs.Bool("strip", true, "strip symbol tables (-ldflags=-s -w) for a smaller binary")
	dir := fs.String("dir", "", "also load user board profiles (*.json) from `DIR`")
	verbose := fs.Bool("v", false, "print the go command before running it")
	host := fs.Bool("host", false, "include the host commands (train, convert, eval, calibrate, plan, build) instead of the device build")
	noServe := fs.Bool("no-serve", false, "leave out serve and its HTTP stack: the lean board binary")
	if err := parseFlagsOnly(fs, buildUsage, args, stdout); err != nil {
		return err
	}
	if *board == "" {
		return usagef("missing --board NAME (see 'edgebnn boards')")
	}
	if *out == "" {
		return usagef("missing -o FILE")
	}
	p, err := lookupBoard(*dir, *board)
	if err != nil {
		return err
	}
	opts := buildOptions{board: p, out: *out, tags: splitTags(*tags), strip: *strip, verbose: *verbose}
	if *dir != "" {
		if opts.inputs, err = boards.ProfileFiles(*dir); err != nil {
			return fmt.Errorf("--dir: %w", err)
		}
	}
	if *purego {
		opts.tags = append(opts.tags, "purego")
	}
	if !*host {
		opts.tags = append(opts.tags, "device")
	}
	// Plain-HTTP serve never speaks HTTP/2 (only over TLS, or with Server.Protocols asking for
	// unencrypted HTTP/2, which serve does not set), so the bundled HTTP/2 is dead weight.
	if *noServe {
		opts.tags = append(opts.tags, "noserve")
	} else {
		opts.tags = append(opts.tags, "nethttpomithttp2")
	}
	return buildBinary(ctx, opts, stdout, stderr)
}

// splitTags splits a comma- or space-separated tag list.
func splitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// buildBinary runs go build for the options' board in the module root.
func buildBinary(ctx context.Context, o buildOptions, stdout, stderr io.Writer) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("the Go toolchain is needed to build and was not found on PATH: %w", err)
	}
	root, err := findModuleRoot(ctx, goBin, "")
	if err != nil {
		return err
	}
	final, err := filepath.Abs(o.out)
	if err != nil {
		return fmt.Errorf("resolving output path %q: %w", o.out, err)
	}
	if err := checkBuildOutput(final, root, o.inputs); err != nil {
		return err
	}
	st, err := outfile.Stage(ctx, final)
	if err != nil {
		return err
	}
	defer st.Discard()
	st.SetPerm(0o755)
	out := st.Path()
	args := []string{"build", "-trimpath"}
	if len(o.tags) > 0 {
		args = append(args, "-tags", strings.Join(o.tags, ","))
	}
	if o.strip {
		args = append(args, "-ldflags=-s -w")
	}
	args = append(args, "-o", out, "./cmd/edgebnn")
	env := append(os.Environ(), o.board.BuildEnv()...)
	if o.verbose {
		quoted := make([]string, len(args))
		for i, a := range args {
			quoted[i] = a
			if strings.ContainsAny(a, " \t'\"") {
				quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
			}
		}
		fmt.Fprintf(stderr, "cd %s && %s go %s\n", root, strings.Join(o.board.BuildEnv(), " "), strings.Join(quoted, " "))
	}
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = root
	cmd.Env = env
	cmd.Stdout = stderr
	cmd.Stderr = stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build for board %s (%s) failed: %w", o.board.Name, o.board.Platform(), err)
	}
	info, err := os.Stat(out)
	if err != nil {
		return fmt.Errorf("checking the built binary: %w", err)
	}
	if err := st.Commit(ctx); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "built %s for %s (%s, %s)\n", o.out, o.board.Name, o.board.Platform(), formatBytes(info.Size()))
	return nil
}

// checkBuildOutput refuses -o paths that are not new or regular files, or that are an input
// of the build: a board profile read from --dir, go.mod, go.sum, and inside the module any
// existing file but an earlier build's binary (Go sources, assembly, the board profiles and
// other files the binary embeds) and any new file the go command would read (by its extension).
func checkBuildOutput(out, root string, inputs []string) error {
	inputs = append(slices.Clone(inputs), filepath.Join(root, "go.mod"), filepath.Join(root, "go.sum"))
	if err := outfile.Check("-o", out, inputs...); err != nil {
		return err
	}
	// Compared with symbolic links resolved on both sides: a directory reached through a link
	// (or the checkout by another path) is inside the module all the same. outfile.Check has
	// refused a missing directory.
	dir, err := filepath.EvalSymlinks(filepath.Dir(out))
	if err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if dir, err = filepath.Abs(dir); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	rel, err := filepath.Rel(root, filepath.Join(dir, filepath.Base(out)))
	if err != nil || !filepath.IsLocal(rel) {
		return nil // outside the module
	}
	switch ext := filepath.Ext(out); ext {
	// the go command's source extensions (go/build), the embedded profiles and presets, and the
	// module files
	case ".go", ".c", ".cc", ".cpp", ".cxx", ".m", ".h", ".hh", ".hpp", ".hxx", ".f", ".F", ".for", ".f90",
		".s", ".S", ".sx", ".swig", ".swigcxx", ".syso", ".json", ".mod", ".sum", ".work":
		return fmt.Errorf("-o %s: %w: inside the module being built, a %s file is a build input", out, outfile.ErrUnsafe, ext)
	}
	if filepath.Base(out) == "go.work" {
		return fmt.Errorf("-o %s: %w: inside the module being built, go.work is a build input", out, outfile.ErrUnsafe)
	}
	if exe, err := isExecutable(out); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	} else if !exe {
		return fmt.Errorf("-o %s: %w: it is a file of the module being built (there -o may only replace an earlier build's binary)", out, outfile.ErrUnsafe)
	}
	return nil
}

// isExecutable reports whether the regular file at path is missing (a new output) or starts
// with an executable's magic number (ELF, Mach-O, PE): what `go build -o` leaves there.
func isExecutable(path string) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	var magic [4]byte
	if _, err := io.ReadFull(f, magic[:]); err != nil {
		return false, nil // shorter than any executable
	}
	switch string(magic[:]) {
	case "\x7fELF", "\xcf\xfa\xed\xfe", "\xce\xfa\xed\xfe":
		return true, nil
	}
	return string(magic[:2]) == "MZ", nil
}

// findModuleRoot asks the go command for the go.mod governing dir ("" is
// the current directory) and returns its directory, checking that it is
// the edgebnn module.
func findModuleRoot(ctx context.Context, goBin, dir string) (string, error) {
	cmd := exec.CommandContext(ctx, goBin, "env", "GOMOD")
	cmd.Dir = dir
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	outBytes, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("running 'go env GOMOD': %w: %s", err, strings.TrimSpace(errBuf.String()))
	}
	return moduleRoot(strings.TrimSpace(string(outBytes)))
}

// moduleRoot checks the go.mod path reported by 'go env GOMOD' and returns
// the module root directory.
func moduleRoot(gomod string) (string, error) {
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the edgebnn source tree ('go env GOMOD' found no go.mod); run it from a checkout of " + modulePath)
	}
	f, err := os.Open(gomod)
	if err != nil {
		return "", fmt.Errorf("reading the module file: %w", err)
	}
	defer f.Close()
	path, err := modulePathOf(f)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", gomod, err)
	}
	if path != modulePath {
		return "", fmt.Errorf("not inside the edgebnn source tree: %s declares module %q, not %q", gomod, path, modulePath)
	}
	return filepath.Dir(gomod), nil
}

// modulePathOf returns the path of the "module" directive of a go.mod file.
func modulePathOf(r io.Reader) (string, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if i := strings.Index(line, "//"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		rest, ok := strings.CutPrefix(line, "module")
		if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
			continue
		}
		path := strings.Trim(strings.TrimSpace(rest), "\"`")
		if path == "" {
			return "", errors.New("empty module directive")
		}
		return path, nil
	}
	if err := sc.Err(); err != nil {
		return "", err
	}
	return "", errors.New("no module directive")
}
