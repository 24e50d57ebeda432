// Package readlimit opens input files defensively: only regular files are read (a FIFO, a
// device such as /dev/zero — directly or through a symbolic link — or a directory is refused
// with an error instead of hanging or reading without end), and never more than a given number
// of bytes.
//
// Files are opened non-blocking where the platform has O_NONBLOCK, so opening a FIFO with no
// writer returns at once; the type check then uses fstat on the open descriptor, so the file
// checked is the file read.
package readlimit

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrNotRegular is wrapped by Open when path is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge is wrapped when a file exceeds the size limit.
var ErrTooLarge = errors.New("file too large")

// Open opens path for reading if it is a regular file of at most maxBytes bytes (maxBytes ≤ 0:
// no size limit). Errors are *os.PathError values naming path and wrap ErrNotRegular or
// ErrTooLarge when those are the reason. The caller should still read through Reader (the
// file may grow after the check).
func Open(path string, maxBytes int64) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|openFlags, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotRegular, DescribeMode(fi.Mode()))}
	}
	if maxBytes > 0 && fi.Size() > maxBytes {
		f.Close()
		return nil, &os.PathError{Op: "open", Path: path, Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, fi.Size(), maxBytes)}
	}
	return f, nil
}

// ReadFile reads the whole of path, a regular file of at most maxBytes bytes (see Open).
func ReadFile(path string, maxBytes int64) ([]byte, error) {
	f, err := Open(path, maxBytes)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(Reader(f, path, maxBytes))
}

// ParseFile reads path (see ReadFile) and returns what parse makes of its contents: the
// "read the file, then parse it" of the checkpoint, architecture and config readers. A read
// error (which names path) is prefixed with pkg, a parse error with path, so that either says
// which file; on error the result is T's zero value.
func ParseFile[T any](pkg, path string, maxBytes int64, parse func([]byte) (T, error)) (T, error) {
	var zero T
	b, err := ReadFile(path, maxBytes)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", pkg, err)
	}
	v, err := parse(b)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// Reader returns r limited to maxBytes bytes (maxBytes ≤ 0: r itself): reading past the limit
// fails with an *os.PathError naming name and wrapping ErrTooLarge, rather than stopping
// silently.
func Reader(r io.Reader, name string, maxBytes int64) io.Reader {
	if maxBytes <= 0 {
		return r
	}
	return &limited{r: r, name: name, left: maxBytes, max: maxBytes}
}

type limited struct {
	r         io.Reader
	name      string
	left, max int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.left <= 0 {
		// One byte more than allowed tells a file at the limit from a larger one.
		var b [1]byte
		n, err := l.r.Read(b[:])
		if n > 0 {
			return 0, &os.PathError{Op: "read", Path: l.name, Err: fmt.Errorf("%w: more than %d bytes", ErrTooLarge, l.max)}
		}
		return 0, err
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	return n, err
}

// DescribeMode names the kind of a file that is not a regular one, for error messages: "a
// directory", "a named pipe (FIFO)", "a symbolic link" (as Lstat reports it), ….
func DescribeMode(m os.FileMode) string {
	switch {
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m.IsDir():
		return "a directory"
	}
	return "a file of mode " + m.String()
}
