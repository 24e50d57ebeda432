package format

import (
	"errors"
	"fmt"
	"strings"
)

// Error categories. Every error returned by this package wraps exactly one of
// them (test with errors.Is) and is an *Error naming the file, section and
// field at fault.
var (
	// ErrMalformed: the file violates the layout rules of docs/FORMAT.md.
	ErrMalformed = errors.New("malformed container")
	// ErrChecksum: a CRC does not match or a padding byte is not zero.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrLimit: a size, count or dimension exceeds a documented limit.
	ErrLimit = errors.New("limit exceeded")
	// ErrBudget: the reader's allocation budget would be exceeded.
	ErrBudget = errors.New("allocation budget exceeded")
	// ErrVersion: the file has a major version this package does not implement.
	ErrVersion = errors.New("unsupported version")
	// ErrUnsupported: a section uses an encoding or compression from a newer
	// minor version.
	ErrUnsupported = errors.New("unsupported encoding")
	// ErrNotFound: no section has the requested name (or it has another kind).
	ErrNotFound = errors.New("not found")
	// ErrClosed: the File was closed.
	ErrClosed = errors.New("file closed")
	// ErrInvalid: a writer was given an invalid argument.
	ErrInvalid = errors.New("invalid argument")
	// ErrIO: reading, writing, syncing or mapping a file failed.
	ErrIO = errors.New("i/o error")
	// ErrSameFile: the writer was asked to replace one of its sources.
	ErrSameFile = errors.New("target is a source file")
)

// Error is the error type returned by this package. Its message has the form
//
//	format: model.ebnn: tensor "1.z_row": dim 1 = 4294967296 exceeds limit 268435456
type Error struct {
	File    string // path of the file, "" when decoding from memory
	Section string // e.g. `tensor "1.z_row"`, `blob "meta"`, `section #3`, "" for the header
	Msg     string // what is wrong, naming the field
	Kind    error  // one of the Err* categories
	Cause   error  // underlying error (I/O, zstd), may be nil
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("format: ")
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Section != "" {
		b.WriteString(e.Section)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns the category and the cause, for errors.Is and errors.As.
func (e *Error) Unwrap() []error {
	if e.Cause != nil {
		return []error{e.Kind, e.Cause}
	}
	return []error{e.Kind}
}

// sectionLabel names a section for error messages.
func sectionLabel(k Kind, name string, index int) string {
	if name == "" {
		return fmt.Sprintf("section #%d", index)
	}
	return fmt.Sprintf("%s %q", k, name)
}

func newErr(file, section string, kind error, cause error, format string, args ...any) *Error {
	return &Error{File: file, Section: section, Msg: fmt.Sprintf(format, args...), Kind: kind, Cause: cause}
}
