// Package outfile writes the output files of edgebnn's commands so that an
// output is either the complete new file or whatever was there before: never
// a half-written file, never a FIFO, device or symbolic link replaced by a
// regular file, and never one of the command's own inputs.
//
// Check vets an output path against the command's inputs before any work is
// done. Stage reserves a private staging directory beside the output (same
// file system, so the final rename is atomic); the file is written there,
// then Staged.Commit fsyncs it, renames it over the output and fsyncs the
// directory. Write does all of that for a function that streams the content.
//
// A Tracker, carried by a context (WithTracker), lets the command's caller
// remove every staging directory still in flight when it gives up on a
// command, for instance after SIGINT: Tracker.Abandon removes them and makes
// later commits fail, so nothing partial is left behind.
package outfile

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/edgebnn/edgebnn/internal/readlimit"
	"unicode/utf8"
)

// ErrUnsafe is wrapped by every error Check returns for an output path that
// must not be written (not a regular file, or one of the inputs).
var ErrUnsafe = errors.New("unsafe output path")

// ErrAbandoned is returned by Stage and Commit once the Tracker in their
// context has been abandoned.
var ErrAbandoned = errors.New("output abandoned (command interrupted)")

// Check reports whether path may be written as an output of a command that
// reads inputs. path must be non-empty; its directory must exist; if something
// exists there it must be a regular file (not a symbolic link, FIFO, device, socket or directory); and it
// must not be any of inputs, compared by cleaned absolute path and, for files
// that exist, with os.SameFile (which also catches symbolic and hard links).
// Empty inputs are ignored. Check never opens path, so a FIFO cannot block it; it
// creates and removes an empty directory beside it, to find a directory it
// cannot write in before the command's work.
// Its errors name what (the flag, e.g. "--out") and path, and wrap ErrUnsafe
// (or the file system's error).
func Check(what, path string, inputs ...string) error {
	if path == "" {
		return fmt.Errorf("%s: empty output path", what)
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil:
		if !st.Mode().IsRegular() {
			return fmt.Errorf("%s %s: %w: it is %s, not a regular file; refusing to replace it", what, path, ErrUnsafe, readlimit.DescribeMode(st.Mode()))
		}
	case errors.Is(err, fs.ErrNotExist):
		st = nil
	default:
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	if st == nil {
		dir := filepath.Dir(path)
		dst, err := os.Stat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s %s: directory %s does not exist", what, path, dir)
		case err != nil:
			return fmt.Errorf("%s %s: %w", what, path, err)
		case !dst.IsDir():
			return fmt.Errorf("%s %s: %s is not a directory", what, path, dir)
		}
	}
	// Writing stages the output in a directory beside it: try that now, so that a directory the
	// output cannot be written in (read-only, /proc) is an error before the work, not after.
	probe, err := os.MkdirTemp(filepath.Dir(path), ".edgebnn-check-*")
	if err != nil {
		return fmt.Errorf("%s %s: cannot write in %s: %w", what, path, filepath.Dir(path), err)
	}
	_ = os.Remove(probe)
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, path, err)
	}
	for _, in := range inputs {
		if in == "" {
			continue
		}
		if inAbs, err := filepath.Abs(in); err == nil && inAbs == abs {
			return fmt.Errorf("%s %s: %w: it is also an input (%s); refusing to write over an input", what, path, ErrUnsafe, in)
		}
		if st == nil {
			continue
		}
		if ist, err := os.Stat(in); err == nil && os.SameFile(st, ist) {
			return fmt.Errorf("%s %s: %w: it is the same file as the input %s; refusing to write over an input", what, path, ErrUnsafe, in)
		}
	}
	return nil
}

// Output names one optional output of a command: the flag that sets it and
// its path ("" when the flag was not given).
type Output struct {
	Flag, Path string
}

// CheckOutputs runs Check on every output with a non-empty path, in order,
// naming each as prefix+Flag (e.g. "fig3: -png"), and returns the first
// error. Commands call it before their work, so that an output that cannot
// be written is refused before the measurements, not after them.
func CheckOutputs(prefix string, outs ...Output) error {
	for _, o := range outs {
		if o.Path == "" {
			continue
		}
		if err := Check(prefix+o.Flag, o.Path); err != nil {
			return err
		}
	}
	return nil
}

// Tracker records the staging directories of a command's outputs that are in
// flight. It is safe for concurrent use; the zero value is ready.
type Tracker struct {
	mu        sync.Mutex
	dirs      map[string]bool
	watched   map[string]bool
	abandoned bool
}

type trackerKey struct{}

// WithTracker returns a context carrying t; Stage and Write register their
// staging directories with it.
func WithTracker(ctx context.Context, t *Tracker) context.Context {
	return context.WithValue(ctx, trackerKey{}, t)
}

// trackerFrom returns the context's Tracker, or nil.
func trackerFrom(ctx context.Context) *Tracker {
	if ctx == nil {
		return nil
	}
	t, _ := ctx.Value(trackerKey{}).(*Tracker)
	return t
}

// Abandon removes every staging directory in flight and makes later Stage and
// Commit calls under t fail with ErrAbandoned. Outputs already committed stay.
// It returns the errors of removals that failed.
func (t *Tracker) Abandon() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandoned = true
	var errs []error
	for d := range t.dirs {
		if err := removeAll(d); err != nil {
			errs = append(errs, err)
		}
		delete(t.dirs, d)
	}
	for d := range t.watched {
		// Staging directories of this process made without the tracker in their context.
		ms, _ := filepath.Glob(filepath.Join(d, ".*.tmp-"+strconv.Itoa(os.Getpid())+"-*"))
		for _, m := range ms {
			if err := removeAll(m); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// Watch makes the context's Tracker (if any) also remove, when abandoned, the
// staging directories this process creates in dir through Stage or Write
// called without the Tracker in their context (for instance by library code
// that takes no context).
func Watch(ctx context.Context, dir string) {
	t := trackerFrom(ctx)
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.watched == nil {
		t.watched = map[string]bool{}
	}
	t.watched[filepath.Clean(dir)] = true
}

// removeAll removes a staging directory, retrying when a writer still running
// creates a file in it between the listing and the removal.
func removeAll(dir string) error {
	var err error
	for range 5 {
		if err = os.RemoveAll(dir); err == nil {
			return nil
		}
	}
	return fmt.Errorf("removing staging directory %s: %w", dir, err)
}

// add registers dir; it fails once t is abandoned.
func (t *Tracker) add(dir string) error {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.abandoned {
		return ErrAbandoned
	}
	if t.dirs == nil {
		t.dirs = map[string]bool{}
	}
	t.dirs[dir] = true
	return nil
}

// forget unregisters dir.
func (t *Tracker) forget(dir string) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.dirs, dir)
}

// Staged is an output being written in a private staging directory beside
// its final path. Write the file at Path, then Commit or Discard.
type Staged struct {
	out  string // the final path
	dir  string // the staging directory
	tmp  string // dir/<base of out>
	perm fs.FileMode
	tr   *Tracker
}

// Stage creates a staging directory beside path (in the same directory, named
// .<base>.tmp-<pid>-*) and returns the Staged output. The directory of path
// must exist. The staging directory is registered with the context's Tracker,
// if any. Staging directories of the same output that a killed process left
// behind (its process gone, untouched for an hour) are removed first.
func Stage(ctx context.Context, path string) (*Staged, error) {
	if path == "" {
		return nil, errors.New("outfile: empty output path")
	}
	tr := trackerFrom(ctx)
	dir := filepath.Dir(path)
	base := filepath.Base(path)
	if st, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("output %s: directory %s: %w", path, dir, err)
	} else if !st.IsDir() {
		return nil, fmt.Errorf("output %s: %s is not a directory", path, dir)
	}
	// The staging directory's name carries at most 64 bytes of the output's (whole runes): with
	// all of a long name and the suffix it would pass the file system's 255-byte limit, and an
	// output the file system allows could not be written.
	stem := base
	if len(stem) > 64 {
		stem = stem[:64]
		for len(stem) > 0 && !utf8.ValidString(stem) {
			stem = stem[:len(stem)-1]
		}
	}
	removeStale(dir, stem, base)
	sd, err := os.MkdirTemp(dir, "."+stem+".tmp-"+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("output %s: creating a staging directory: %w", path, err)
	}
	if err := tr.add(sd); err != nil {
		_ = os.RemoveAll(sd)
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	return &Staged{out: path, dir: sd, tmp: filepath.Join(sd, base), perm: 0o644, tr: tr}, nil
}

// SetPerm sets the permission bits Commit gives the file (default 0644), e.g.
// 0755 for an executable; the process's umask then clears bits from them, as
// for a file os.OpenFile creates.
func (s *Staged) SetPerm(perm fs.FileMode) { s.perm = perm.Perm() }

// Path is where the content must be written before Commit: a file in the
// staging directory with the output's base name.
func (s *Staged) Path() string { return s.tmp }

// Out is the output's final path.
func (s *Staged) Out() string { return s.out }

// Discard removes the staging directory and whatever was written in it.
func (s *Staged) Discard() {
	_ = removeAll(s.dir)
	s.tr.forget(s.dir)
}

// Commit makes the staged file the output: it fsyncs the file, checks that
// the output is still absent or a regular file, renames the file over it,
// fsyncs the output's directory and removes the staging directory. On any
// error (also a cancelled ctx or an abandoned Tracker) the staged file is
// discarded and the output is left as it was.
func (s *Staged) Commit(ctx context.Context) (err error) {
	defer s.Discard()
	if ctx != nil {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("output %s not written: %w", s.out, err)
		}
	}
	f, err := os.OpenFile(s.tmp, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("output %s: staged file: %w", s.out, err)
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		return fmt.Errorf("output %s: staged file %s is not a regular file", s.out, s.tmp)
	}
	perm, err := grantedPerm(s.dir, filepath.Base(s.tmp), s.perm)
	if err != nil {
		f.Close()
		return fmt.Errorf("output %s: %w", s.out, err)
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return fmt.Errorf("output %s: chmod %s: %w", s.out, s.tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("output %s: fsync %s: %w", s.out, s.tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("output %s: close %s: %w", s.out, s.tmp, err)
	}
	if err := Check("output", s.out); err != nil {
		return err
	}
	if err := s.rename(); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(s.out)); err != nil {
		// The file is in place; only the durability of the rename is in doubt.
		return fmt.Errorf("output %s: fsync directory: %w", s.out, err)
	}
	return nil
}

// grantedPerm returns the permission bits a file created in dir with perm gets — perm less the
// process's umask — by creating one (dir is the private staging directory). Reading the umask
// instead would mean setting it (syscall.Umask), a race with every other goroutine's files.
// The probe is not named taken, the staged file's name.
func grantedPerm(dir, taken string, perm fs.FileMode) (fs.FileMode, error) {
	name := ".perm"
	if name == taken {
		name = ".perm~"
	}
	probe := filepath.Join(dir, name)
	f, err := os.OpenFile(probe, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return 0, fmt.Errorf("permission probe: %w", err)
	}
	st, err := f.Stat()
	f.Close()
	os.Remove(probe)
	if err != nil {
		return 0, fmt.Errorf("permission probe: %w", err)
	}
	return st.Mode().Perm(), nil
}

// rename moves the staged file to the output unless the Tracker was abandoned; the Tracker's
// lock makes the two exclusive.
func (s *Staged) rename() error {
	if s.tr != nil {
		s.tr.mu.Lock()
		defer s.tr.mu.Unlock()
		if s.tr.abandoned {
			return fmt.Errorf("output %s: %w", s.out, ErrAbandoned)
		}
	}
	if err := os.Rename(s.tmp, s.out); err != nil {
		return fmt.Errorf("output %s: rename: %w", s.out, err)
	}
	return nil
}

// Write writes path atomically with the content fn streams (buffered): staged
// beside path, fsynced, renamed over it, the directory fsynced. On any error
// (from fn, the file system, a cancelled ctx or an abandoned Tracker) path is
// left as it was and nothing else remains. It does not call Check.
func Write(ctx context.Context, path string, fn func(io.Writer) error) error {
	s, err := StageWrite(ctx, path, fn)
	if err != nil {
		return err
	}
	return s.Commit(ctx)
}

// StageWrite is Write without the Commit: it returns the staged output, written in full, for the
// caller to Commit (or Discard) — with the others of a set, once every one of them is written,
// so that a failure in any leaves all the outputs as they were.
func StageWrite(ctx context.Context, path string, fn func(io.Writer) error) (*Staged, error) {
	s, err := Stage(ctx, path)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(s.Path(), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		s.Discard()
		return nil, fmt.Errorf("output %s: %w", path, err)
	}
	bw := bufio.NewWriterSize(f, 1<<16)
	werr := fn(bw)
	if werr == nil {
		werr = bw.Flush()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		s.Discard()
		return nil, fmt.Errorf("writing %s: %w", path, werr)
	}
	return s, nil
}

// WriteBytes writes data to path atomically, as Write does.
func WriteBytes(ctx context.Context, path string, data []byte) error {
	return Write(ctx, path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
